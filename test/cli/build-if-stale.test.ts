// `npm start` builds only when dist/ is older than its sources (scripts/build-if-stale.mjs). Here
// on a small project folder whose `npm run build` counts its runs and writes what a build writes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';

const SCRIPT = resolve('scripts/build-if-stale.mjs');
let dir: string;

const BUILD = `import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
appendFileSync('builds', 'x');
if (process.env.FAIL_BUILD) process.exit(3);
mkdirSync('dist', { recursive: true });
mkdirSync('packages/client/dist', { recursive: true });
writeFileSync('dist/cli.js', '');
writeFileSync('packages/client/dist/index.js', '');
`;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-build-stamp-'));
  await mkdir(join(dir, 'src', 'http'), { recursive: true });
  await mkdir(join(dir, 'packages', 'client', 'src'), { recursive: true });
  await writeFile(join(dir, 'src', 'cli.ts'), 'export {};\n');
  await writeFile(join(dir, 'src', 'http', 'errors.ts'), 'export {};\n');
  await writeFile(join(dir, 'packages', 'client', 'src', 'index.ts'), 'export {};\n');
  await writeFile(join(dir, 'build.mjs'), BUILD);
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'fixture', private: true, scripts: { build: 'node build.mjs' } }),
  );
});
after(() => rm(dir, { recursive: true, force: true }));

function start(env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, [SCRIPT], {
    cwd: dir,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return { code: run.status, stderr: run.stderr };
}

const builds = async () => (await readFile(join(dir, 'builds'), 'utf8')).length;
/** A change now: later than the start of any build so far. */
const touch = (path: string) => utimes(join(dir, path), new Date(), new Date());

test('builds when there is no build, then not again while nothing changed', async () => {
  const first = start();
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stderr, /Building \(dist\/cli\.js is missing\)/);
  assert.equal(await builds(), 1);
  const again = start();
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stderr, '', 'nothing to say');
  assert.equal(await builds(), 1, 'no second build');
});

test('a changed source, a changed dependency lock, a deleted file: built again', async () => {
  await touch('src/http/errors.ts');
  assert.match(start().stderr, /Building \(src changed since the last build\)/);
  assert.equal(await builds(), 2);
  assert.equal(start().stderr, '');

  await writeFile(join(dir, 'package-lock.json'), '{}');
  assert.match(start().stderr, /package-lock\.json changed/);
  assert.equal(await builds(), 3);

  // A deleted file leaves no file to be newer: its folder is.
  await rm(join(dir, 'packages', 'client', 'src', 'index.ts'));
  assert.match(start().stderr, /packages\/client\/src changed/);
  assert.equal(await builds(), 4);
  assert.equal(start().stderr, '');
});

test('a failed build fails the start, and the next start builds again', async () => {
  await touch('src/cli.ts');
  const failed = start({ FAIL_BUILD: '1' });
  assert.notEqual(failed.code, 0);
  assert.equal(await builds(), 5);
  const next = start();
  assert.equal(next.code, 0, next.stderr);
  assert.match(next.stderr, /Building/);
  assert.equal(await builds(), 6);
});

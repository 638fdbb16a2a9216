// Runs the suite on the embedded database with rate limits in memory, then, when
// TEST_DATABASE_URL and TEST_REDIS_URL are set, once more on PostgreSQL and Redis.
//
// Every file keeps a database of its own. On PGlite each file starts from one migrated data
// directory (test/support/pglite-template.ts), made here once and again only when a migration or
// PGlite changed: an initdb per file would cost each one seconds.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compiledPath, compileTree } from './test-compile.mjs';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));

// Stack traces name the TypeScript lines. PGlite's WebAssembly stays in V8's baseline compiler
// (Liftoff): a test process is too short-lived to win back what optimising its hot functions in
// background threads costs, which was about a third of the suite's CPU.
const NODE_OPTIONS = ['--enable-source-maps', '--liftoff-only'];

function collect(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

function run(args, options = {}) {
  const result = spawnSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit', ...options });
  if (result.status !== 0) process.exit(result.status ?? 1);
  return result;
}

const only = process.argv.slice(2);
const files = only.length
  ? only
  : [...collect('src'), ...collect('test'), ...collect('packages/client/test')].sort();

const tree = compileTree();
const template = run([...NODE_OPTIONS, compiledPath(tree, 'test/support/pglite-template.ts')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const [templateFile, emptyFile] = template.stdout.toString().trim().split('\n');

// PGlite runs inside each test process: the run is CPU-bound, one file per core. On PostgreSQL a
// file mostly waits for the server and Redis, so more files overlap.
const runs = [
  {
    name: 'embedded PGlite, in-memory limits',
    env: {
      TEST_DATABASE_URL: '',
      TEST_REDIS_URL: '',
      SVC_TEST_PGLITE_TEMPLATE: templateFile,
      SVC_TEST_PGLITE_EMPTY: emptyFile,
    },
    concurrency: 2,
  },
];
if (process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL) {
  runs.push({ name: 'PostgreSQL and Redis', env: {}, concurrency: 4 });
}

let failed = false;
for (const suite of runs) {
  console.log(`\n# suite on ${suite.name} (node ${process.version})`);
  const started = performance.now();
  const result = spawnSync(
    process.execPath,
    [
      ...NODE_OPTIONS,
      '--test',
      `--test-concurrency=${suite.concurrency}`,
      '--test-reporter=spec',
      ...files.map((file) => compiledPath(tree, file)),
    ],
    { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...suite.env } },
  );
  console.log(`# ${suite.name}: ${Math.round((performance.now() - started) / 1000)} s`);
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);

// Runs the suite on the embedded database with rate limits in memory, then, when
// TEST_DATABASE_URL and TEST_REDIS_URL are set, once more on PostgreSQL and Redis.
//
// What makes it fast, each file keeping a database of its own:
// - every file on PGlite starts from one migrated data directory (test/support/pglite-template.ts),
//   made here once, and again only when a migration or PGlite changed;
// - the files run as JavaScript compiled once by tsc into node_modules/.cache/svc-test/js (source
//   maps on, so failures point at the .ts lines): a TypeScript loader in every test process would
//   cost each file about a second of start-up, most of it resolving the modules of typebox.
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const OUT = join(ROOT, 'node_modules', '.cache', 'svc-test', 'js');

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
const files = only.length ? only : [...collect('src'), ...collect('test')].sort();

// Compiled without type checking (npm test has just checked the types); what is not TypeScript
// (migrations, fixtures) is copied beside it, so paths relative to a module still resolve.
rmSync(OUT, { recursive: true, force: true });
run([
  join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
  ...['-p', 'tsconfig.check.json', '--noEmit', 'false', '--noCheck', '--sourceMap', '--outDir', OUT],
]);
for (const dir of ['src', 'test']) {
  cpSync(join(ROOT, dir), join(OUT, dir), {
    recursive: true,
    filter: (source) => statSync(source).isDirectory() || !source.endsWith('.ts'),
  });
}
const compiled = files.map((f) => join(OUT, relative(ROOT, resolve(f))).replace(/\.ts$/, '.js'));

const template = run(['--import', 'tsx', 'test/support/pglite-template.ts'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const templateFile = template.stdout.toString().trim();

// PGlite runs inside each test process: the run is CPU-bound, one file per core. On PostgreSQL a
// file mostly waits for the server and Redis, so more files overlap.
const runs = [
  {
    name: 'embedded PGlite, in-memory limits',
    env: { TEST_DATABASE_URL: '', TEST_REDIS_URL: '', SVC_TEST_PGLITE_TEMPLATE: templateFile },
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
      '--enable-source-maps',
      '--test',
      `--test-concurrency=${suite.concurrency}`,
      '--test-reporter=spec',
      ...compiled,
    ],
    { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...suite.env } },
  );
  console.log(`# ${suite.name}: ${Math.round((performance.now() - started) / 1000)} s`);
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);

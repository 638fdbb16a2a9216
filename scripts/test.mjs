// Runs the suite on the embedded database with rate limits in memory, then, when
// TEST_DATABASE_URL and TEST_REDIS_URL are set, once more on PostgreSQL and Redis.
//
// Every file keeps a process and a database of its own. On PGlite each file starts from one
// migrated data directory (test/support/pglite-template.ts), made here once and again only when a
// migration or PGlite changed: an initdb per file would cost each one seconds. Tests of a first
// start on an empty database load a dump of a bare initdb, made the same way.
//
// The run is CPU-bound on two cores, and most of a small file's CPU was its process starting, so:
// - the files run from JavaScript bundles (scripts/test-compile.mjs), on node without a loader;
// - PGlite's WebAssembly stays in V8's baseline compiler (--liftoff-only, below);
// - the files start longest first, by the times of the last run (scripts/test-run.mjs).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compiledPath, compileTree } from './test-compile.mjs';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const CACHE = join(ROOT, 'node_modules', '.cache', 'svc-test');

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

// The files that start the built service (bin/svc.js, `npm start`) find dist/ current: built here
// once, not by each of them (tsc costs 8 to 17 s of CPU) and again on the second database.
if (files.some((file) => /test\/cli\/(five-minutes|signals)\.test\.ts$/.test(file))) {
  run(['scripts/build-if-stale.mjs']);
}

const tree = await compileTree(files);
const templates = pathToFileURL(compiledPath(tree, 'test/support/pglite-template.ts')).href;
const template = run(
  [...NODE_OPTIONS, '-e', `import(${JSON.stringify(templates)}).then((m) => m.printPgliteTemplates())`],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
const [templateFile, emptyFile] = template.stdout.toString().trim().split('\n');

// PGlite runs inside each test process: the run is CPU-bound, but a third of the files spend
// much of their time waiting (retry schedules, time-outs, the svc processes they start), so three
// files share the two cores. On PostgreSQL a file mostly waits for the server and Redis, so more
// files overlap.
const runs = [
  {
    name: 'embedded PGlite, in-memory limits',
    env: {
      TEST_DATABASE_URL: '',
      TEST_REDIS_URL: '',
      SVC_TEST_PGLITE_TEMPLATE: templateFile,
      SVC_TEST_PGLITE_EMPTY: emptyFile,
      SVC_TEST_CLI: compiledPath(tree, 'src/cli.ts'),
    },
    concurrency: 3,
  },
];
if (process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL) {
  runs.push({
    name: 'PostgreSQL and Redis',
    env: { SVC_TEST_CLI: compiledPath(tree, 'src/cli.ts') },
    concurrency: 4,
  });
}

/** Milliseconds each file took in the last run on `name`, by source path. */
function lastTimings(name) {
  try {
    return JSON.parse(readFileSync(timingsFile(name), 'utf8'));
  } catch {
    return {};
  }
}
const timingsFile = (name) => join(CACHE, `timings-${name.replace(/\W+/g, '-')}.json`);

let failed = false;
/** The times of the pass before, for a pass never timed here (a fresh clone's second database). */
let previous = {};
for (const suite of runs) {
  console.log(`\n# suite on ${suite.name} (node ${process.version})`);
  const started = performance.now();
  // Longest first (a file never timed counts as longest), so that the lanes end together.
  const before = lastTimings(suite.name);
  const known = Object.keys(before).length > 0 ? before : previous;
  const ordered = [...files].sort((a, b) => (known[b] ?? 1e9) - (known[a] ?? 1e9));
  const measured = join(CACHE, `timings.${process.pid}.json`);
  const result = spawnSync(
    process.execPath,
    [
      ...NODE_OPTIONS,
      join(ROOT, 'scripts', 'test-run.mjs'),
      measured,
      String(suite.concurrency),
      ...ordered.map((file) => compiledPath(tree, file)),
    ],
    { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...suite.env } },
  );
  // This run's times, over the last run's for files not run this time.
  try {
    const now = JSON.parse(readFileSync(measured, 'utf8'));
    for (const [file, ms] of Object.entries(now)) before[relative(tree, file).replace(/\.js$/, '.ts')] = ms;
    writeFileSync(timingsFile(suite.name), `${JSON.stringify(before, null, 1)}\n`);
    previous = before;
  } catch {}
  rmSync(measured, { force: true });
  console.log(`# ${suite.name}: ${Math.round((performance.now() - started) / 1000)} s`);
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);

// Runs the suite on the embedded database with rate limits in memory, then, when
// TEST_DATABASE_URL and TEST_REDIS_URL are set, once more on PostgreSQL and Redis.
//
// Every file keeps a database of its own. On PGlite each file starts from one migrated data
// directory (test/support/pglite-template.ts), made here once and again only when a migration or
// PGlite changed: an initdb per file would cost each one seconds. Tests of a first start on an
// empty database load a dump of a bare initdb, made the same way.
//
// The run is CPU-bound on two cores, and most of a small file's CPU was its process starting
// (node, the modules, PGlite's WebAssembly: about 0.6 s of the 1.0 to 1.25 s a file cost before its
// first test), so:
// - the files share processes: one per lane, running one file after the other, each in a suite
//   of its own, the longest left first by the times of the last run (scripts/test-group.mjs). A
//   file that asserts on the whole process (its timers, its memory, its event loop's delay) keeps a
//   process of its own: it says so on a line starting `// A process of its own:`;
// - the files run from JavaScript bundles (scripts/test-compile.mjs), on node without a loader;
// - PGlite's WebAssembly stays in V8's baseline compiler (--liftoff-only, below).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
  ? only.map((file) => relative(ROOT, resolve(file)))
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

const OWN_PROCESS = /^\/\/ A process of its own:/m;

/**
 * SVC_TEST_SHUFFLE=<seed>: the files in an order drawn from the seed instead of longest first, to
 * find a file that passes only after (or before) another in its process; the same seed, the same
 * order.
 */
const SHUFFLE = process.env.SVC_TEST_SHUFFLE;
function shuffled(list, seed) {
  const out = [...list];
  let state = seed >>> 0;
  for (let i = out.length - 1; i > 0; i--) {
    state = (Math.imul(state ^ (state >>> 15), 2246822507) + 0x9e3779b9) >>> 0;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/**
 * The test processes of a pass (scripts/test-group.mjs says what each runs), written under `dir`:
 * the files that ask for a process of their own, longest first, then `lanes` processes that share
 * the other files, each taking the longest left when it is free. A file never timed counts as
 * longest.
 */
function processes(dir, lanes, times) {
  const ms = (file) => times[file] ?? Number.MAX_SAFE_INTEGER;
  const entry = (file) => JSON.stringify([file, pathToFileURL(compiledPath(tree, file)).href]);
  const runner = JSON.stringify(pathToFileURL(join(ROOT, 'scripts', 'test-group.mjs')).href);
  const queue = join(dir, 'queue');
  mkdirSync(queue, { recursive: true });
  const order = SHUFFLE ? shuffled(files, Number(SHUFFLE)) : [...files].sort((a, b) => ms(b) - ms(a));
  const own = [];
  for (const [i, file] of order.entries()) {
    if (OWN_PROCESS.test(readFileSync(join(ROOT, file), 'utf8'))) own.push(file);
    else writeFileSync(join(queue, String(i).padStart(5, '0')), entry(file));
  }
  const modules = [
    ...own.map((file) => `await describeFile(...${entry(file)});`),
    ...Array.from({ length: lanes }, () => `await takeFiles(${JSON.stringify(queue)});`),
  ];
  return modules.map((code, i) => {
    const path = join(dir, `process-${i + 1}.mjs`);
    writeFileSync(path, `import { describeFile, takeFiles } from ${runner};\n${code}\n`);
    return path;
  });
}

let failed = false;
/** The times of the pass before, for a pass never timed here (a fresh clone's second database). */
let previous = {};
for (const suite of runs) {
  console.log(`\n# suite on ${suite.name} (node ${process.version})`);
  if (SHUFFLE) console.log(`# files in the order of SVC_TEST_SHUFFLE=${SHUFFLE}`);
  const started = performance.now();
  const before = lastTimings(suite.name);
  const known = Object.keys(before).length > 0 ? before : previous;
  const dir = join(CACHE, `run-${process.pid}`);
  const entries = processes(dir, suite.concurrency, known);
  const measured = join(dir, 'timings.json');
  const result = spawnSync(
    process.execPath,
    [...NODE_OPTIONS, join(ROOT, 'scripts', 'test-run.mjs'), measured, String(suite.concurrency), ...entries],
    { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...suite.env } },
  );
  // This run's times, over the last run's for files not run this time.
  try {
    Object.assign(before, JSON.parse(readFileSync(measured, 'utf8')));
    writeFileSync(timingsFile(suite.name), `${JSON.stringify(before, null, 1)}\n`);
    previous = before;
  } catch {}
  rmSync(dir, { recursive: true, force: true });
  console.log(`# ${suite.name}: ${Math.round((performance.now() - started) / 1000)} s`);
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);

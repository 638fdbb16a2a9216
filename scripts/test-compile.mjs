// The repository as plain JavaScript for the suite, so its processes run on node alone: under
// `--import tsx` every module load of every test process (and of every `svc` it starts) goes
// through a loader thread and its cache, about a second of CPU a file before any test runs.
//
// Made once per run by scripts/test.mjs, in node_modules/.cache/svc-test/js-<hash of the sources>/:
// a folder that mirrors the repository, where each directory holding TypeScript is a real directory
// with each `x.ts` compiled to `x.js` (esbuild, as tsx does; inline source maps point back at
// x.ts) and every other entry, `x.ts` included, a symbolic link to the original. Code that reads
// files beside itself (migrations, fixtures, openapi/openapi.json, the sources src/architecture
// reads, package.json) finds them as in the repository. The same sources name the same folder, so
// a second run starts at once and a run already going keeps its own tree.
//
//   node scripts/test-compile.mjs    prints the folder
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const CACHE = join(ROOT, 'node_modules', '.cache', 'svc-test');
const PREFIX = 'js-';
/** Bumped when the layout of the tree changes for the same sources. */
const LAYOUT = 'layout 2';
/** Not linked at the top: the tree lives in node_modules, which node finds by walking up. */
const SKIP = new Set(['node_modules', '.git']);
/** Linked whole wherever they are below the top (a workspace's own dependencies). */
const OPAQUE = new Set(['node_modules']);
/** Written to by tests next to themselves: made in the repository first so the link has a target. */
const OUTPUTS = ['test/artifacts'];

// esbuild as tsx itself loads it, so it is the same compiler the single-file command uses.
const esbuild = createRequire(createRequire(join(ROOT, 'package.json')).resolve('tsx/package.json'))(
  'esbuild',
);

const isTs = (name) => name.endsWith('.ts') && !name.endsWith('.d.ts');

/** Every directory below `dir` that holds TypeScript, and the TypeScript files, as relative paths. */
function scan(dir, rel, out) {
  let holdsTs = false;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!rel && SKIP.has(entry.name)) continue;
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory() && !OPAQUE.has(entry.name)) {
      if (scan(join(dir, entry.name), path, out)) holdsTs = true;
    } else if (isTs(entry.name)) {
      out.sources.push(path);
      holdsTs = true;
    }
    out.entries.push(path);
  }
  if (holdsTs) out.dirs.add(rel);
  return holdsTs;
}

function build(target, tree) {
  const partial = `${target}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8'));
  esbuild.buildSync({
    absWorkingDir: ROOT,
    entryPoints: tree.sources,
    outdir: partial,
    outbase: ROOT,
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node.split('.')[0]}`,
    sourcemap: 'inline',
    sourcesContent: false,
    tsconfigRaw: { compilerOptions: tsconfig.compilerOptions },
    logLevel: 'error',
  });
  // Every entry whose directory is mirrored and which is not itself mirrored: a link.
  for (const path of tree.entries) {
    if (tree.dirs.has(path) || !tree.dirs.has(dirname(path) === '.' ? '' : dirname(path))) continue;
    mkdirSync(join(partial, dirname(path)), { recursive: true });
    symlinkSync(join(ROOT, path), join(partial, path));
  }
  renameSync(partial, target);
}

export function compileTree() {
  for (const output of OUTPUTS) mkdirSync(join(ROOT, output), { recursive: true });
  const tree = { sources: [], entries: [], dirs: new Set() };
  scan(ROOT, '', tree);
  tree.entries.sort();
  tree.sources.sort();
  const hash = createHash('sha256').update(`${LAYOUT}\n${esbuild.version}\n${process.versions.node}\n`);
  hash.update(tree.entries.join('\n'));
  for (const source of tree.sources) hash.update(`\n${source}\n`).update(readFileSync(join(ROOT, source)));
  const target = join(CACHE, `${PREFIX}${hash.digest('hex').slice(0, 16)}`);
  if (!statSync(target, { throwIfNoEntry: false })) {
    mkdirSync(CACHE, { recursive: true });
    try {
      build(target, tree);
    } catch (error) {
      // Another run made the same tree meanwhile.
      if (!statSync(target, { throwIfNoEntry: false })) throw error;
    }
    prune(target);
  }
  return target;
}

/** Trees of earlier sources: all but the three newest go (a run still going uses its own). */
function prune(keep) {
  const trees = readdirSync(CACHE)
    .filter((name) => name.startsWith(PREFIX) && !name.endsWith('.partial'))
    .map((name) => join(CACHE, name))
    .filter((path) => path !== keep)
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  for (const path of trees.slice(2)) rmSync(path, { recursive: true, force: true });
}

/** The compiled file of a source path (relative to the repository or absolute). */
export function compiledPath(tree, source) {
  return join(tree, relative(ROOT, resolve(ROOT, source)).replace(/\.ts$/, '.js'));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const started = performance.now();
  const tree = compileTree();
  process.stderr.write(`# compiled tree ${tree} (${Math.round(performance.now() - started)} ms)\n`);
  process.stdout.write(tree);
}

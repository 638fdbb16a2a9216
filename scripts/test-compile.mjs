// The suite as plain JavaScript bundles, so its processes run on node alone. Under `--import tsx`
// every module load of every test process (and of every `svc` it starts) goes through a loader
// thread and its cache; and even compiled file by file, a test process resolves, reads and
// wraps ~450 modules (fastify, ajv, pino, prom-client, pg...) before its first test. Together
// about 1.5 s of CPU a process, which is most of what a small test file costs.
//
// Made by scripts/test.mjs with esbuild (the compiler tsx uses), in
// node_modules/.cache/svc-test/bundle-<hash of the sources and the lockfile>/: one entry per test
// file, plus src/cli.ts (the `svc` the tests start) and test/support/pglite-template.ts, with the
// code they share split into common chunks, so each module is still evaluated once a process.
// - `import.meta.url` in the repository's own sources is replaced by the URL of the source file,
//   so whatever they read beside themselves (migrations, fixtures, openapi/openapi.json, the
//   sources src/architecture.test.ts reads) is read from the repository, as under tsx.
// - Packages that find their own files at run time stay outside the bundles and load from
//   node_modules as usual (EXTERNAL). Dynamic require() of the bundled CommonJS goes through a
//   require made for the bundle (BANNER). __dirname stays undefined in the bundles, so a bundled
//   package that needs it fails loudly rather than reading the wrong folder.
// - Linked source maps: with --enable-source-maps, stack traces name the TypeScript lines.
// The same sources name the same folder: a second run starts at once, a run going keeps its own.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const CACHE = join(ROOT, 'node_modules', '.cache', 'svc-test');
const PREFIX = 'bundle-';
/** Where the TypeScript lives (node_modules and build output excluded). */
const SOURCES = ['src', 'test', 'packages/client/src', 'packages/client/test', 'packages/client/scripts'];
/**
 * Modules a thread runs (new Worker(import.meta.url)): in them `import.meta.url` is their bundle's,
 * so the thread starts from the bundle, not from the TypeScript.
 */
const THREAD_ENTRIES = ['src/delivery-thread.ts'];
/** Entries besides the test files. */
export const EXTRA_ENTRIES = ['src/cli.ts', 'test/support/pglite-template.ts', ...THREAD_ENTRIES];
const EXTERNAL = [
  '@electric-sql/pglite', // its WebAssembly and data files, by import.meta.url
  'ioredis', // __dirname in its error stacks
  'playwright-core', // its own files and drivers
  'openapi-typescript',
  'typescript',
];
const BANNER =
  "import { createRequire as __svcCreateRequire } from 'node:module';\n" +
  'const require = __svcCreateRequire(import.meta.url);';

// esbuild as tsx itself loads it: the compiler the single-file command uses.
const esbuild = createRequire(createRequire(join(ROOT, 'package.json')).resolve('tsx/package.json'))(
  'esbuild',
);

function typescript(dir, out = []) {
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory() && entry.name !== 'node_modules') typescript(path, out);
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/**
 * Replaces `import.meta.url` in the repository's own TypeScript by the source's own URL (by the
 * URL of its bundle in `target` for THREAD_ENTRIES).
 */
const sourceUrls = (target) => ({
  name: 'source-urls',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const text = readFileSync(args.path, 'utf8');
      const thread = THREAD_ENTRIES.includes(relative(ROOT, args.path));
      const url = JSON.stringify(pathToFileURL(thread ? compiledPath(target, args.path) : args.path).href);
      return { contents: text.replace(/\bimport\.meta\.url\b/g, url), loader: 'ts' };
    });
  },
});

/**
 * Leaves the EXTERNAL packages out of the bundles. One that only a workspace has
 * (packages/client/node_modules) is named by its absolute path: node would not find it by walking
 * up from the bundles' folder.
 */
const externals = {
  name: 'externals',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === 'resolving') return undefined;
      if (!EXTERNAL.some((name) => args.path === name || args.path.startsWith(`${name}/`))) return undefined;
      if (!args.resolveDir.includes('/packages/')) return { path: args.path, external: true };
      const found = await build.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        pluginData: 'resolving',
      });
      if (found.errors.length) return { path: args.path, external: true };
      const shared = found.path.startsWith(join(ROOT, 'node_modules'));
      return { path: shared ? args.path : found.path, external: true };
    });
  },
};

function build(target, entries) {
  const partial = `${target}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8'));
  return esbuild
    .build({
      absWorkingDir: ROOT,
      entryPoints: entries,
      outdir: partial,
      outbase: ROOT,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: `node${process.versions.node.split('.')[0]}`,
      banner: { js: BANNER },
      sourcemap: 'linked',
      sourcesContent: false,
      tsconfigRaw: { compilerOptions: tsconfig.compilerOptions },
      plugins: [sourceUrls(target), externals],
      logLevel: 'error',
    })
    .then(() => renameSync(partial, target));
}

/** Bundles `entries` (paths relative to the repository) unless the same sources were bundled. */
export async function compileTree(entries) {
  const all = [...new Set([...entries, ...EXTRA_ENTRIES])].sort();
  const hash = createHash('sha256').update(`${esbuild.version}\n${process.versions.node}\n`);
  hash.update(readFileSync(fileURLToPath(import.meta.url))); // how they are made
  hash.update(`${all.join('\n')}\n`).update(readFileSync(join(ROOT, 'package-lock.json')));
  for (const source of SOURCES.flatMap((dir) => typescript(dir)).sort()) {
    hash.update(`\n${source}\n`).update(readFileSync(join(ROOT, source)));
  }
  const target = join(CACHE, `${PREFIX}${hash.digest('hex').slice(0, 16)}`);
  if (!statSync(target, { throwIfNoEntry: false })) {
    mkdirSync(CACHE, { recursive: true });
    try {
      await build(target, all);
    } catch (error) {
      // Another run made the same bundles meanwhile.
      if (!statSync(target, { throwIfNoEntry: false })) throw error;
    }
    prune(target);
  }
  return target;
}

/** Bundles of earlier sources: all but the two newest go (a run still going uses its own). */
function prune(keep) {
  const old = readdirSync(CACHE)
    .filter((name) => name.startsWith(PREFIX) && !name.endsWith('.partial'))
    .map((name) => join(CACHE, name))
    .filter((path) => path !== keep)
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  for (const path of old.slice(2)) rmSync(path, { recursive: true, force: true });
}

/** The bundle of a source path (relative to the repository or absolute). */
export function compiledPath(tree, source) {
  return join(tree, relative(ROOT, resolve(ROOT, source)).replace(/\.ts$/, '.js'));
}

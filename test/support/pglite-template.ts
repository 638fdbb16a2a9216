// The migrated embedded database every test file starts from. Starting PGlite empty runs initdb
// inside WebAssembly (seconds per file); starting it from a dumped data directory skips that, and
// the migrations are then already applied. The dump is made once and kept under
// node_modules/.cache, named by a hash of the migration files and the PGlite version: a new or
// changed migration names another file, which is then made again. Each file still gets a database
// of its own, loaded from the dump into memory.
//
//   node --import tsx test/support/pglite-template.ts    (scripts/test.mjs runs it before the suite)
import { createHash } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import type { Db, Queryable } from '../../src/db/db.js';
import { migrate } from '../../src/db/migrate.js';

const MIGRATIONS = fileURLToPath(new URL('../../src/db/migrations/', import.meta.url));
// The package PGlite is loaded from, and the cache of the node_modules holding it.
const PGLITE = /^(.*\/node_modules\/)@electric-sql\/pglite\//.exec(
  createRequire(import.meta.url).resolve('@electric-sql/pglite'),
);
if (!PGLITE?.[1]) throw new Error('@electric-sql/pglite is not installed under node_modules');
const CACHE = join(PGLITE[1], '.cache', 'svc-test');
const PREFIX = 'pglite-';
/** Bumped when build() makes a different dump from the same migrations. */
const BUILD = 'build 2: without template databases';

async function templateKey(): Promise<string> {
  const hash = createHash('sha256');
  const pkg = JSON.parse(await readFile(`${PGLITE?.[0]}package.json`, 'utf8'));
  hash.update(`pglite ${pkg.version}\n${BUILD}\n`);
  // migrate() writes schema_migrations itself: a change there changes the template too.
  hash.update(await readFile(fileURLToPath(new URL('../../src/db/migrate.ts', import.meta.url))));
  for (const name of (await readdir(MIGRATIONS)).filter((f) => f.endsWith('.sql')).sort()) {
    hash.update(`\n${name}\n`);
    hash.update(await readFile(join(MIGRATIONS, name)));
  }
  return hash.digest('hex').slice(0, 16);
}

/** Only what migrate() uses, over a bare PGlite (the Db of src/db cannot dump its data directory). */
function asDb(lite: PGlite): Db {
  const on = (q: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query<T>(sql: string, params?: readonly unknown[]) {
      return (await q.query<T>(sql, params as unknown[])).rows;
    },
    async exec(sql: string) {
      await q.exec(sql);
    },
  });
  return {
    kind: 'pglite',
    ...on(lite),
    tx: (fn) => lite.transaction((t) => fn(on(t))),
    listen: () => Promise.reject(new Error('the template database takes no listeners')),
    close: () => lite.close(),
  };
}

async function build(file: string): Promise<void> {
  const lite = new PGlite();
  await lite.waitReady;
  await migrate(asDb(lite));
  // The suite uses the database `postgres` only: without the two template databases (never
  // created from in tests) the dump holds a third of the files, and each file loads it ~30% faster.
  await lite.exec(`UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')`);
  for (const statement of ['DROP DATABASE template0', 'DROP DATABASE template1', 'CHECKPOINT']) {
    await lite.exec(statement);
  }
  const dump = await lite.dumpDataDir('none');
  await lite.close();
  await mkdir(CACHE, { recursive: true });
  // Written aside and renamed: a file running at the same time sees the whole dump or none.
  const partial = `${file}.${process.pid}.partial`;
  await writeFile(partial, new Uint8Array(await dump.arrayBuffer()));
  await rename(partial, file);
  for (const name of await readdir(CACHE)) {
    if (name.startsWith(PREFIX) && join(CACHE, name) !== file && !name.endsWith('.partial')) {
      await rm(join(CACHE, name), { force: true });
    }
  }
}

/** The path of the dump for the current migrations, made first when missing. */
export async function ensurePgliteTemplate(): Promise<string> {
  const file = join(CACHE, `${PREFIX}${await templateKey()}.tar`);
  if (!(await stat(file).catch(() => null))) await build(file);
  return file;
}

/** Set by scripts/test.mjs for the files it runs: the dump it made for them. */
export const TEMPLATE_ENV = 'SVC_TEST_PGLITE_TEMPLATE';

/** The dump as a Blob for PGlite's loadDataDir (read lazily from disk). */
export async function pgliteTemplate(): Promise<Blob> {
  return openAsBlob(process.env[TEMPLATE_ENV] || (await ensurePgliteTemplate()));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // Prints the path alone on stdout, for scripts/test.mjs.
  const started = performance.now();
  const file = await ensurePgliteTemplate();
  process.stderr.write(`# PGlite template ${file} (${Math.round(performance.now() - started)} ms)\n`);
  process.stdout.write(file);
}

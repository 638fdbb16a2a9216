// The embedded databases every test file starts from. Starting PGlite empty runs initdb inside
// WebAssembly (seconds of CPU per file); starting it from a dumped data directory skips that. Two
// dumps, made once and kept under node_modules/.cache, named by a hash of the migration files and
// the PGlite version (a new or changed migration names other files, which are then made again):
//
// - migrated: initdb, then every migration applied. Each test file gets a database of its own,
//   loaded from it into memory (context.ts).
// - empty: initdb and nothing else, byte for byte what a first start finds. For tests of what
//   happens on a fresh database (migrations, `svc serve` in a new folder), in memory or unpacked
//   into a data directory (unpackPgliteEmpty).
//
//   node --import tsx test/support/pglite-template.ts    (scripts/test.mjs makes them before the suite)
import { createHash } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
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
const BUILD =
  'build 5: without template databases, 16 MB of shared buffers, the log cut, from the empty dump';

async function templateKey(): Promise<string> {
  const hash = createHash('sha256');
  const pkg = JSON.parse(await readFile(`${PGLITE?.[0]}package.json`, 'utf8'));
  hash.update(`pglite ${pkg.version}\n${BUILD}\n`);
  // migrate() writes schema_migrations itself: a change there changes the template too.
  hash.update(await readFile(fileURLToPath(new URL('../../src/db/migrate.ts', import.meta.url))));
  hash.update(await readFile(fileURLToPath(new URL('../../src/db/engine.sql', import.meta.url))));
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
    withPlansKept: () => {
      throw new Error('the template database runs migrations only');
    },
    close: () => lite.close(),
  };
}

async function save(lite: PGlite, file: string, edit = (tar: Uint8Array) => tar): Promise<void> {
  const dump = await lite.dumpDataDir('none');
  await mkdir(CACHE, { recursive: true });
  // Written aside and renamed: a file running at the same time sees the whole dump or none.
  const partial = `${file}.${process.pid}.partial`;
  await writeFile(partial, edit(new Uint8Array(await dump.arrayBuffer())));
  await rename(partial, file);
}

interface TarEntry {
  name: string;
  mode: number;
  type: string;
  /** The 512-byte header and the body, as they stand in the archive. */
  header: Uint8Array;
  body: Uint8Array;
}

/** The entries of a ustar archive (what dumpDataDir writes: folders and plain files). */
function* tarEntries(tar: Uint8Array): Generator<TarEntry> {
  const field = (at: number, length: number) =>
    Buffer.from(tar.subarray(at, at + length))
      .toString('latin1')
      .replace(/\0.*$/s, '');
  for (let at = 0; at + 512 <= tar.length && tar[at] !== 0; ) {
    const prefix = field(at + 345, 155);
    const size = Number.parseInt(field(at + 124, 12), 8) || 0;
    yield {
      name: (prefix ? `${prefix}/` : '') + field(at, 100),
      mode: Number.parseInt(field(at + 100, 8), 8) & 0o777,
      type: field(at + 156, 1) || '0',
      header: tar.subarray(at, at + 512),
      body: tar.subarray(at + 512, at + 512 + size),
    };
    at += 512 + Math.ceil(size / 512) * 512;
  }
}

/**
 * The dump without the write-ahead log a start does not read: only the segment `segment` (the
 * current one, holding the last checkpoint) is kept, and of it the first `bytes`. A segment is
 * 16 MB of which a fresh checkpoint fills a page; PostgreSQL reads the log up to where it ends, and
 * a short file ends it as zeros would. The migrated dump goes from 26.6 to 9.8 MB, and each test
 * file's PGlite starts in ~0.4 s less CPU.
 */
function cutWal(segment: string, bytes: number) {
  return (tar: Uint8Array): Uint8Array => {
    const parts: Uint8Array[] = [];
    for (const entry of tarEntries(tar)) {
      let { header, body } = entry;
      if (/(^|\/)pg_wal\/[0-9A-F]{24}$/.test(entry.name)) {
        if (!entry.name.endsWith(`/pg_wal/${segment}`)) continue;
        body = body.subarray(0, bytes);
        header = header.slice();
        header.set(Buffer.from(`${body.length.toString(8).padStart(11, '0')}\0`, 'latin1'), 124);
        header.fill(0x20, 148, 156);
        const sum = header.reduce((total, byte) => total + byte, 0);
        header.set(Buffer.from(`${sum.toString(8).padStart(6, '0')}\0 `, 'latin1'), 148);
      }
      parts.push(header, body, new Uint8Array((512 - (body.length % 512)) % 512));
    }
    parts.push(new Uint8Array(1024));
    return Buffer.concat(parts);
  };
}

async function buildEmpty(file: string): Promise<void> {
  const lite = new PGlite();
  await lite.waitReady;
  await lite.exec('CHECKPOINT');
  await save(lite, file);
  await lite.close();
}

async function buildMigrated(file: string, empty: string): Promise<void> {
  const lite = new PGlite({ loadDataDir: await openAsBlob(empty) });
  await lite.waitReady;
  await migrate(asDb(lite));
  // The suite uses the database `postgres` only: without the two template databases (never
  // created from in tests) the dump holds a third of the files, and each file loads it ~30% faster.
  await lite.exec(`UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')`);
  // PGlite's 160 MB of shared buffers cost each file ~0.3 s of CPU to set up; a test file's
  // database fits in a tenth of that (its data files stay in memory either way).
  await lite.exec(`ALTER SYSTEM SET shared_buffers = '16MB'`);
  // Then a new log segment and a checkpoint in it: what came before is not read again (cutWal).
  for (const statement of [
    'DROP DATABASE template0',
    'DROP DATABASE template1',
    'SELECT pg_switch_wal()',
    'CHECKPOINT',
  ]) {
    await lite.exec(statement);
  }
  const [at] = (
    await lite.query<{ segment: string; offset: number }>(
      `SELECT file_name AS segment, file_offset AS offset
       FROM pg_walfile_name_offset(pg_current_wal_insert_lsn())`,
    )
  ).rows;
  if (!at) throw new Error('no write-ahead log position');
  await save(lite, file, cutWal(at.segment, Math.ceil((at.offset + 1) / 8192) * 8192));
  await lite.close();
}

export interface PgliteTemplates {
  migrated: string;
  empty: string;
}

/** The paths of both dumps for the current migrations, made first when missing. */
export async function ensurePgliteTemplates(): Promise<PgliteTemplates> {
  const key = await templateKey();
  const empty = join(CACHE, `${PREFIX}empty-${key}.tar`);
  const migrated = join(CACHE, `${PREFIX}${key}.tar`);
  const missing = async (file: string) => !(await stat(file).catch(() => null));
  if (await missing(empty)) await buildEmpty(empty);
  if (await missing(migrated)) await buildMigrated(migrated, empty);
  for (const name of await readdir(CACHE)) {
    const path = join(CACHE, name);
    if (name.startsWith(PREFIX) && path !== empty && path !== migrated && !name.endsWith('.partial')) {
      await rm(path, { force: true });
    }
  }
  return { migrated, empty };
}

/** Set by scripts/test.mjs for the files it runs: the dumps it made for them. */
export const TEMPLATE_ENV = 'SVC_TEST_PGLITE_TEMPLATE';
export const EMPTY_ENV = 'SVC_TEST_PGLITE_EMPTY';

/** The migrated dump as a Blob for PGlite's loadDataDir (read lazily from disk). */
export async function pgliteTemplate(): Promise<Blob> {
  return openAsBlob(process.env[TEMPLATE_ENV] || (await ensurePgliteTemplates()).migrated);
}

/** The empty dump (initdb alone) as a Blob for PGlite's loadDataDir. */
export async function pgliteEmpty(): Promise<Blob> {
  return openAsBlob(await emptyFile());
}

async function emptyFile(): Promise<string> {
  return process.env[EMPTY_ENV] || (await ensurePgliteTemplates()).empty;
}

/**
 * Unpacks the empty dump as the data directory `dir` (which must not exist yet): what a first
 * `svc serve` would leave after its initdb, for tests whose subject is not initdb itself.
 */
export async function unpackPgliteEmpty(dir: string): Promise<void> {
  await unpack(await emptyFile(), dir);
}

async function unpack(file: string, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (const { name, mode, type, body } of tarEntries(await readFile(file))) {
    const path = join(dir, name.replace(/^\/+/, ''));
    if (!path.startsWith(`${dir}/`)) throw new Error(`a path outside the data directory: ${name}`);
    if (type === '5') {
      await mkdir(path, { recursive: true, mode });
    } else if (type === '0') {
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      await writeFile(path, body, { mode });
      await chmod(path, mode);
    } else {
      throw new Error(`an entry of type ${type} in the dump: ${name}`);
    }
  }
}

/**
 * SVC_DATA_DIR for a `svc serve` whose first start is not what a test is about: its embedded
 * database (src/runtime.ts keeps it in `pglite/`) already through initdb, as a first start would
 * leave it before migrating. A first start itself is test/cli/serve.happy and five-minutes.
 */
export async function dataDirAfterInitdb(dataDir: string): Promise<string> {
  await unpackPgliteEmpty(join(dataDir, 'pglite'));
  return dataDir;
}

/**
 * SVC_DATA_DIR for a `svc serve` whose migrations are not what a test is about either: the
 * migrated dump every test file starts from, as a start of this build would find it after an
 * earlier one (on PGlite, migrating an empty database costs a start about a second of CPU).
 */
export async function dataDirMigrated(dataDir: string): Promise<string> {
  await unpack(
    process.env[TEMPLATE_ENV] || (await ensurePgliteTemplates()).migrated,
    join(dataDir, 'pglite'),
  );
  return dataDir;
}

/** Prints the two paths on stdout, migrated then empty, one a line, for scripts/test.mjs. */
export async function printPgliteTemplates(): Promise<void> {
  const started = performance.now();
  const { migrated, empty } = await ensurePgliteTemplates();
  process.stderr.write(
    `# PGlite dumps ${migrated}, ${empty} (${Math.round(performance.now() - started)} ms)\n`,
  );
  process.stdout.write(`${migrated}\n${empty}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await printPgliteTemplates();

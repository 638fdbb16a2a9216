// Migrations at start-up: several processes starting at once on a fresh database, a migration
// edited after it was applied, and a database migrated before checksums were recorded.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createPgliteDb, createPostgresDb, type Db } from '../../src/db/db.js';
import { migrate } from '../../src/db/migrate.js';
import { pgliteEmpty } from '../support/pglite-template.js';

const url = process.env.TEST_DATABASE_URL;
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/**
 * `count` connections to one empty database: schemas of their own on PostgreSQL, one PGlite
 * otherwise (loaded from the dump of a bare initdb, which is what a first start finds).
 */
async function emptyDatabase(count: number): Promise<Db[]> {
  if (!url) {
    const db = await createPgliteDb(null, await pgliteEmpty());
    cleanups.push(() => db.close());
    return Array.from({ length: count }, () => db);
  }
  const schema = `m_${randomBytes(6).toString('hex')}`;
  const admin = createPostgresDb({ url, max: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  const dbs = Array.from({ length: count }, () => createPostgresDb({ url, schema, max: 2 }));
  cleanups.push(async () => {
    for (const db of dbs) await db.close();
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
  });
  return dbs;
}

async function migrationsDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-migrations-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  for (const [name, sql] of Object.entries(files)) await writeFile(join(dir, name), sql);
  return `${dir}/`;
}

test('processes starting at once on a fresh database all succeed, and each migration runs once', async () => {
  for (let round = 0; round < 4; round++) {
    const dbs = await emptyDatabase(4);
    const results = await Promise.all(dbs.map((db) => migrate(db)));
    const applied = results.flat();
    assert.equal(new Set(applied).size, applied.length, 'no migration applied twice');
    assert.ok(applied.includes('001_foundation.sql'));
    const rows = await (dbs[0] as Db).query<{ name: string }>('SELECT name FROM schema_migrations');
    assert.equal(rows.length, applied.length);
  }
});

test('a migration edited after it was applied stops the start, naming the file', async () => {
  const [db] = (await emptyDatabase(1)) as [Db];
  const dir = await migrationsDir({ '001_a.sql': 'CREATE TABLE a (x int);' });
  assert.deepEqual(await migrate(db, dir), ['001_a.sql']);
  await writeFile(`${dir}001_a.sql`, 'CREATE TABLE a (x int, y int);');
  await assert.rejects(migrate(db, dir), /001_a\.sql.*changed/);
  // Put back as applied, a file added later is applied as usual.
  await writeFile(`${dir}001_a.sql`, 'CREATE TABLE a (x int);');
  await writeFile(`${dir}002_b.sql`, 'CREATE TABLE b (x int);');
  assert.deepEqual(await migrate(db, dir), ['002_b.sql']);
  assert.deepEqual(await migrate(db, dir), []);
});

test('a database migrated before checksums were kept gets them once, from the files as they are', async () => {
  const [db] = (await emptyDatabase(1)) as [Db];
  const dir = await migrationsDir({ '001_a.sql': 'CREATE TABLE a (x int);' });
  // The bookkeeping table as the first releases made it: no checksum column.
  await db.exec(`CREATE TABLE schema_migrations (
    name text PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE TABLE a (x int);
  INSERT INTO schema_migrations (name) VALUES ('001_a.sql');`);
  assert.deepEqual(await migrate(db, dir), []);
  const [row] = await db.query<{ checksum: string }>('SELECT checksum FROM schema_migrations');
  assert.match(String(row?.checksum), /^[0-9a-f]{64}$/);
  await writeFile(`${dir}001_a.sql`, 'CREATE TABLE a (x bigint);');
  await assert.rejects(migrate(db, dir), /001_a\.sql/);
});

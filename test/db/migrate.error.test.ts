// Migrations at start-up: several processes starting at once on a fresh database, a migration
// edited after it was applied, and a database migrated before checksums were recorded.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { after, test } from 'node:test';
import type { Db } from '../../src/db/db.js';
import { migrate } from '../../src/db/migrate.js';
import {
  type Cleanups,
  emptyDatabase as emptyDb,
  migrationsDir as folder,
} from '../support/empty-database.js';

const cleanups: Cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const emptyDatabase = (count: number) => emptyDb(count, cleanups);
const migrationsDir = (files: Record<string, string>) => folder(files, cleanups);

test('processes starting at once on a fresh database all succeed, and each migration runs once', async () => {
  // On PostgreSQL the four race on separate connections, and a race may go either way: four rounds.
  // PGlite is one connection that runs them in turn: one round says all there is to say.
  const rounds = process.env.TEST_DATABASE_URL ? 4 : 1;
  for (let round = 0; round < rounds; round++) {
    const dbs = await emptyDatabase(4);
    const results = await Promise.all(dbs.map((db) => migrate(db)));
    const applied = results.flat();
    assert.equal(new Set(applied).size, applied.length, 'no migration applied twice');
    assert.ok(applied.includes('001_foundation.sql'));
    // Beside them, the row of the engine's functions (engine.sql), applied once too.
    const rows = await (dbs[0] as Db).query<{ name: string }>(
      "SELECT name FROM schema_migrations WHERE name <> '~engine.sql'",
    );
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

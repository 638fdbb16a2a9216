// SVC_MIGRATE_AT_START: by default a starting process applies what is pending; with `false` it
// applies nothing and refuses to start while a migration is pending, naming it, so a platform
// whose deploy job runs `svc migrate` never has a process start on a schema it does not know.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import type { Db } from '../../src/db/db.js';
import { migrate, pendingMigrations } from '../../src/db/migrate.js';
import { createDeps } from '../../src/runtime.js';
import { type Cleanups, emptyDatabase, migrationsDir } from '../support/empty-database.js';

const cleanups: Cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const config = (migrateAtStart?: string) =>
  loadConfig({
    SVC_MASTER_KEY: '07'.repeat(32),
    SVC_LOG_LEVEL: 'silent',
    ...(migrateAtStart === undefined ? {} : { SVC_MIGRATE_AT_START: migrateAtStart }),
  });

async function start(db: Db, migrateAtStart?: string) {
  const deps = await createDeps(config(migrateAtStart), db);
  await deps.limiter.close();
}

test('pendingMigrations names what the database has not applied, and writes nothing', async () => {
  const [db] = (await emptyDatabase(1, cleanups)) as [Db];
  const dir = await migrationsDir({ '001_a.sql': 'CREATE TABLE a (x int);' }, cleanups);
  assert.deepEqual(await pendingMigrations(db, dir), ['001_a.sql']);
  const [table] = await db.query<{ name: string | null }>(
    "SELECT to_regclass('schema_migrations')::text AS name",
  );
  assert.equal(table?.name ?? null, null, 'no bookkeeping table made by asking');
  await migrate(db, dir);
  assert.deepEqual(await pendingMigrations(db, dir), []);
});

test('SVC_MIGRATE_AT_START=false refuses to start on a database with pending migrations, naming them', async () => {
  const [db] = (await emptyDatabase(1, cleanups)) as [Db];
  await assert.rejects(start(db, 'false'), (error: Error) => {
    assert.match(
      error.message,
      /^SVC_MIGRATE_AT_START=false and \d+ migration\(s\) are pending \(001_foundation\.sql, /,
    );
    assert.match(error.message, /run svc migrate first$/);
    return true;
  });
  assert.ok((await pendingMigrations(db)).includes('001_foundation.sql'), 'nothing was applied');
  await migrate(db);
  await start(db, 'false');
});

test('by default a starting process applies what is pending', async () => {
  const [db] = (await emptyDatabase(1, cleanups)) as [Db];
  await start(db);
  assert.deepEqual(await pendingMigrations(db), []);
});

test('SVC_MIGRATE_AT_START takes true or false only', () => {
  assert.equal(config().migrateAtStart, true);
  assert.equal(config('false').migrateAtStart, false);
  assert.throws(() => config('no'), /SVC_MIGRATE_AT_START/);
});

// A migration marked `-- svc-migrate: stop-the-fleet` changes what running code relies on: `svc
// migrate` refuses it while processes of an earlier build run on the database, and names them.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import type { Db } from '../../src/db/db.js';
import { FleetRunningError, migrate } from '../../src/db/migrate.js';
import { type Cleanups, emptyDatabase, migrationsDir } from '../support/empty-database.js';

const MIGRATIONS = join(process.cwd(), 'src', 'db', 'migrations');
const cleanups: Cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Today's migrations and one more, marked to need the fleet stopped. */
async function withBreakingMigration(): Promise<string> {
  const names = (await readdir(MIGRATIONS)).filter((name) => name.endsWith('.sql'));
  const files = Object.fromEntries(
    await Promise.all(names.map(async (name) => [name, await readFile(join(MIGRATIONS, name), 'utf8')])),
  );
  files['999_breaking.sql'] = '-- svc-migrate: stop-the-fleet\nCREATE TABLE breaking_change (id int);\n';
  return migrationsDir(files, cleanups);
}

const [db] = (await emptyDatabase(1, cleanups)) as [Db];
await migrate(db);

test('refused while a worker of the earlier build beats, naming it; applied once it is gone', {
  skip: db.kind === 'pglite' ? 'one process on the embedded database' : false,
}, async () => {
  await db.query(
    `INSERT INTO delivery_workers (id, host, pid, build)
     VALUES ('00000000-0000-4000-8000-0000000000aa', 'worker-host-1', 4242, '017_peers_divide_the_webhooks.sql')`,
  );
  const dir = await withBreakingMigration();
  await assert.rejects(migrate(db, dir), (error: Error) => {
    assert.ok(error instanceof FleetRunningError);
    assert.match(error.message, /999_breaking\.sql/);
    assert.match(
      error.message,
      /worker pid 4242 on worker-host-1 \(build 017_peers_divide_the_webhooks\.sql/,
    );
    assert.match(error.message, /Stop them/);
    return true;
  });
  const [absent] = await db.query<{ t: string | null }>("SELECT to_regclass('breaking_change')::text AS t");
  assert.equal(absent?.t, null, 'nothing of it was applied');
  // The worker stopped (its row leaves with it) or died long ago: the migration goes through.
  await db.query(`UPDATE delivery_workers SET seen_at = now() - interval '1 hour'`);
  assert.deepEqual(await migrate(db, dir), ['999_breaking.sql']);
});

test('refused while a session of the earlier build’s svc worker is connected', {
  skip: db.kind === 'pglite' ? 'one process on the embedded database' : false,
}, async () => {
  const [schema] = await db.query<{ s: string }>('SELECT current_schema() AS s');
  // How the earlier build's `svc worker` named its sessions.
  const earlier = new pg.Client({
    connectionString: process.env.TEST_DATABASE_URL,
    application_name: `svc worker ${schema?.s}`,
  });
  await earlier.connect();
  try {
    const names = (await readdir(MIGRATIONS)).filter((name) => name.endsWith('.sql'));
    const files = Object.fromEntries(
      await Promise.all(names.map(async (name) => [name, await readFile(join(MIGRATIONS, name), 'utf8')])),
    );
    files['998_breaking.sql'] = '-- svc-migrate: stop-the-fleet\nSELECT 1;\n';
    await assert.rejects(migrate(db, await migrationsDir(files, cleanups)), /an earlier build's svc worker/);
  } finally {
    await earlier.end();
  }
});

test('a migration without the mark is applied beside running processes', async () => {
  const names = (await readdir(MIGRATIONS)).filter((name) => name.endsWith('.sql'));
  const files = Object.fromEntries(
    await Promise.all(names.map(async (name) => [name, await readFile(join(MIGRATIONS, name), 'utf8')])),
  );
  files['997_compatible.sql'] = 'CREATE TABLE compatible_change (id int);\n';
  if (db.kind === 'postgres') {
    await db.query(
      `INSERT INTO delivery_workers (id, host, pid, build) VALUES (gen_random_uuid(), 'h', 1, 'x')`,
    );
  }
  assert.deepEqual(await migrate(db, await migrationsDir(files, cleanups)), ['997_compatible.sql']);
});

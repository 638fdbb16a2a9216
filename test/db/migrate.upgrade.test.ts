// A database of an earlier build moves to the queue beside the history (migration 014): what was
// queued or in flight is in the queue, leases and all; what had ended is not; the lease columns
// leave the history. Then to the claim that writes only the queue (migration 015): a delivery in
// flight has its history row as before its claim, and still shows `delivering`. A lease that ends
// brings its delivery back as after a worker's crash, the attempt counted.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { Db } from '../../src/db/db.js';
import { FleetRunningError, migrate } from '../../src/db/migrate.js';
import { releaseExpiredLeases } from '../../src/delivery/engine.js';
import { type Cleanups, emptyDatabase, migrationsDir } from '../support/empty-database.js';

const MIGRATIONS = join(process.cwd(), 'src', 'db', 'migrations');
const cleanups: Cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** The migrations before `first`, in a folder of their own. */
async function migrationsBefore(first: string): Promise<string> {
  const names = (await readdir(MIGRATIONS)).filter((name) => name.endsWith('.sql') && name < first);
  const files = Object.fromEntries(
    await Promise.all(names.map(async (name) => [name, await readFile(join(MIGRATIONS, name), 'utf8')])),
  );
  return migrationsDir(files, cleanups);
}

test('migrations 014 and 015 queue what was unfinished, leases kept, and nothing that had ended', async () => {
  const [db] = (await emptyDatabase(1, cleanups)) as [Db];
  const applied = await migrate(db, await migrationsBefore('014'));
  assert.ok(applied.includes('013_feed_write_in_one_statement.sql'));
  assert.ok(!applied.some((name) => name.startsWith('014')));

  const owner = '00000000-0000-4000-8000-00000000000a';
  const token = '00000000-0000-4000-8000-00000000000b';
  await db.query(
    `WITH o AS (INSERT INTO organizations (code, name, webhooks_enabled) VALUES ('4714', 'Up', true) RETURNING id),
          i AS (INSERT INTO integrations (organization_id, name, kind, scopes)
                SELECT id, 'Up', 'custom', '{bookings:read}' FROM o RETURNING id, organization_id),
          w AS (INSERT INTO webhooks (integration_id, organization_id, url, events, secret)
                SELECT id, organization_id, 'https://receiver.example/up', '{*}', '\\x00' FROM i RETURNING id, organization_id),
          e AS (INSERT INTO events (organization_id, type, resource_id)
                SELECT w.organization_id, 'booking.created', gen_random_uuid() FROM w, generate_series(1, 4)
                RETURNING id),
          n AS (SELECT id, row_number() OVER (ORDER BY id) AS k FROM e)
     INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, status, attempt, next_retry_at,
                                     lease_owner, lease_token, lease_until)
     SELECT w.id, n.id, 'booking.created',
            (ARRAY['pending', 'failed', 'delivering', 'succeeded'])[n.k],
            (ARRAY[0, 1, 1, 1])[n.k],
            CASE WHEN n.k = 4 THEN NULL ELSE now() - interval '1 minute' END,
            CASE WHEN n.k = 3 THEN $1::uuid END, CASE WHEN n.k = 3 THEN $2::uuid END,
            CASE WHEN n.k = 3 THEN now() + interval '1 hour' END
     FROM w, n`,
    [owner, token],
  );

  assert.deepEqual(await migrate(db, await migrationsBefore('015')), ['014_queue_beside_history.sql']);
  const queued = await db.query<{ status: string; leased: boolean; token: string | null }>(
    `SELECT d.status, q.lease_owner IS NOT NULL AS leased, q.lease_token AS token
     FROM delivery_queue q JOIN webhook_deliveries d ON d.id = q.id ORDER BY d.status`,
  );
  assert.deepEqual(queued, [
    { status: 'delivering', leased: true, token },
    { status: 'failed', leased: false, token: null },
    { status: 'pending', leased: false, token: null },
  ]);
  const columns = await db.query<{ name: string }>(
    `SELECT column_name AS name FROM information_schema.columns
     WHERE table_name = 'webhook_deliveries' AND table_schema = current_schema() AND column_name LIKE 'lease%'`,
  );
  assert.deepEqual(columns, [], 'the history keeps no lease');

  assert.deepEqual(await migrate(db, await migrationsBefore('016')), ['015_claim_writes_the_queue_only.sql']);
  const states = await db.query<{ history: string; attempt: number; shown: string; shown_attempt: number }>(
    `SELECT d.status AS history, d.attempt, s.status AS shown, s.attempt AS shown_attempt
     FROM webhook_deliveries d JOIN delivery_states s ON s.id = d.id ORDER BY d.event_id`,
  );
  assert.deepEqual(states, [
    { history: 'pending', attempt: 0, shown: 'pending', shown_attempt: 0 },
    { history: 'failed', attempt: 1, shown: 'failed', shown_attempt: 1 },
    // In flight: the history as before the claim, the attempt under way shown.
    { history: 'pending', attempt: 0, shown: 'delivering', shown_attempt: 1 },
    { history: 'succeeded', attempt: 1, shown: 'succeeded', shown_attempt: 1 },
  ]);

  // Peers (017) replace the earlier claim: refused while a process of the earlier build holds a
  // lease (one process only on the embedded database: nothing to refuse there).
  if (db.kind === 'postgres') {
    await assert.rejects(migrate(db), (error: Error) => {
      assert.ok(error instanceof FleetRunningError);
      assert.match(error.message, /017_peers_divide_the_webhooks\.sql/);
      assert.match(error.message, /1 deliveries leased by processes that do not beat/);
      return true;
    });
  }
  // The old holder is gone: once its lease ends, the delivery is queued again, its attempt counted.
  await db.query(
    "UPDATE delivery_queue SET lease_until = now() - interval '1 second' WHERE lease_owner IS NOT NULL",
  );
  assert.ok((await migrate(db)).includes('017_peers_divide_the_webhooks.sql'));
  assert.equal(await releaseExpiredLeases(db), 1);
  const [back] = await db.query<{ status: string; attempt: number; leased: boolean }>(
    `SELECT d.status, d.attempt, q.lease_owner IS NOT NULL AS leased
     FROM delivery_queue q JOIN webhook_deliveries d ON d.id = q.id WHERE q.lease_token IS NULL AND d.attempt = 1
       AND d.last_error LIKE 'intento interrumpido%'`,
  );
  assert.deepEqual(back, { status: 'failed', attempt: 1, leased: false });
});

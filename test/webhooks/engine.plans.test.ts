// The engine's plans are made once and kept, perhaps while its tables are empty (a new deployment):
// they must still read the queue and the outbox by key once those are deep. And a delivery's writes
// stay small: its history row is written in place, once per attempt.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { Queryable } from '../../src/db/db.js';
import { beat, exchange } from '../../src/delivery/engine.js';
import { openTestDb, usingServer } from '../support/context.js';
import { succeededOutcome } from '../support/webhooks.js';

const ALL = Array.from({ length: 64 }, (_, i) => i);

/**
 * What `work` adds, on this session, to the scans of each named table read whole:
 * pg_stat_xact_user_tables counts what the transaction has done, so the counts are read before and
 * after.
 */
async function seqScansDuring(q: Queryable, names: string[], work: () => Promise<void>) {
  const scans = async () =>
    new Map(
      (
        await q.query<{ relname: string; n: number }>(
          `SELECT relname, seq_scan::int AS n FROM pg_stat_xact_user_tables
           WHERE relname = ANY ($1) AND schemaname = current_schema()`,
          [names],
        )
      ).map((r) => [r.relname, r.n]),
    );
  const before = await scans();
  await work();
  const after = await scans();
  return names.map((name) => [name, (after.get(name) ?? 0) - (before.get(name) ?? 0)]);
}

/** An organization with webhooks and the outbox on, an integration reading bookings, its webhook. */
async function insertWebhook(q: Queryable, code: string, name: string) {
  const [hook] = await q.query<{ id: string; organization_id: string }>(
    `WITH o AS (INSERT INTO organizations (code, name, webhooks_enabled, outbox_enabled)
                VALUES ($1, $2, true, true) RETURNING id),
          i AS (INSERT INTO integrations (organization_id, name, kind, scopes)
                SELECT id, $2, 'custom', '{bookings:read}' FROM o RETURNING id, organization_id)
     INSERT INTO webhooks (integration_id, organization_id, url, events, secret)
     SELECT id, organization_id, 'https://receiver.example/' || $2, '{*}', '\\x00' FROM i
     RETURNING id, organization_id`,
    [code, name],
  );
  return hook as { id: string; organization_id: string };
}

/** The one worker: it owns every partition once it has beaten. */
const WORKER = { id: randomUUID(), host: 'test', pid: 1, build: 'test' };

const request = (take: number) => ({
  worker: WORKER.id,
  leaseMs: 30_000,
  partitions: ALL,
  armed: [],
  released: [],
  take,
  hold: 8,
  bound: 8,
  answering: [],
  shared: [],
  budget: 64,
  busy: new Map<string, number>(),
});

test('the publisher and the exchange read the outbox and the queue by key, also when planned on empty tables', {
  skip: usingServer ? false : 'needs PostgreSQL: statistics of table reads',
}, async () => {
  const { db, drop } = await openTestDb();
  try {
    await beat(db, WORKER, 60_000);
    const seqScans = await db.tx((q) =>
      seqScansDuring(q, ['event_outbox', 'events', 'delivery_queue', 'webhook_deliveries'], async () => {
        const hook = await insertWebhook(q, '4711', 'plans');
        // One connection, one transaction: PL/pgSQL plans the functions' statements on their first
        // calls (on empty tables) and keeps a plan after five; every call after that finds rows.
        for (let i = 0; i < 8; i++) {
          await q.query('SELECT * FROM publish_outbox(500, true)');
          await exchange(q, [], request(8));
        }
        for (let i = 0; i < 4; i++) {
          await q.query(
            "INSERT INTO event_outbox (organization_id, type, resource_id) VALUES ($1, 'booking.created', $2)",
            [hook.organization_id, randomUUID()],
          );
          const [published] = await q.query<{ events: number }>('SELECT * FROM publish_outbox(500, true)');
          assert.equal(published?.events, 1);
          // Due at the transaction's now() (a timestamp of milliseconds may round up past it); this
          // statement of the test's own reads by key too.
          await q.query('SET LOCAL enable_seqscan = off');
          await q.query(
            `UPDATE delivery_queue SET next_retry_at = next_retry_at - interval '1 second'
             WHERE id IN (SELECT d.id FROM webhook_deliveries d WHERE d.webhook_id = $1)`,
            [hook.id],
          );
          await q.query('SET LOCAL enable_seqscan = on');
          const got = await exchange(q, [], request(8));
          assert.equal(got.claimed.length, 1);
          await exchange(q, got.claimed.map(succeededOutcome), request(0));
        }
      }),
    );
    assert.deepEqual(
      seqScans,
      [
        ['event_outbox', 0],
        ['events', 0],
        ['delivery_queue', 0],
        ['webhook_deliveries', 0],
      ],
      'read by key',
    );
  } finally {
    await drop();
  }
});

test('the engine’s connections never compile a plan: a small table read whole is not worth it', {
  skip: usingServer ? false : 'needs PostgreSQL: JIT compilation',
}, async () => {
  const { db, drop } = await openTestDb();
  const engine = db.withPlansKept(1);
  try {
    // The beat's look for dead workers reads delivery_workers whole: with sequential scans off its
    // cost passes jit_above_cost, and PostgreSQL compiled it at every run (about 80 ms each).
    const [plan] = await engine.query<{ 'QUERY PLAN': [Record<string, unknown>] }>(
      `EXPLAIN (ANALYZE, FORMAT JSON)
       SELECT w.id FROM delivery_workers w WHERE w.seen_at < now() - make_interval(secs => 5)`,
    );
    const top = plan?.['QUERY PLAN'][0] ?? {};
    assert.ok((top.Plan as { 'Total Cost': number })['Total Cost'] > 100_000, 'costed above jit_above_cost');
    assert.equal(top.JIT, undefined, 'and not compiled');
  } finally {
    await engine.close();
    await drop();
  }
});

test("a delivery's history row is written once per attempt, in place: the claim writes only the queue beside it", async () => {
  const { db, drop } = await openTestDb();
  try {
    await beat(db, WORKER, 60_000);
    // One transaction: pg_stat_xact_user_tables counts what this backend has not reported yet.
    const counts = await db.tx(async (q) => {
      const hook = await insertWebhook(q, '4713', 'hot');
      await q.query(
        `INSERT INTO event_outbox (organization_id, type, resource_id)
         SELECT $1, 'booking.created', gen_random_uuid() FROM generate_series(1, 8)`,
        [hook.organization_id],
      );
      const [published] = await q.query<{ deliveries: number }>('SELECT * FROM publish_outbox(500, true)');
      assert.equal(published?.deliveries, 8, 'the publisher queued a delivery per event');
      // Due at the transaction's now(), which a timestamp of milliseconds may round up past now().
      await q.query("UPDATE delivery_queue SET next_retry_at = next_retry_at - interval '1 second'");
      const claim = await exchange(q, [], request(8));
      assert.equal(claim.claimed.length, 8);
      const written = await exchange(q, claim.claimed.map(succeededOutcome), request(0));
      assert.equal(written.written.size, 8);
      return q.query<{ table: string; updated: number; hot: number; inserted: number; deleted: number }>(
        `SELECT relname AS table, n_tup_upd::int AS updated, n_tup_hot_upd::int AS hot,
                n_tup_ins::int AS inserted, n_tup_del::int AS deleted
         FROM pg_stat_xact_user_tables
         WHERE relname IN ('webhook_deliveries', 'delivery_queue') AND schemaname = current_schema()
         ORDER BY 1`,
      );
    });
    assert.deepEqual(counts, [
      // Queued by the publisher, made due, leased by the claim, deleted by the outcome.
      { table: 'delivery_queue', updated: 16, hot: 0, inserted: 8, deleted: 8 },
      // Only the outcome writes it (the claim reads it): an update in place, no index entry written.
      { table: 'webhook_deliveries', updated: 8, hot: 8, inserted: 8, deleted: 0 },
    ]);
  } finally {
    await drop();
  }
});

test("the queue's tables are vacuumed as they churn, not at autovacuum's default fifth", async () => {
  const { db, drop } = await openTestDb();
  try {
    const rows = await db.query<{ relname: string; reloptions: string[] | null }>(
      `SELECT relname, reloptions FROM pg_class
       WHERE relname IN ('webhook_deliveries', 'delivery_queue') AND relnamespace = current_schema()::regnamespace
       ORDER BY relname`,
    );
    for (const row of rows) {
      const options = new Map((row.reloptions ?? []).map((o) => o.split('=') as [string, string]));
      assert.ok(
        Number(options.get('autovacuum_vacuum_scale_factor')) <= 0.01,
        `${row.relname} ${row.reloptions}`,
      );
      assert.ok(
        Number(options.get('autovacuum_vacuum_threshold')) <= 2000,
        `${row.relname} ${row.reloptions}`,
      );
    }
    assert.equal(rows.length, 2);
  } finally {
    await drop();
  }
});

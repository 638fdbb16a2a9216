// The engine's plans are made once and kept, perhaps while its tables are empty (a new deployment):
// they must still read the queue and the outbox by key once those are deep. A plan made on an
// empty queue that reads the table whole would be kept while the queue grows (at 200 events a
// second the claim's update read every delivery ever written, at every claim).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { Db, Queryable } from '../../src/db/db.js';
import { claimDeliveries, recordOutcomes } from '../../src/delivery/store.js';
import { openTestDb, usingServer } from '../support/context.js';
import { until } from '../support/wait.js';
import { succeededOutcome } from '../support/webhooks.js';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Parent Relationship'?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan, each with the node it feeds (none for the top). */
function* planNodes(node: PlanNode, parent?: PlanNode): Generator<{ node: PlanNode; parent?: PlanNode }> {
  yield { node, parent };
  for (const child of node.Plans ?? []) yield* planNodes(child, node);
}

/** Reads of `table` sorted after they were read: rows in an index's order other than the one needed. */
const sortedReads = (plan: PlanNode, table: string) =>
  [...planNodes(plan)]
    .filter(
      ({ node, parent }) =>
        parent?.['Node Type'] === 'Sort' &&
        node['Parent Relationship'] === 'Outer' &&
        node['Node Type'].endsWith('Scan') &&
        node['Relation Name'] === table,
    )
    .map(({ node }) => `${node['Node Type']} ${node['Index Name'] ?? ''}`.trim());

/** The tables a plan reads whole. */
const readWhole = (plan: PlanNode) =>
  [...planNodes(plan)]
    .filter(({ node }) => node['Node Type'] === 'Seq Scan' && node['Relation Name'])
    .map(({ node }) => node['Relation Name'] as string);

/**
 * What `work` adds, on this session, to the scans of each named table (read whole) or index (read)
 * of the schema: pg_stat_get_xact_numscans counts what the session has not reported yet, the
 * migrations' among it, so the counts are read before and after.
 */
async function scansDuring(q: Queryable, names: string[], work: () => Promise<void>) {
  const scans = async () =>
    new Map(
      (
        await q.query<{ relname: string; n: number }>(
          `SELECT relname, pg_stat_get_xact_numscans(oid)::int AS n FROM pg_class
           WHERE relname = ANY ($1) AND relnamespace = current_schema()::regnamespace`,
          [names],
        )
      ).map((r) => [r.relname, r.n]),
    );
  const before = await scans();
  await work();
  const after = await scans();
  return names.map((name) => [name, (after.get(name) ?? 0) - (before.get(name) ?? 0)]);
}

/** A SQL literal for EXECUTE: the prepared statement's parameter types take it from there. */
const literal = (value: unknown) => (value === null ? 'NULL' : `'${String(value).replaceAll("'", "''")}'`);

/**
 * The plan the claim keeps on a connection of its own (plans kept), made by a first claim on the
 * database as it is: EXPLAIN EXECUTE shows the plan the connection holds.
 */
async function keptClaimPlan(db: Db): Promise<PlanNode> {
  const engine = db.withPlansKept(1);
  try {
    const claim = await claimDeliveries(engine, {
      take: 16,
      perWebhook: 16,
      fast: [],
      fastPerWebhook: 32,
      inFlightPerWebhook: 4,
      shareAfterMs: 500,
      leaseToken: randomUUID(),
      leaseMs: 30_000,
      owner: randomUUID(),
    });
    assert.equal(claim.claimed.length, 0, 'the queue is empty when the plan is made');
    const [prepared] = await engine.query<{ name: string; n: number }>(
      `SELECT name, cardinality(parameter_types) AS n FROM pg_prepared_statements
       WHERE statement LIKE 'WITH RECURSIVE%FOR UPDATE OF q SKIP LOCKED%'`,
    );
    assert.ok(prepared, 'the claim is prepared on the engine connection');
    const params = [16, 16, randomUUID(), 30_000, randomUUID(), 4, 500, '{}', 32, '{}'];
    assert.equal(prepared.n, params.length);
    const [row] = await engine.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) EXECUTE "${prepared.name}"(${params.map(literal).join(', ')})`,
    );
    return (row as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan;
  } finally {
    await engine.close();
  }
}

/** An organization, an integration reading bookings and its webhook of every event type. */
async function insertWebhook(q: Queryable, code: string, name: string) {
  const [hook] = await q.query<{ id: string; organization_id: string }>(
    `WITH o AS (INSERT INTO organizations (code, name) VALUES ($1, $2) RETURNING id),
          i AS (INSERT INTO integrations (organization_id, name, kind, scopes)
                SELECT id, $2, 'custom', '{bookings:read}' FROM o RETURNING id, organization_id)
     INSERT INTO webhooks (integration_id, organization_id, url, events, secret)
     SELECT id, organization_id, 'https://receiver.example/' || $2, '{*}', '\\x00' FROM i
     RETURNING id, organization_id`,
    [code, name],
  );
  return hook as { id: string; organization_id: string };
}

/**
 * `count` deliveries of `hook` in the queue, due `dueAgo` ago; the first `held` of them leased by
 * `owner` for another minute.
 */
async function queueDeliveries(
  q: Queryable,
  hook: { id: string; organization_id: string },
  o: { count: number; held: number; owner: string; dueAgo?: string },
) {
  await q.query(
    `WITH e AS (
       INSERT INTO events (organization_id, type, resource_id)
       SELECT $2, 'booking.created', gen_random_uuid() FROM generate_series(1, $3::int) RETURNING id)
     , d AS (
       INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, next_retry_at)
       SELECT $1, e.id, 'booking.created', now() - $6::interval
       FROM e RETURNING id, webhook_id, event_id, next_retry_at)
     INSERT INTO delivery_queue (id, webhook_id, event_id, next_retry_at, lease_owner, lease_token, lease_until)
     SELECT id, webhook_id, event_id, next_retry_at,
            CASE WHEN held THEN $5::uuid END,
            CASE WHEN held THEN gen_random_uuid() END,
            CASE WHEN held THEN now() + interval '1 minute' END
     FROM (SELECT *, row_number() OVER () <= $4 AS held FROM d) d`,
    [hook.id, hook.organization_id, o.count, o.held, o.owner, o.dueAgo ?? '0 seconds'],
  );
}

test("the claim's kept plan, made on an empty queue, reads the queue by key", {
  skip: usingServer ? false : 'needs PostgreSQL: the embedded database plans every run',
}, async () => {
  const { db, drop } = await openTestDb();
  try {
    // Known to be empty (as autovacuum finds the tables of a new deployment): the planner then
    // prices reading them whole below any index.
    await db.exec(
      'ANALYZE delivery_queue, webhook_deliveries, events, webhooks, integrations, organizations',
    );
    const plan = await keptClaimPlan(db);
    assert.deepEqual(
      readWhole(plan).filter((table) => ['delivery_queue', 'webhook_deliveries', 'events'].includes(table)),
      [],
      'no part of the claim reads the queue, the deliveries or the event log whole',
    );
    // The walk over the webhooks with waiting deliveries and each webhook's oldest due deliveries
    // come from the queue index in its order: read from the index of every webhook's due times and
    // sorted, every step would read the whole backlog.
    assert.deepEqual(sortedReads(plan, 'delivery_queue'), [], 'the queue read in its index order');
  } finally {
    await drop();
  }
});

test("the queue has one index in due-time order, each webhook's: no kept plan can read the walk sorted from another", async () => {
  const { db, drop } = await openTestDb();
  try {
    // An index of every webhook's due times answered the claim's reads as well, sorted afterwards,
    // as far as statistics of an empty queue could tell; a connection whose kept plan took it read
    // the whole backlog at every step of the claim's walk (migration 011).
    const indexes = await db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_class t ON t.oid = i.indrelid
       JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY (i.indkey)
       WHERE t.relname IN ('delivery_queue', 'webhook_deliveries')
         AND t.relnamespace = current_schema()::regnamespace AND a.attname = 'next_retry_at'
       ORDER BY 1`,
    );
    assert.deepEqual(
      indexes.map((i) => i.name),
      ['delivery_queue_due'],
    );
  } finally {
    await drop();
  }
});

test('the publisher reads the outbox by key, also when its plans were made on an empty outbox', {
  skip: usingServer ? false : 'needs PostgreSQL: statistics of table reads',
}, async () => {
  const { db, drop } = await openTestDb();
  try {
    const seqScans = await db.tx((q) =>
      scansDuring(q, ['event_outbox', 'events'], async () => {
        const [org] = await q.query<{ id: string }>(
          "INSERT INTO organizations (code, name, outbox_enabled) VALUES ('4711', 'Plans', true) RETURNING id",
        );
        // One connection, one transaction: PL/pgSQL plans the function's statements on its first
        // calls (on an empty outbox) and keeps a plan after five; every publish after that finds rows.
        for (let i = 0; i < 8; i++) await q.query('SELECT * FROM publish_outbox(500, true)');
        for (let i = 0; i < 4; i++) {
          await q.query(
            "INSERT INTO event_outbox (organization_id, type, resource_id) VALUES ($1, 'booking.created', $2)",
            [org?.id, randomUUID()],
          );
          const [published] = await q.query<{ events: number }>('SELECT * FROM publish_outbox(500, true)');
          assert.equal(published?.events, 1);
        }
      }),
    );
    assert.deepEqual(
      seqScans,
      [
        ['event_outbox', 0],
        ['events', 0],
      ],
      'the outbox and the event log are read by key',
    );
  } finally {
    await drop();
  }
});

test("the claim's share check reads the webhook's own queue, not every webhook's due times", {
  skip: usingServer ? false : 'needs PostgreSQL: statistics of index reads',
}, async () => {
  const { db, drop } = await openTestDb();
  // A connection of the engine's, where claims run.
  const engine = db.withPlansKept(1);
  try {
    await db.exec(
      'ANALYZE delivery_queue, webhook_deliveries, events, webhooks, integrations, organizations',
    );
    const reads = await engine.tx(async (q) => {
      const hook = await insertWebhook(q, '4712', 'share');
      // Another worker holds one delivery of the webhook; another waits, due an hour ago.
      await queueDeliveries(q, hook, { count: 2, held: 1, owner: randomUUID(), dueAgo: '1 hour' });
      // PL/pgSQL keeps a plan after the fifth call; each asks for a share of a webhook whose holder
      // falls behind.
      return scansDuring(q, ['delivery_queue_due'], async () => {
        for (let i = 0; i < 8; i++) {
          const [room] = await q.query<{ n: number }>(
            'SELECT room AS n FROM claim_slots($1, gen_random_uuid(), $2::uuid[], 4, 4, 500)',
            [hook.id, '{}'],
          );
          assert.equal(room?.n, 3, 'the bound less the delivery held elsewhere');
        }
      });
    });
    assert.deepEqual(reads, [['delivery_queue_due', 8]], 'one step down the webhook queue per claim');
  } finally {
    await engine.close();
    await drop();
  }
});

test("a delivery's history row is written once per attempt, in place: the claim writes only the queue beside it", async () => {
  const { db, drop } = await openTestDb();
  try {
    // One transaction: pg_stat_xact_user_tables counts what this backend has not reported yet.
    const counts = await db.tx(async (q) => {
      const hook = await insertWebhook(q, '4713', 'hot');
      await q.query(`UPDATE organizations SET webhooks_enabled = true, outbox_enabled = true WHERE id = $1`, [
        hook.organization_id,
      ]);
      await q.query(
        `INSERT INTO event_outbox (organization_id, type, resource_id)
         SELECT $1, 'booking.created', gen_random_uuid() FROM generate_series(1, 8)`,
        [hook.organization_id],
      );
      const [published] = await q.query<{ deliveries: number }>('SELECT * FROM publish_outbox(500, true)');
      assert.equal(published?.deliveries, 8, 'the publisher queued a delivery per event');
      // Due at the transaction's now(), which a timestamp of milliseconds may round up past now().
      await q.query("UPDATE delivery_queue SET next_retry_at = next_retry_at - interval '1 second'");
      const claim = await claimDeliveries(q, {
        take: 8,
        perWebhook: 8,
        inFlightPerWebhook: 8,
        shareAfterMs: 500,
        leaseToken: randomUUID(),
        leaseMs: 30_000,
        owner: randomUUID(),
      });
      assert.equal(claim.claimed.length, 8);
      const written = await recordOutcomes(q, claim.claimed.map(succeededOutcome));
      assert.equal(written.written.length, 8);
      return q.query<{
        table: string;
        updated: number;
        hot: number;
        inserted: number;
        deleted: number;
        live: number;
      }>(
        `SELECT relname AS table, n_tup_upd::int AS updated, n_tup_hot_upd::int AS hot,
                n_tup_ins::int AS inserted, n_tup_del::int AS deleted,
                (SELECT count(*)::int FROM delivery_queue) AS live
         FROM pg_stat_xact_user_tables
         WHERE relname IN ('webhook_deliveries', 'delivery_queue') AND schemaname = current_schema()
         ORDER BY 1`,
      );
    });
    assert.deepEqual(counts, [
      // Queued by the publisher, made due, leased by the claim, deleted by the outcome.
      { table: 'delivery_queue', updated: 16, hot: 0, inserted: 8, deleted: 8, live: 0 },
      // Only the outcome writes it (the claim reads it): an update in place, no index entry written.
      { table: 'webhook_deliveries', updated: 8, hot: 8, inserted: 8, deleted: 0, live: 0 },
    ]);
  } finally {
    await drop();
  }
});

test("claim_slots counts a webhook's held deliveries by index scan: the dead entries it meets are marked once, not read at every claim", async () => {
  const { db, drop } = await openTestDb();
  try {
    const hook = await insertWebhook(db, '4715', 'held');
    const worker = randomUUID();
    // 302 deliveries leased by one worker, 300 of them ended since: their entries in
    // delivery_queue_held are dead until a vacuum; two are still held.
    await queueDeliveries(db, hook, { count: 302, held: 302, owner: worker });
    await db.query(
      'DELETE FROM delivery_queue WHERE id IN (SELECT id FROM delivery_queue WHERE webhook_id = $1 LIMIT 300)',
      [hook.id],
    );
    /** Entries of delivery_queue_held one count returned, on a connection set as the engine's. */
    const entriesRead = () =>
      db.tx(async (q) => {
        await q.exec('SET LOCAL enable_seqscan = off');
        const read = async () =>
          (
            await q.query<{ n: number }>(
              "SELECT pg_stat_get_xact_tuples_returned('delivery_queue_held'::regclass)::int AS n",
            )
          )[0]?.n ?? 0;
        const before = await read();
        const [slots] = await q.query<{ room: number }>('SELECT * FROM claim_slots($1, $2, $3, 8, 4, 500)', [
          hook.id,
          worker,
          '{}',
        ]);
        assert.equal(slots?.room, 6, 'eight it may hold, two it holds');
        return (await read()) - before;
      });
    const first = await entriesRead();
    assert.ok(first >= 2, `the count read the index (${first} entries)`);
    // A bitmap scan returns every dead entry again at every count. An index scan marks those it
    // finds dead to every transaction, and skips them after; on a shared server another session's
    // older snapshot may hold that back for a moment, so the count is asked again until then.
    let later = first;
    await until(
      'a count reads only the held deliveries',
      async () => {
        later = await entriesRead();
        return later === 2;
      },
      5000,
      50,
    ).catch(() => {});
    assert.equal(later, 2, 'only the two held deliveries are read');
  } finally {
    await drop();
  }
});

test("the queue's table is vacuumed once 1% of it is dead, not autovacuum's default fifth", async () => {
  const { db, drop } = await openTestDb();
  try {
    // The table keeps every finished delivery: at the default fifth, ten million kept deliveries
    // would let two million dead versions gather at the head of the queue's indexes.
    const [row] = await db.query<{ reloptions: string[] | null }>(
      `SELECT reloptions FROM pg_class
       WHERE relname = 'webhook_deliveries' AND relnamespace = current_schema()::regnamespace`,
    );
    const options = new Map((row?.reloptions ?? []).map((o) => o.split('=') as [string, string]));
    assert.ok(Number(options.get('autovacuum_vacuum_scale_factor')) <= 0.01, String(row?.reloptions));
    assert.ok(Number(options.get('autovacuum_vacuum_threshold')) <= 1000, String(row?.reloptions));
  } finally {
    await drop();
  }
});

// Prints the PostgreSQL plan and timing of the delivery engine's claim over a backlog, as the
// worker runs it: a prepared statement, executed often enough that PostgreSQL may settle on its
// generic plan. Runs on the scratch database the webhook benchmark has filled (npm run
// bench:webhooks): `--due` of its deliveries are put back in the queue, due now, and committed (rows
// changed by the claim's own transaction would fire foreign-key checks a real claim does not pay);
// each claim is then run and rolled back.
//
// --record N: the statement of a worker's round instead, N outcomes written (of deliveries claimed
// and committed first) beside the next claim.
//
//   node --import tsx bench/claim-plan.ts [--database-url URL] [--due 4000] [--take 32] [--record 16] [--runs 12]
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { Queryable } from '../src/db/db.js';
import { claimDeliveries, recordAndClaim } from '../src/delivery/store.js';
import { succeededOutcome } from '../test/support/webhooks.js';

const { values: args } = parseArgs({
  options: {
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/svc_bench_webhooks' },
    due: { type: 'string', default: '4000' },
    take: { type: 'string', default: '32' },
    'per-webhook': { type: 'string', default: '8' },
    runs: { type: 'string', default: '12' },
    'plan-cache-mode': { type: 'string' },
    record: { type: 'string' },
  },
});

/** The statement and parameters `send` makes, captured instead of run. */
async function statementOf(send: (q: Queryable) => Promise<unknown>) {
  let captured: { sql: string; params: readonly unknown[] } | undefined;
  const capture: Queryable = {
    async query<T>(sql: string, params: readonly unknown[] = []) {
      captured = { sql, params };
      return [] as T[];
    },
    async exec() {},
  };
  await send(capture).catch(() => {});
  if (!captured) throw new Error('no statement sent');
  return captured;
}

const request = (take: number, owner: string) => ({
  take,
  perWebhook: Number(args['per-webhook']),
  // The worker holds twice its bound, and shares a webhook whose deliveries waited 500 ms.
  inFlightPerWebhook: Number(args['per-webhook']) / 2,
  shareAfterMs: 500,
  leaseToken: randomUUID(),
  leaseMs: 60_000,
  owner,
});

const client = new pg.Client({ connectionString: args['database-url'] });
await client.connect();
try {
  const due = Number(args.due);
  const take = Number(args.take);
  const owner = randomUUID();
  const reset = await client.query(
    `WITH due AS (
       UPDATE webhook_deliveries SET status = 'pending', next_retry_at = now() - interval '1 second', attempt = 0
       WHERE id IN (SELECT id FROM webhook_deliveries ORDER BY created_at LIMIT $1)
       RETURNING id, webhook_id, event_id, next_retry_at
     )
     INSERT INTO delivery_queue (id, webhook_id, event_id, next_retry_at)
     SELECT * FROM due
     ON CONFLICT (id) DO UPDATE SET next_retry_at = excluded.next_retry_at,
       lease_owner = NULL, lease_token = NULL, lease_until = NULL`,
    [due],
  );
  const total = await client.query('SELECT count(*)::int AS n FROM webhook_deliveries');
  const events = await client.query('SELECT count(*)::int AS n FROM events');
  process.stdout.write(
    `${reset.rowCount} deliveries due of ${total.rows[0].n}; ${events.rows[0].n} events\n`,
  );
  await client.query('VACUUM ANALYZE webhook_deliveries, delivery_queue');
  const db: Queryable = {
    query: async <T>(sql: string, params: readonly unknown[] = []) =>
      (await client.query(sql, params as unknown[])).rows as T[],
    exec: async (sql: string) => void (await client.query(sql)),
  };
  const record = args.record === undefined ? 0 : Number(args.record);
  const ending = record > 0 ? (await claimDeliveries(db, request(record, owner))).claimed : [];
  if (ending.length < record) throw new Error(`only ${ending.length} deliveries to record`);
  const { sql, params } = await statementOf((q) =>
    record > 0
      ? recordAndClaim(q, ending.map(succeededOutcome), request(take, owner))
      : claimDeliveries(q, request(take, owner)),
  );
  process.stdout.write(record > 0 ? `${record} outcomes written, ${take} claimed\n` : `${take} claimed\n`);
  await client.query('BEGIN');
  if (args['plan-cache-mode']) await client.query(`SET LOCAL plan_cache_mode = ${args['plan-cache-mode']}`);
  await client.query(`PREPARE claim AS ${sql}`);
  const literal = (v: unknown) => (v === null ? 'NULL' : `'${String(v)}'`);
  const values = params.map((v) =>
    Array.isArray(v) ? `'{${v.map((x) => (x === null ? 'NULL' : `"${String(x)}"`)).join(',')}}'` : literal(v),
  );
  const runs = Number(args.runs);
  for (let i = 1; i <= runs; i++) {
    await client.query('SAVEPOINT run');
    const plan = await client.query(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE claim(${values.join(', ')})`);
    const lines = plan.rows.map((r) => r['QUERY PLAN'] as string);
    const time = lines.find((l) => l.startsWith('Execution Time'));
    if (i === 1 || i === runs) process.stdout.write(`\n-- run ${i}\n${lines.join('\n')}\n`);
    else process.stdout.write(`run ${i}: ${time}\n`);
    await client.query('ROLLBACK TO SAVEPOINT run');
  }
  // EXPLAIN leaves out sending the rows (their output functions, the bytes): timed whole here.
  const took: number[] = [];
  for (let i = 0; i < runs * 4; i++) {
    await client.query('SAVEPOINT run');
    const start = performance.now();
    await client.query(`EXECUTE claim(${values.join(', ')})`);
    took.push(performance.now() - start);
    await client.query('ROLLBACK TO SAVEPOINT run');
  }
  took.sort((a, b) => a - b);
  process.stdout.write(`\nexecuted with its rows sent: median ${took[took.length >> 1]?.toFixed(2)} ms\n`);
} finally {
  await client.query('ROLLBACK').catch(() => {});
  await client.end();
}

// Prints the PostgreSQL plan and timing of the delivery engine's claim over a backlog, as the
// worker runs it: a prepared statement, executed often enough that PostgreSQL may settle on its
// generic plan. Runs on the scratch database the webhook benchmark has filled (npm run
// bench:webhooks): `--due` of its deliveries are put back in the queue, due now, and committed (rows
// changed by the claim's own transaction would fire foreign-key checks a real claim does not pay);
// each claim is then run and rolled back.
//
//   node --import tsx bench/claim-plan.ts [--database-url URL] [--due 4000] [--take 32] [--runs 12]
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { Queryable } from '../src/db/db.js';
import { claimDeliveries } from '../src/delivery/store.js';

const { values: args } = parseArgs({
  options: {
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/svc_bench_webhooks' },
    due: { type: 'string', default: '4000' },
    take: { type: 'string', default: '32' },
    'per-webhook': { type: 'string', default: '8' },
    runs: { type: 'string', default: '12' },
  },
});

/** The claim's statement and parameters, as claimDeliveries sends them. */
async function claimStatement(take: number, perWebhook: number) {
  let captured: { sql: string; params: readonly unknown[] } | undefined;
  const capture: Queryable = {
    async query<T>(sql: string, params: readonly unknown[] = []) {
      captured = { sql, params };
      return [] as T[];
    },
    async exec() {},
  };
  await claimDeliveries(capture, {
    take,
    perWebhook,
    leaseToken: randomUUID(),
    leaseMs: 60_000,
    owner: randomUUID(),
  });
  if (!captured) throw new Error('claimDeliveries sent no statement');
  return captured;
}

const client = new pg.Client({ connectionString: args['database-url'] });
await client.connect();
try {
  const due = Number(args.due);
  const { sql, params } = await claimStatement(Number(args.take), Number(args['per-webhook']));
  const reset = await client.query(
    `UPDATE webhook_deliveries SET status = 'pending', next_retry_at = now() - interval '1 second',
       attempt = 0, lease_token = NULL, lease_owner = NULL, lease_until = NULL
     WHERE id IN (SELECT id FROM webhook_deliveries ORDER BY created_at LIMIT $1)`,
    [due],
  );
  const total = await client.query('SELECT count(*)::int AS n FROM webhook_deliveries');
  const events = await client.query('SELECT count(*)::int AS n FROM events');
  process.stdout.write(
    `${reset.rowCount} deliveries due of ${total.rows[0].n}; ${events.rows[0].n} events\n`,
  );
  await client.query('VACUUM ANALYZE webhook_deliveries');
  await client.query('BEGIN');
  await client.query(`PREPARE claim AS ${sql}`);
  const values = params.map((v) => (Array.isArray(v) ? `'{${v.join(',')}}'` : `'${String(v)}'`));
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
} finally {
  await client.query('ROLLBACK').catch(() => {});
  await client.end();
}

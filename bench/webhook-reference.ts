// The reference of the delivery benchmark: what a team would build instead of the engine. A durable
// PostgreSQL queue (graphile-worker, run in this process through its library API) that fetches jobs
// in batches into a local queue and completes them in batches, with one task that signs the body the
// way the engine does and POSTs it with undici. A process of its own, as `svc worker` is, started by
// the benchmark (bench/lib/fast.ts) with its settings (ReferenceConfig) in BENCH_CONFIG.
//
// The jobs are added by the benchmark's feed (bench/lib/reference.ts), one per (event, webhook), in
// the transaction that writes the event. Prints "ready" once it runs; SIGTERM stops it cleanly (jobs
// in flight finish, the local queue is handed back).
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Logger, run, type Task } from 'graphile-worker';
import pg from 'pg';
import { Agent } from 'undici';
import { REFERENCE_SCHEMA, type ReferenceConfig } from './lib/reference.js';

const { databaseUrl, webhooks, concurrency, localQueue, timeoutMs, caFile } = JSON.parse(
  process.env.BENCH_CONFIG!,
) as ReferenceConfig;
const targets = webhooks.map((h) => {
  const u = new URL(h.url);
  return { origin: u.origin, path: `${u.pathname}${u.search}`, secret: h.secret };
});

const agent = new Agent({
  headersTimeout: timeoutMs,
  bodyTimeout: timeoutMs,
  connect: { timeout: timeoutMs, ca: [...rootCertificates, readFileSync(caFile, 'utf8')] },
});

interface Payload {
  webhook: number;
  event: { id: string; type: string };
}

const deliver: Task = async (payload, helpers) => {
  const { webhook, event } = payload as Payload;
  const target = targets[webhook];
  if (!target) throw new Error(`no webhook ${webhook}`);
  const body = JSON.stringify(event);
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = `v1=${createHmac('sha256', target.secret).update(`${timestamp}.${body}`).digest('hex')}`;
  const res = await agent.request({
    origin: target.origin,
    path: target.path,
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'SVC-Webhooks/1',
      'x-svc-event': event.type,
      'x-svc-event-id': event.id,
      'x-svc-delivery': helpers.job.id,
      'x-svc-attempt': String(helpers.job.attempts),
      'x-svc-timestamp': String(timestamp),
      'x-svc-signature': signature,
    },
    body,
  });
  await res.body.dump({ limit: 1024 });
  if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}`);
};

const quiet = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') process.stderr.write(`[${level}] ${message}\n`);
});

// Its own pool only to keep idle connections as long as the engine's (five minutes, not pg's ten
// seconds): between the benchmark's phases neither side reopens connections.
const pgPool = new pg.Pool({
  connectionString: databaseUrl,
  max: Math.max(10, concurrency + 2),
  idleTimeoutMillis: 300_000,
});

const runner = await run({
  pgPool,
  taskList: { deliver },
  noHandleSignals: true,
  logger: quiet,
  preset: {
    worker: {
      schema: REFERENCE_SCHEMA,
      concurrentJobs: concurrency,
      maxPoolSize: Math.max(10, concurrency + 2),
      localQueue: { size: localQueue },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  },
});
process.stdout.write('ready\n');

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void runner
      .stop()
      .then(() => Promise.all([agent.close(), pgPool.end()]))
      .finally(() => process.exit(0));
  });
}
await runner.promise;

// Scale-out: two `svc serve` and two `svc worker` processes on one PostgreSQL schema and one Redis,
// as docs/operations.md lays them out. The three request limits hold across both API processes
// (exactly the limit admitted, not once per process); every event is fanned out once, whichever
// publisher takes it (the serve that wrote it, or a worker for what a writer left behind); every attempt of a delivery is made once; the workers' /metrics
// listeners count what they delivered. PostgreSQL and Redis only (skipped on the embedded run).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { after, describe, test } from 'node:test';
import {
  anotherKey,
  type ClusterTenant,
  clusterTenant,
  freshSchema,
  metricValue,
  needsServers,
  OPERATOR_TOKEN,
  request,
  SERVER_REDIS_URL,
  type ServeProcess,
  serviceEnv,
  startServe,
  startWorker,
  type TestSchema,
  until,
  type WorkerProcess,
} from '../support/cluster.js';
import { bookingBody } from '../support/feed.js';
import { type Receiver, startReceiver } from '../support/https-receiver.js';
import { freePort, svc } from '../support/processes.js';
import { signatureMatches } from '../support/webhooks.js';

const LIMITS = { perKey: 60, perEndpoint: 40, perOrganization: 100 };

let receiver: Receiver;
let schema: TestSchema;
let env: Record<string, string>;
const serves: ServeProcess[] = [];
let workers: WorkerProcess[] = [];

if (!needsServers) {
  receiver = await startReceiver();
  after(() => receiver.close());
  schema = await freshSchema();
  env = serviceEnv({
    databaseUrl: schema.url,
    redisUrl: SERVER_REDIS_URL,
    caFile: receiver.caFile,
    extra: {
      SVC_RATE_PER_KEY: String(LIMITS.perKey),
      SVC_RATE_PER_ENDPOINT: String(LIMITS.perEndpoint),
      SVC_RATE_PER_ORGANIZATION: String(LIMITS.perOrganization),
      SVC_WEBHOOK_TIMEOUT_MS: '5000',
      SVC_WEBHOOK_LEASE_SECONDS: '30',
      // Beats every 500 ms; a worker silent for 3 s is dead and its webhooks go to the others.
      SVC_WEBHOOK_POLL_MS: '500',
      SVC_WEBHOOK_WORKER_LEASE_MS: '3000',
    },
  });
  // The first start applies the migrations; the other three find them applied.
  serves.push(await startServe(env));
  const rest = await Promise.all([startServe(env), startWorker(env), startWorker(env)]);
  serves.push(rest[0] as ServeProcess);
  workers = rest.slice(1) as WorkerProcess[];
}

/** `count` requests by `keys` round-robin over both API processes and `paths`, `parallel` at a time. */
async function burst(keys: string[], paths: string[], count: number, parallel = 10) {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (let i = next++; i < count; i = next++) {
        const serve = serves[i % 2] as ServeProcess;
        const res = await request(
          `${serve.api}${paths[i % paths.length]}`,
          'GET',
          keys[i % keys.length] as string,
        );
        assert.ok(res.status === 200 || res.status === 429, `${res.status} ${JSON.stringify(res.body)}`);
        if (res.status === 429) assert.equal(res.body.error.code, 'rate_limited');
        statuses.push(res.status);
      }
    }),
  );
  return statuses.filter((s) => s === 200).length;
}

const MIXED = ['/integrations/me', '/bookings?limit=1', '/events?limit=1', '/webhooks'];

describe('two API processes share every request limit through Redis', { skip: needsServers }, () => {
  test('per endpoint: exactly the limit of one key on one endpoint, over both processes', async () => {
    const t = await clusterTenant(serves[0] as ServeProcess);
    assert.equal(await burst([t.key], ['/integrations/me'], 100), LIMITS.perEndpoint);
  });

  test('per key: exactly the limit of one key over several endpoints', async () => {
    const t = await clusterTenant(serves[0] as ServeProcess);
    assert.equal(await burst([t.key], MIXED, 100), LIMITS.perKey);
  });

  test('per organization: exactly the limit of three keys together', async () => {
    const t = await clusterTenant(serves[0] as ServeProcess);
    const keys = [
      t.key,
      await anotherKey(serves[1] as ServeProcess, t),
      await anotherKey(serves[0] as ServeProcess, t),
    ];
    assert.equal(await burst(keys, MIXED, 150), LIMITS.perOrganization);
  });
});

describe('four workers deliver each event once', { skip: needsServers }, () => {
  test('every event fanned out once, every attempt made once, every signature valid', async () => {
    const first = serves[0] as ServeProcess;
    const t: ClusterTenant = await clusterTenant(
      first,
      ['/a', '/b', '/c'].map((p) => receiver.url(p)),
    );
    const before = receiver.requests.length;
    // 60 bookings created and 30 of them changed, through both processes' feeds, 4 at a time.
    const ids = Array.from({ length: 60 }, () => randomUUID());
    const changes = [
      ...ids.map((id) => ({ id, body: bookingBody() })),
      ...ids.slice(0, 30).map((id) => ({ id, body: bookingBody({ status: 'cancelada' }) })),
    ];
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = next++; i < changes.length; i = next++) {
          const { id, body } = changes[i] as (typeof changes)[number];
          // A change waits for its booking's creation: the cancellations come after the first 60.
          const serve = serves[i % 2] as ServeProcess;
          await until(`PUT booking ${i}`, async () => {
            const res = await request(
              `${serve.op}/organizations/${t.organizationId}/bookings/${id}`,
              'PUT',
              OPERATOR_TOKEN,
              body,
            );
            return res.status < 300;
          });
        }
      }),
    );
    const [{ n: events }] = (await schema.db.query(
      'SELECT count(*)::int AS n FROM events WHERE organization_id = $1',
      [t.organizationId],
    )) as [{ n: number }];
    assert.equal(events, changes.length, 'one event per change, whichever publisher took it');
    const expected = events * 3;

    await until(
      'every delivery succeeded',
      async () => {
        const [row] = await schema.db.query<{ done: number; all: number }>(
          `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS done, count(*)::int AS all
             FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.organization_id = $1`,
          [t.organizationId],
        );
        return row?.all === expected && row.done === expected;
      },
      60_000,
    );
    const arrived = receiver.requests.slice(before);
    assert.equal(arrived.length, expected, 'no attempt made twice, none missing');
    const pairs = new Set(arrived.map((r) => `${r.headers['x-svc-delivery']}#${r.headers['x-svc-attempt']}`));
    assert.equal(pairs.size, expected, 'each (delivery, attempt) once');
    assert.ok(arrived.every((r) => r.headers['x-svc-attempt'] === '1'));
    const perWebhook = new Set(arrived.map((r) => `${r.path}#${r.headers['x-svc-event-id']}`));
    assert.equal(perWebhook.size, expected, 'each event once per webhook');
    const secrets = new Map(t.webhooks.map((w) => [new URL(w.url).pathname, w.secret]));
    for (const r of arrived) assert.ok(signatureMatches(secrets.get(r.path) as string, r.headers, r.body));

    // What the four processes counted adds up to what arrived.
    const counted = await Promise.all(
      [...serves, ...workers].map(async (p) =>
        metricValue(await p.metrics(), 'svc_webhook_attempts_total', { outcome: '2xx' }),
      ),
    );
    assert.equal(
      counted.reduce((a, b) => a + b, 0),
      // Earlier tests of this file deliver nothing; webhook.test events are not made here.
      expected,
      `succeeded attempts per process (serve, serve, worker, worker): ${counted.join(', ')}`,
    );
    console.log(`# deliveries per process (serve, serve, worker, worker): ${counted.join(', ')}`);
  });
});

describe('svc worker /metrics', { skip: needsServers }, () => {
  test('the delivery metrics and the process metrics, on loopback, without a token', async () => {
    const worker = workers[0] as WorkerProcess;
    const url = `http://127.0.0.1:${worker.metricsPort}`;
    const res = await fetch(`${url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await res.text();
    for (const name of [
      'svc_webhook_attempts_total',
      'svc_webhook_deliveries',
      'svc_webhook_lag_seconds_bucket',
      'nodejs_eventloop_lag_seconds',
      'process_resident_memory_bytes',
    ]) {
      assert.match(text, new RegExp(`^${name}`, 'm'), name);
    }
    assert.equal((await fetch(`${url}/`)).status, 404);
    assert.equal((await fetch(`${url}/metrics`, { method: 'POST' })).status, 404);
  });

  test('a busy port stops the worker at once with a message that names the setting', async () => {
    const busy = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => busy.listen(port, '127.0.0.1', resolve));
    try {
      const child = svc(['worker'], { ...env, SVC_METRICS_PORT: String(port), SVC_LOG_LEVEL: 'silent' });
      const timer = setTimeout(() => child.child.kill('SIGKILL'), 30_000);
      const code = await child.exited();
      clearTimeout(timer);
      assert.equal(code, 1, child.output());
      assert.match(child.output(), /SVC_METRICS_PORT: cannot listen \(.*EADDRINUSE/);
    } finally {
      busy.close();
    }
  });
});

// Last: it kills a worker.
describe('the workers divide the webhooks', { skip: needsServers }, () => {
  test('each of the four owns a quarter of the partitions; a killed one’s share is taken within its lease, divided by webhooks', async () => {
    /** Partitions owned, by owner, largest share first. */
    const shares = async () =>
      (
        await schema.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM delivery_partitions WHERE owner IS NOT NULL GROUP BY owner ORDER BY n DESC',
        )
      ).map((r) => r.n);
    await until('the four processes own 16 partitions each', async () => {
      const now = await shares();
      return now.length === 4 && now.every((n) => n === 16);
    });
    const first = serves[0] as ServeProcess;
    const t = await clusterTenant(first, [receiver.url('/peers/a'), receiver.url('/peers/b')]);
    const killed = workers[0] as WorkerProcess;
    await killed.proc.stop('SIGKILL');
    const diedAt = Date.now();
    // Written right after the kill: whichever partition its webhooks fall in, each is delivered.
    const ids = Array.from({ length: 10 }, () => randomUUID());
    for (const id of ids) {
      const res = await request(
        `${first.op}/organizations/${t.organizationId}/bookings/${id}`,
        'PUT',
        OPERATOR_TOKEN,
        bookingBody(),
      );
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    await until('the three left own every partition', async () => {
      const now = await shares();
      return now.length === 3 && now.reduce((a, b) => a + b, 0) === 64;
    });
    const tookOver = Date.now() - diedAt;
    await until(
      'every delivery arrived',
      async () => receiver.requests.filter((r) => r.path.startsWith('/peers/')).length >= 20,
      20_000,
    );
    const arrived = receiver.requests.filter((r) => r.path.startsWith('/peers/'));
    assert.equal(
      new Set(arrived.map((r) => `${r.path}#${r.headers['x-svc-event-id']}`)).size,
      20,
      'each event once per webhook',
    );
    // Assigned anew by the webhooks in each partition: the three hold about as many each.
    const rows = await schema.db.query<{ hooks: number }>(
      `SELECT count(w.id)::int AS hooks FROM delivery_partitions p
       LEFT JOIN webhooks w ON w.active AND webhook_partition(w.id) = p.partition
       WHERE p.owner IS NOT NULL GROUP BY p.owner`,
    );
    const [heaviest] = await schema.db.query<{ n: number }>(
      'SELECT coalesce(max(n), 0)::int AS n FROM (SELECT count(*) AS n FROM webhooks WHERE active GROUP BY webhook_partition(id)) x',
    );
    const hooks = rows.map((r) => r.hooks);
    assert.ok(
      Math.max(...hooks) - Math.min(...hooks) <= (heaviest?.n ?? 0) + 1,
      `webhooks by worker ${hooks}: at most one partition's apart`,
    );
    console.log(
      `# the killed worker's partitions were owned again ${tookOver} ms after the kill (lease 3 s)`,
    );
  });
});

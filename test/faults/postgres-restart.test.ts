// PostgreSQL restarted under load, on a private cluster this file starts (initdb and pg_ctl on a
// free port; never the shared test server). While it is down every request answers at once or
// waits, and never past the request time-out: 2xx, or 500 `internal` with the error envelope. The
// API and the worker come back by themselves, and nothing a 2xx answer promised is lost: each
// booking the feed accepted has its event and its delivery, each idempotent write its record, and
// the outbox is empty. PostgreSQL and Redis only (Redis holds the limits, as in production).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { createPostgresDb } from '../../src/db/db.js';
import {
  type Answer,
  clusterTenant,
  needsPostgresBinaries,
  needsServers,
  OPERATOR_TOKEN,
  ok,
  privatePostgres,
  request,
  SERVER_REDIS_URL,
  serviceEnv,
  sleep,
  startServe,
  startWorker,
  until,
} from '../support/cluster.js';
import { bookingBody } from '../support/feed.js';
import { startReceiver } from '../support/https-receiver.js';
import { FAST_SCHEDULE } from '../support/webhooks.js';

const REQUEST_TIMEOUT_MS = 3000;
const skip = needsServers || needsPostgresBinaries;

interface Sent {
  what: string;
  at: number;
  res: Answer | null;
  error?: string;
}

describe('PostgreSQL restarted during load', { skip }, () => {
  test('requests in the gap answer 500 internal or wait, within the time-out; everything recovers; nothing is lost', {
    timeout: 240_000,
  }, async () => {
    const pg = await privatePostgres();
    const receiver = await startReceiver();
    after(() => receiver.close());
    const env = serviceEnv({
      databaseUrl: pg.url,
      redisUrl: SERVER_REDIS_URL,
      caFile: receiver.caFile,
      extra: {
        SVC_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
        SVC_DB_STATEMENT_TIMEOUT_MS: '2000',
        SVC_DB_POOL_WAIT_MS: '1000',
        SVC_WEBHOOK_TIMEOUT_MS: '2000',
        SVC_WEBHOOK_LEASE_SECONDS: '3',
        SVC_WEBHOOK_RETRY_SCHEDULE: FAST_SCHEDULE,
        SVC_RATE_PER_KEY: '100000',
        SVC_RATE_PER_ORGANIZATION: '100000',
        SVC_RATE_PER_ENDPOINT: '100000',
        // The log of a database outage is the point here, not noise.
        SVC_LOG_LEVEL: 'error',
      },
    });
    const serve = await startServe(env);
    const worker = await startWorker(env);
    const tenant = await clusterTenant(serve, [receiver.url('/pg')]);
    const bookingPath = (id: string) => `${serve.op}/organizations/${tenant.organizationId}/bookings/${id}`;
    // Bookings the idempotent writes link external ids to.
    const linked = Array.from({ length: 5 }, () => randomUUID());
    for (const id of linked)
      await ok(request(bookingPath(id), 'PUT', OPERATOR_TOKEN, bookingBody()), 'PUT booking');

    const sent: Sent[] = [];
    let loading = true;
    const send = async (what: string, fn: () => Promise<Answer>) => {
      const at = Date.now();
      try {
        sent.push({ what, at, res: await fn() });
      } catch (error) {
        sent.push({ what, at, res: null, error: `${error} ${(error as { cause?: unknown }).cause ?? ''}` });
      }
    };
    let n = 0;
    const loop = async (body: (i: number) => Promise<void>) => {
      while (loading) {
        n += 1;
        await body(n);
        await sleep(20);
      }
    };
    const created: string[] = [];
    const idempotent: { key: string; bookingId: string; externalId: string }[] = [];
    const load = Promise.all([
      loop(async () => {
        const id = randomUUID();
        created.push(id);
        await send(`feed ${id}`, () => request(bookingPath(id), 'PUT', OPERATOR_TOKEN, bookingBody()));
      }),
      loop(async (i) => {
        const entry = {
          key: randomUUID(),
          bookingId: linked[i % linked.length] as string,
          externalId: `erp-${i}`,
        };
        idempotent.push(entry);
        await send(`external-id ${entry.key}`, () =>
          request(
            `${serve.api}/bookings/${entry.bookingId}/external-id`,
            'PUT',
            tenant.key,
            { external_id: entry.externalId },
            { 'idempotency-key': entry.key },
          ),
        );
      }),
      loop(() => send('read', () => request(`${serve.api}/bookings?limit=5`, 'GET', tenant.key))),
    ]);

    await sleep(2000);
    const { downAt, upAt } = await pg.restart({ mode: 'fast', downMs: 3000 });
    await sleep(4000);
    loading = false;
    await load;

    // Every answer: 2xx, or 500 internal with the envelope; none past the request time-out.
    const failures = sent.filter((s) => !s.res || s.res.status >= 300);
    const late = sent
      .filter((s) => (s.res?.ms ?? 0) >= REQUEST_TIMEOUT_MS + 1000)
      .map(
        (s) =>
          `${s.what.split(' ')[0]} at down+${s.at - downAt} ms: ${s.res?.status} after ${Math.round(s.res?.ms ?? 0)} ms ${JSON.stringify(s.res?.body)}`,
      );
    assert.deepEqual(late, [], 'answered past the request time-out');
    const unanswered = sent
      .filter((s) => !s.res)
      .map((s) => `${s.what.split(' ')[0]} at down+${s.at - downAt} ms: ${s.error}`);
    assert.deepEqual(
      unanswered,
      [],
      `no answer; serve exit ${serve.proc.child.exitCode}: ${serve.proc.output().slice(-3000)}`,
    );
    for (const s of sent) {
      assert.ok(s.res);
      if (s.res.status < 300) continue;
      assert.equal(s.res.status, 500, `${s.what}: ${s.res.status} ${JSON.stringify(s.res.body)}`);
      assert.equal(s.res.body?.error?.code, 'internal', JSON.stringify(s.res.body));
      assert.equal(typeof s.res.body.error.message, 'string');
      assert.equal(typeof s.res.body.error.request_id, 'string');
    }
    assert.ok(failures.length > 0, 'the restart was felt (else the test proves nothing)');
    // After the restart the API answers without being restarted itself.
    const lastFailure = Math.max(...failures.map((s) => s.at));
    const recovered = sent.filter((s) => s.at > lastFailure);
    assert.ok(recovered.length >= 10, `only ${recovered.length} requests after the last failure`);
    assert.ok(lastFailure < upAt + 3000, `requests still failed ${lastFailure - upAt} ms after the restart`);
    console.log(
      `# postgres restart: down ${upAt - downAt} ms, ${sent.length} requests, ${failures.length} answered 500 internal, last at up+${lastFailure - upAt} ms, slowest ${Math.round(Math.max(...sent.map((s) => s.res?.ms ?? 0)))} ms`,
    );

    // Nothing lost: each accepted feed write has its event and its delivery, which arrived.
    const accepted = sent
      .filter((s) => s.what.startsWith('feed ') && s.res && s.res.status < 300)
      .map((s) => s.what.slice(5));
    const db = createPostgresDb({ url: pg.url, max: 1 });
    after(() => db.close());
    const rows = await until(
      'every accepted booking delivered',
      async () => {
        const rows = await db.query<{ resource_id: string; event_id: string; status: string }>(
          `SELECT e.resource_id, e.id AS event_id, d.status FROM events e JOIN webhook_deliveries d ON d.event_id = e.id
            WHERE e.resource_id = ANY ($1::uuid[])`,
          [accepted],
        );
        return rows.length === accepted.length && rows.every((r) => r.status === 'succeeded')
          ? rows
          : undefined;
      },
      60_000,
      200,
    );
    const delivered = new Set(receiver.requests.map((r) => r.headers['x-svc-event-id']));
    for (const row of rows) {
      assert.ok(delivered.has(row.event_id), `booking ${row.resource_id} accepted but never delivered`);
    }
    const [outbox] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM event_outbox');
    assert.equal(outbox?.n, 0, 'every outbox row published');

    // Each idempotent write answered 2xx replays its record.
    const answered = new Map(
      sent
        .filter((s) => s.what.startsWith('external-id ') && s.res && s.res.status < 300)
        .map((s) => [s.what.slice(12), s.res as Answer]),
    );
    for (const entry of idempotent.filter((e) => answered.has(e.key))) {
      const again = await request(
        `${serve.api}/bookings/${entry.bookingId}/external-id`,
        'PUT',
        tenant.key,
        { external_id: entry.externalId },
        { 'idempotency-key': entry.key },
      );
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.equal(again.headers.get('idempotent-replayed'), 'true', `record of ${entry.key} lost`);
    }

    // The worker came back too: its metrics read the database again, and the processes never exited.
    assert.match(await worker.metrics(), /svc_webhook_deliveries\{status="pending"\} \d+/);
    assert.equal(serve.proc.child.exitCode, null);
    assert.equal(worker.proc.child.exitCode, null);
    assert.equal(await worker.proc.stop('SIGTERM'), 0);
    assert.equal(await serve.proc.stop('SIGTERM'), 0);
  });
});

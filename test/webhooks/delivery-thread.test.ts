// `svc serve` on PostgreSQL runs its delivery worker on a thread of its own (src/delivery-thread.ts):
// the deliveries arrive, the process's /metrics counts them once (the thread's registry appended to
// the API's), and SIGTERM stops the thread with the process, cleanly. PostgreSQL only: on the
// embedded database the worker stays on the main thread, which the rest of the suite covers.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import {
  clusterTenant,
  freshSchema,
  metricValue,
  needsServers,
  OPERATOR_TOKEN,
  request,
  SERVER_REDIS_URL,
  serviceEnv,
  startServe,
  until,
} from '../support/cluster.js';
import { bookingBody } from '../support/feed.js';
import { startReceiver } from '../support/https-receiver.js';
import { signatureMatches } from '../support/webhooks.js';

describe('the embedded worker on a thread of its own', { skip: needsServers }, () => {
  test('delivers every event, is counted once by /metrics, and stops with the process', async () => {
    const receiver = await startReceiver();
    after(() => receiver.close());
    const schema = await freshSchema();
    const serve = await startServe(
      serviceEnv({
        databaseUrl: schema.url,
        redisUrl: SERVER_REDIS_URL,
        caFile: receiver.caFile,
        extra: { SVC_LOG_LEVEL: 'info', SVC_LOG_FORMAT: 'json' },
      }),
    );
    const t = await clusterTenant(
      serve,
      ['/a', '/b'].map((p) => receiver.url(p)),
    );
    const ids = Array.from({ length: 20 }, () => randomUUID());
    for (const id of ids) {
      const res = await request(
        `${serve.op}/organizations/${t.organizationId}/bookings/${id}`,
        'PUT',
        OPERATOR_TOKEN,
        bookingBody(),
      );
      assert.equal(res.status, 201);
    }
    const expected = ids.length * 2;
    await until('every delivery arrived', async () => receiver.requests.length >= expected, 30_000);
    await until(
      'every outcome written',
      async () => {
        const [row] = await schema.db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'succeeded'",
        );
        return row?.n === expected;
      },
      30_000,
    );
    assert.equal(receiver.requests.length, expected, 'each delivery once');
    const secrets = new Map(t.webhooks.map((w) => [new URL(w.url).pathname, w.secret]));
    for (const r of receiver.requests) {
      assert.ok(signatureMatches(secrets.get(r.path) as string, r.headers, r.body));
    }

    // The thread said where it runs, in the process's log, with its name on the line.
    const started = serve.proc
      .output()
      .split('\n')
      .filter((line) => line.includes('a thread of its own'));
    assert.equal(started.length, 1, serve.proc.output());
    assert.equal(JSON.parse(started[0] as string).thread, 'delivery');

    // One /metrics: the API's own series and the thread's, each named once.
    const text = await serve.metrics();
    assert.equal(metricValue(text, 'svc_webhook_attempts_total', { outcome: '2xx' }), expected);
    assert.equal(text.match(/^# TYPE svc_webhook_attempts_total /gm)?.length, 1);
    assert.equal(text.match(/^# TYPE svc_http_request_duration_seconds /gm)?.length, 1);
    assert.equal(text.match(/^# TYPE process_cpu_user_seconds_total /gm)?.length, 1);

    assert.equal(await serve.proc.stop('SIGTERM'), 0, serve.proc.output());
    assert.match(serve.proc.output(), /stopped cleanly/);
  });
});

// POST /webhooks/{id}/test: a webhook.test event queued for one webhook, delivered by the worker
// over real HTTPS and signed like any other; never in the event log; limited per destination host
// (5 a minute, shared by the organization's webhooks to that host) and per organization (60 an hour).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { assertError } from '../api/read-support.js';
import type { Response } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { expectOk, type Tenant } from '../support/tenants.js';
import {
  arrivalsAt,
  createWebhook,
  deliveriesUntil,
  ENVELOPE_KEYS,
  requestsTo,
  signatureMatches,
  webhookHarness,
  webhookTenant,
} from '../support/webhooks.js';

const { svc, receiver } = await webhookHarness();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const forPath = (path: string) => requestsTo(receiver, path);
const arrivals = (path: string, count: number) => arrivalsAt(receiver, path, count);

const sendTest = (t: Tenant, id: string) => svc.call('POST', `/webhooks/${id}/test`, { key: t.key });

/** An https url to the receiver by its IP literal: another host than `localhost` for the limiter. */
const byIp = (path: string) => `https://127.0.0.1:${receiver.port}${path}`;

function assertRateLimited(res: Response): number {
  assertError(res, 429, 'rate_limited');
  const retryAfter = Number(res.headers['retry-after']);
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, String(res.headers['retry-after']));
  assert.equal(res.body.error.details?.retry_after, retryAfter);
  assert.equal(res.headers['x-ratelimit-limit'], undefined, 'a 429 has no rate-limit headers');
  assert.equal(res.headers['x-ratelimit-remaining'], undefined);
  return retryAfter;
}

describe('POST /webhooks/{id}/test', () => {
  test('a paused webhook still receives its test (a destination can be checked before reactivating)', async () => {
    const t = await webhookTenant(svc);
    const path = `/t/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created']);
    await expectOk(await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { active: false } }));
    const queued = await expectOk(await sendTest(t, hook.id), 202);
    const [arrived] = await arrivals(path, 1);
    assert.equal(arrived?.headers['x-svc-delivery'], queued.delivery_id);
    const [d] = await deliveriesUntil(svc, t, hook.id, (x) => x[0]?.status === 'succeeded');
    assert.equal(d?.attempt, 1);
  });

  test('202 {delivery_id, event_id, status: pending}; a signed webhook.test reaches the destination', async () => {
    const t = await webhookTenant(svc);
    const path = `/t/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path), ['booking.cancelled']);
    const res = await sendTest(t, hook.id);
    assert.equal(res.status, 202, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ['delivery_id', 'event_id', 'status']);
    assert.match(res.body.delivery_id, UUID);
    assert.match(res.body.event_id, UUID);
    assert.equal(res.body.status, 'pending');

    const [req] = await arrivals(path, 1);
    assert.ok(req);
    assert.equal(req.method, 'POST');
    assert.equal(req.headers['content-type'], 'application/json');
    assert.equal(req.headers['user-agent'], 'SVC-Webhooks/1');
    assert.equal(req.headers['x-svc-event'], 'webhook.test');
    assert.equal(req.headers['x-svc-delivery'], res.body.delivery_id);
    assert.equal(req.headers['x-svc-event-id'], res.body.event_id);
    assert.equal(req.headers['x-svc-attempt'], '1');
    assert.match(req.headers['x-svc-signature'] ?? '', /^v1=[0-9a-f]{64}$/);
    assert.ok(signatureMatches(hook.secret, req.headers, req.body), 'signed with the webhook secret');
    assert.ok(!signatureMatches(`${hook.secret}x`, req.headers, req.body));
    const body = JSON.parse(req.body);
    assert.deepEqual(Object.keys(body), ENVELOPE_KEYS);
    assert.equal(body.id, res.body.event_id);
    assert.equal(body.type, 'webhook.test');
    assert.equal(body.version, 1);
    assert.deepEqual(body.organization, { id: t.organization.id });
    assert.deepEqual(body.resource, { type: 'webhook', id: hook.id });
    assert.deepEqual(body.changes, []);
    assert.equal(body.previous_status, null);
    assert.equal(body.data, null);
    assert.ok(!Number.isNaN(Date.parse(body.created_at)));

    // Followed through /deliveries: the same delivery, succeeded at the first attempt.
    const [delivery] = await deliveriesUntil(svc, t, hook.id, (d) => d[0]?.status === 'succeeded');
    assert.equal(delivery?.id, res.body.delivery_id);
    assert.equal(delivery?.event_id, res.body.event_id);
    assert.equal(delivery?.event_type, 'webhook.test');
    assert.equal(delivery?.attempt, 1);
    assert.equal(delivery?.last_status, 200);
    assert.ok(delivery?.delivered_at);
  });

  test('each call is a new event and a new delivery, only for that webhook', async () => {
    const t = await webhookTenant(svc);
    const pathA = `/t/${randomUUID()}`;
    const pathB = `/t/${randomUUID()}`;
    const a = await createWebhook(svc, t, receiver.url(pathA));
    const b = await createWebhook(svc, t, receiver.url(pathB));
    const first = await expectOk(await sendTest(t, a.id), 202);
    const second = await expectOk(await sendTest(t, a.id), 202);
    assert.notEqual(first.event_id, second.event_id);
    assert.notEqual(first.delivery_id, second.delivery_id);
    const got = await arrivals(pathA, 2);
    assert.deepEqual(
      got.map((r) => r.headers['x-svc-delivery']).sort(),
      [first.delivery_id, second.delivery_id].sort(),
    );
    // A test queues one delivery, for its webhook only, when it is asked for.
    const queuedB = await svc.call('GET', `/webhooks/${b.id}/deliveries`, { key: t.key });
    assert.deepEqual(queuedB.body.data, [], 'the other webhook of the organization gets nothing');
    assert.equal(forPath(pathB).length, 0);
  });

  test('never in GET /events, not even asked for by type', async () => {
    const t = await webhookTenant(svc);
    const hook = await createWebhook(svc, t, receiver.url(`/t/${randomUUID()}`));
    const bookingId = randomUUID();
    await putBooking(svc, t.organization.id, {}, bookingId);
    const queued = await expectOk(await sendTest(t, hook.id), 202);
    const [stored] = await svc.db.query<{ type: string }>('SELECT type FROM events WHERE id = $1', [
      queued.event_id,
    ]);
    assert.equal(stored?.type, 'webhook.test', 'the event exists');

    // The booking event shows, so the list is not merely empty.
    const until = Date.now() + 10_000;
    let log = await expectOk(await svc.call('GET', '/events', { key: t.key }));
    while (log.data.length === 0 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 25));
      log = await expectOk(await svc.call('GET', '/events', { key: t.key }));
    }
    assert.deepEqual(
      log.data.map((e: { type: string }) => e.type),
      ['booking.created'],
    );
    for (const path of ['/events', '/events?type=webhook.test', `/events?resource_id=${hook.id}`]) {
      const res = await svc.call('GET', path, { key: t.key });
      assert.equal(res.status, 200, res.text);
      assert.ok(!res.text.includes(queued.event_id), path);
      assert.ok(!res.body.data.some((e: { type: string }) => e.type === 'webhook.test'), path);
    }
    const typed = await expectOk(await svc.call('GET', '/events?type=webhook.test', { key: t.key }));
    assert.deepEqual(typed.data, []);
    assert.equal(typed.has_more, false);
    assert.equal(typed.next_cursor, null);
  });

  test('works with the organization’s event output (outbox) off', async () => {
    const t = await webhookTenant(svc, { flags: { outbox_enabled: false } });
    const path = `/t/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path));
    const res = await sendTest(t, hook.id);
    assert.equal(res.status, 202, res.text);
    const [req] = await arrivals(path, 1);
    assert.equal(req?.headers['x-svc-event-id'], res.body.event_id);
    assert.ok(signatureMatches(hook.secret, req!.headers, req!.body));
  });
});

describe('limits of the test endpoint', () => {
  test('5 a minute per destination host: the 6th is 429; the same host shares the bucket, another host does not', async () => {
    const t = await webhookTenant(svc);
    const a = await createWebhook(svc, t, receiver.url(`/h/${randomUUID()}`));
    const sameHost = await createWebhook(svc, t, receiver.url(`/h/${randomUUID()}`));
    const otherHost = await createWebhook(svc, t, byIp(`/h/${randomUUID()}`));
    for (let i = 0; i < 5; i += 1) assert.equal((await sendTest(t, a.id)).status, 202, `test ${i + 1}`);

    const sixth = await sendTest(t, a.id);
    assert.ok(assertRateLimited(sixth) <= 60, 'within the minute');
    assertRateLimited(await sendTest(t, sameHost.id));
    assert.equal((await sendTest(t, otherHost.id)).status, 202, 'another host has its own bucket');

    // Another organization's tests to the same host are not counted here.
    const stranger = await webhookTenant(svc);
    const theirs = await createWebhook(svc, stranger, receiver.url(`/h/${randomUUID()}`));
    assert.equal((await sendTest(stranger, theirs.id)).status, 202);

    // Refusals queued nothing: 5 + 1 deliveries in all for this organization.
    const [row] = await svc.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
       WHERE w.integration_id = $1`,
      [t.integration.id],
    );
    assert.equal(row?.n, 6);

    svc.clock.advance(61_000);
    assert.equal((await sendTest(t, a.id)).status, 202, 'a minute later the host has room again');
    assert.equal((await sendTest(t, sameHost.id)).status, 202);
  });

  test('a host written with its final dot is the same host: one bucket', async () => {
    const t = await webhookTenant(svc);
    const plain = await createWebhook(svc, t, receiver.url(`/d/${randomUUID()}`));
    const dotted = await createWebhook(svc, t, receiver.url(`/d/${randomUUID()}`));
    // Stored as if created with `https://localhost.:PORT/...` (no DNS needed to show the bucket).
    await svc.db.query('UPDATE webhooks SET url = $2 WHERE id = $1', [
      dotted.id,
      `https://localhost.:${receiver.port}/d/dotted`,
    ]);
    for (let i = 0; i < 5; i += 1) assert.equal((await sendTest(t, plain.id)).status, 202, `test ${i + 1}`);
    assertRateLimited(await sendTest(t, dotted.id));
  });

  test('60 an hour per organization: the 61st is 429 whatever the host', async () => {
    const t = await webhookTenant(svc);
    const local = await createWebhook(svc, t, receiver.url(`/o/${randomUUID()}`));
    const ip = await createWebhook(svc, t, byIp(`/o/${randomUUID()}`));
    let sent = 0;
    for (let group = 0; group < 12; group += 1) {
      if (group > 0) svc.clock.advance(61_000);
      for (let i = 0; i < 5; i += 1) {
        const res = await sendTest(t, local.id);
        assert.equal(res.status, 202, `test ${sent + 1}: ${res.text}`);
        sent += 1;
      }
    }
    assert.equal(sent, 60);
    svc.clock.advance(61_000); // the host's minute is over; the organization's hour is not
    const refused = assertRateLimited(await sendTest(t, local.id));
    assert.ok(refused > 60, `the hour's bucket decides: Retry-After ${refused}`);
    assert.ok(refused <= 3600);
    assertRateLimited(await sendTest(t, ip.id));

    // Another organization is not affected.
    const other = await webhookTenant(svc);
    const theirs = await createWebhook(svc, other, receiver.url(`/o/${randomUUID()}`));
    assert.equal((await sendTest(other, theirs.id)).status, 202);

    // When the first test leaves the hour, there is room again.
    svc.clock.advance(refused * 1000);
    assert.equal((await sendTest(t, ip.id)).status, 202);
  });

  test('a 404 consumes no test', async () => {
    const t = await webhookTenant(svc);
    const hook = await createWebhook(svc, t, receiver.url(`/n/${randomUUID()}`));
    for (let i = 0; i < 6; i += 1) assertError(await sendTest(t, randomUUID()), 404, 'not_found');
    for (let i = 0; i < 5; i += 1) assert.equal((await sendTest(t, hook.id)).status, 202, `test ${i + 1}`);
    assertRateLimited(await sendTest(t, hook.id));
  });
});

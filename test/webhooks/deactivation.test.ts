// When a webhook is deactivated. A failure is a delivery that ended dead, not a failed attempt: a
// short outage of a busy receiver costs retries, never the webhook; the hundredth dead delivery in
// a row deactivates it; tests never move the count.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { putBooking } from '../support/feed.js';
import type { ReceivedRequest } from '../support/https-receiver.js';
import { expectOk } from '../support/tenants.js';
import { until } from '../support/wait.js';
import { createWebhook, deliveriesUntil, webhookHarness, webhookTenant } from '../support/webhooks.js';

// The contract's schedule compressed 60 times: 63.5 s from first to eighth attempt, far longer
// than the traffic takes to make even on a loaded machine, so the outage stays shorter than the
// retry span as it is meant to.
const { svc, receiver } = await webhookHarness({
  SVC_WEBHOOK_RETRY_SCHEDULE: '0.5,1,2,4,8,16,32',
  SVC_WEBHOOK_CONCURRENCY: '16',
  SVC_WEBHOOK_TIMEOUT_MS: '5000',
  SVC_WEBHOOK_LEASE_SECONDS: '10',
});

const down = new Set<string>();
const dead = new Set<string>();
/** Per path, the events answered with a 200. */
const delivered = new Map<string, Set<string>>();
receiver.respond((req: ReceivedRequest) => {
  if (dead.has(req.path)) return { status: 404 };
  if (down.has(req.path)) return { status: 503 };
  const got = delivered.get(req.path) ?? new Set();
  got.add(req.headers['x-svc-event-id'] ?? '');
  delivered.set(req.path, got);
  return { status: 200 };
});
const arrivals = (path: string) => receiver.requests.filter((r) => r.path === path);

async function webhookState(t: { key: string }, id: string) {
  return expectOk(await svc.call('GET', `/webhooks/${id}`, { key: t.key }));
}

// Each test has a tenant and a path of its own: they wait on their schedules side by side.
describe('deactivation', { concurrency: true }, () => {
  test('an outage of a busy receiver costs retries, not the webhook: every event arrives once it recovers', async () => {
    const t = await webhookTenant(svc);
    const path = `/outage/${randomUUID()}`;
    down.add(path);
    const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created']);
    // Traffic while the receiver is down: far more failed attempts than the threshold of 100.
    const events = 120;
    for (let i = 0; i < events; i++) await putBooking(svc, t.organization.id);
    await until('150 attempts have failed', () => arrivals(path).length >= 150);
    const during = await webhookState(t, hook.id);
    assert.equal(during.active, true, 'still active after 150 failed attempts');
    assert.equal(during.consecutive_failures, 0, 'no delivery has ended dead');

    down.delete(path);
    await until(
      'every event has arrived after the outage',
      () => (delivered.get(path)?.size ?? 0) === events,
      60_000,
    );
    const deliveries = await deliveriesUntil(
      svc,
      t,
      hook.id,
      (d) => d.length === 100 && d.every((x) => x.status === 'succeeded'),
      60_000,
    );
    assert.ok(
      deliveries.some((d) => d.attempt > 1),
      'the events were retried, not sent once',
    );
    const after = await webhookState(t, hook.id);
    assert.equal(after.active, true);
    assert.equal(after.consecutive_failures, 0);
  });

  test('the hundredth delivery in a row that ends dead deactivates the webhook; a test changes no count', async () => {
    const t = await webhookTenant(svc);
    const path = `/gone/${randomUUID()}`;
    dead.add(path);
    const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created']);
    // 96 deliveries already ended dead in a row; four more (a permanent 404: dead at the third
    // attempt) bring it to 100. Twelve failed attempts on the way did not count.
    await svc.db.query('UPDATE webhooks SET consecutive_failures = 96 WHERE id = $1', [hook.id]);
    for (let i = 0; i < 4; i++) await putBooking(svc, t.organization.id);
    await deliveriesUntil(
      svc,
      t,
      hook.id,
      (d) => d.length === 4 && d.every((x) => x.status === 'dead'),
      20_000,
    );
    const off = await webhookState(t, hook.id);
    assert.equal(off.active, false);
    assert.equal(off.consecutive_failures, 100);
    assert.equal(off.disabled_reason, 'consecutive_failures');
    assert.ok(Math.abs(Date.parse(off.disabled_at) - Date.now()) < 10_000);
    assert.equal(arrivals(path).length, 12, 'three attempts per delivery');
    const metrics = await svc.op('GET', '/metrics');
    assert.match(metrics.text, /svc_webhooks_disabled_total [1-9]/);

    // A test delivery reaches a deactivated webhook, and leaves its count and state as they are.
    dead.delete(path);
    const test = await svc.call('POST', `/webhooks/${hook.id}/test`, { key: t.key });
    assert.ok(test.status < 300, test.text);
    await until('the test delivery arrived', () =>
      arrivals(path).some((r) => r.headers['x-svc-event'] === 'webhook.test'),
    );
    await until('the test delivery is recorded', async () => {
      const [row] = await svc.db.query<{ status: string }>(
        `SELECT status FROM webhook_deliveries WHERE webhook_id = $1 AND event_type = 'webhook.test'`,
        [hook.id],
      );
      return row?.status === 'succeeded';
    });
    const still = await webhookState(t, hook.id);
    assert.equal(still.active, false);
    assert.equal(still.consecutive_failures, 100);

    // Reactivation starts again from 0, and deliveries flow.
    const on = expectOk(
      await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { active: true } }),
    );
    assert.equal((await on).consecutive_failures, 0);
    await putBooking(svc, t.organization.id);
    await deliveriesUntil(svc, t, hook.id, (d) => d.length === 6 && d[0]?.status === 'succeeded');
  });

  test('a retried delivery that succeeds in the end resets the count; one that retries changes nothing', async () => {
    const t = await webhookTenant(svc);
    const path = `/flaky/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created']);
    await svc.db.query('UPDATE webhooks SET consecutive_failures = 42 WHERE id = $1', [hook.id]);
    down.add(path);
    await putBooking(svc, t.organization.id);
    await deliveriesUntil(svc, t, hook.id, (d) => d[0]?.status === 'failed' && d[0]?.attempt >= 2);
    assert.equal((await webhookState(t, hook.id)).consecutive_failures, 42, 'failed attempts do not count');
    down.delete(path);
    await deliveriesUntil(svc, t, hook.id, (d) => d[0]?.status === 'succeeded');
    assert.equal((await webhookState(t, hook.id)).consecutive_failures, 0);
  });
});

// What the worker does when the receiver does not answer 2xx: the retry schedule (compressed by
// SVC_WEBHOOK_RETRY_SCHEDULE), permanent 4xx, redirects, time-outs, resets and refused targets.
// Deactivation is in deactivation.test.ts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { putBooking } from '../support/feed.js';
import type { Behaviour, ReceivedRequest } from '../support/https-receiver.js';
import { expectOk, type Tenant } from '../support/tenants.js';
import {
  createWebhook,
  type DeliveryView,
  deliveriesUntil,
  WEBHOOK_TIMEOUT_MS,
  webhookHarness,
  webhookTenant,
} from '../support/webhooks.js';

const { svc, receiver } = await webhookHarness();

// Each test answers on its own path.
const scripts = new Map<string, (n: number) => Behaviour>();
receiver.respond((req: ReceivedRequest) => {
  const seen = receiver.requests.filter((r) => r.path === req.path).length;
  return scripts.get(req.path)?.(seen) ?? { status: 200 };
});
const arrived = (path: string) => receiver.requests.filter((r) => r.path === path);

async function oneDelivery(answer: (n: number) => Behaviour, tenant?: Tenant) {
  const t = tenant ?? (await webhookTenant(svc));
  const path = `/r/${randomUUID()}`;
  scripts.set(path, answer);
  const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  await putBooking(svc, t.organization.id);
  return { t, hook, path };
}

const final = (d: DeliveryView[]) =>
  d.length === 1 && (d[0]?.status === 'succeeded' || d[0]?.status === 'dead');

// Each test has a tenant and a path of its own: they wait on their schedules side by side.
describe('retries', { concurrency: true }, () => {
  test('a 500 is retried on the schedule and is dead after the eighth attempt', async () => {
    const { t, hook, path } = await oneDelivery(() => ({ status: 500, body: 'database down' }));
    const [d] = await deliveriesUntil(svc, t, hook.id, final);
    assert.equal(d?.status, 'dead');
    assert.equal(d?.attempt, 8);
    assert.equal(d?.max_attempts, 8);
    assert.equal(d?.last_status, 500);
    assert.match(d?.last_error ?? '', /500/);
    assert.match(d?.last_error ?? '', /database down/, 'a snippet of what the receiver said');
    assert.equal(d?.next_retry_at, null);
    assert.equal(d?.delivered_at, null);
    const got = arrived(path);
    assert.deepEqual(
      got.map((r) => r.headers['x-svc-attempt']),
      ['1', '2', '3', '4', '5', '6', '7', '8'],
    );
    assert.equal(new Set(got.map((r) => r.headers['x-svc-delivery'])).size, 1, 'one X-SVC-Delivery');
    assert.equal(new Set(got.map((r) => r.headers['x-svc-event-id'])).size, 1);
    // Gaps of 50, 100 ... 350 ms (+ up to 10 %): each later than the last, none before its time.
    const gaps = got.slice(1).map((r, i) => r.receivedAt - (got[i]?.receivedAt ?? 0));
    [50, 100, 150, 200, 250, 300, 350].forEach((min, i) => {
      assert.ok((gaps[i] ?? 0) >= min - 5, `gap ${i + 1}: ${gaps[i]} ms, at least ${min}`);
    });
    const webhook = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }));
    assert.equal(webhook.consecutive_failures, 1, 'one delivery ended dead');
  });

  test('a permanent 4xx is dead after the third attempt', async () => {
    const { t, hook, path } = await oneDelivery(() => ({ status: 404 }));
    const [d] = await deliveriesUntil(svc, t, hook.id, final);
    assert.equal(d?.status, 'dead');
    assert.equal(d?.attempt, 3);
    assert.equal(d?.max_attempts, 3);
    assert.equal(d?.last_status, 404);
    assert.equal(arrived(path).length, 3);
  });

  for (const status of [408, 409, 425, 429]) {
    test(`${status} is not permanent: retried past the third attempt, then delivered`, async () => {
      const { t, hook, path } = await oneDelivery((n) => (n <= 4 ? { status } : { status: 204 }));
      const [d] = await deliveriesUntil(svc, t, hook.id, final);
      assert.equal(d?.status, 'succeeded');
      assert.equal(d?.attempt, 5);
      assert.equal(d?.last_status, 204);
      assert.equal(d?.last_error, null);
      assert.ok(d?.delivered_at);
      assert.equal(arrived(path).length, 5);
      const webhook = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }));
      assert.equal(webhook.consecutive_failures, 0, 'a success resets the count');
    });
  }

  test('a redirect is not followed: it is a failure naming where it pointed', async () => {
    const target = `/r/${randomUUID()}`;
    const { t, hook } = await oneDelivery((n) =>
      n === 1 ? { status: 302, headers: { location: receiver.url(target) } } : { status: 200 },
    );
    const [d] = await deliveriesUntil(svc, t, hook.id, final);
    assert.equal(d?.status, 'succeeded');
    assert.equal(d?.attempt, 2);
    assert.equal(arrived(target).length, 0, 'the Location was never requested');
    const failures = await svc.db.query<{ n: number }>(
      'SELECT consecutive_failures AS n FROM webhooks WHERE id = $1',
      [hook.id],
    );
    assert.equal(failures[0]?.n, 0);
  });

  test('a 302 keeps failing until dead, with the redirect in last_error', async () => {
    const { t, hook } = await oneDelivery(() => ({
      status: 301,
      headers: { location: 'https://example.com/' },
    }));
    const [d] = await deliveriesUntil(svc, t, hook.id, final);
    assert.equal(d?.status, 'dead');
    assert.equal(d?.attempt, 8);
    assert.equal(d?.last_status, 301);
    assert.match(d?.last_error ?? '', /example\.com/);
  });

  test('a receiver that hangs times out; a reset connection fails; both are retried', async () => {
    const hang = await oneDelivery((n) => (n === 1 ? { hang: true } : { status: 200 }));
    const reset = await oneDelivery((n) => (n === 1 ? { reset: true } : { status: 200 }));
    const [h] = await deliveriesUntil(svc, hang.t, hang.hook.id, final);
    const [r] = await deliveriesUntil(svc, reset.t, reset.hook.id, final);
    for (const d of [h, r]) {
      assert.equal(d?.status, 'succeeded');
      assert.equal(d?.attempt, 2);
    }
    const [first, second] = arrived(hang.path);
    // The first attempt was never answered: the sender gave it up (its time-out, whose length the
    // next test reads from the delivery) before it sent the second.
    assert.equal(first?.answeredAt, undefined, 'the hanging attempt got no answer');
    assert.ok(
      first?.closedAt !== undefined && (second?.receivedAt ?? 0) >= first.closedAt,
      'retried once given up',
    );
  });

  test('the last error of a time-out has no status and says so', async () => {
    const { t, hook } = await oneDelivery(() => ({ hang: true }));
    const [d] = await deliveriesUntil(
      svc,
      t,
      hook.id,
      (x) => (x[0]?.attempt ?? 0) >= 1 && x[0]?.status === 'failed',
    );
    assert.equal(d?.last_status, null);
    assert.ok((d?.last_duration_ms ?? 0) >= WEBHOOK_TIMEOUT_MS - 100, String(d?.last_duration_ms));
    assert.ok(d?.last_error);
    await svc.call('DELETE', `/webhooks/${hook.id}`, { key: t.key });
  });
});

// Graceful shutdown: the worker stops claiming, gives attempts in flight the grace period, then hands
// the unfinished ones back at once instead of leaving them to a lease that ends a minute later.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { putBooking } from '../support/feed.js';
import {
  createWebhook,
  deliveriesUntil,
  deliveryWorker,
  webhookService,
  webhookTenant,
} from '../support/webhooks.js';

const { svc, receiver } = await webhookService({
  SVC_WEBHOOK_TIMEOUT_MS: '30000',
  SVC_WEBHOOK_LEASE_SECONDS: '60',
});

test('attempts still in flight after the grace period are handed back, and the next worker sends them', async () => {
  receiver.respond((_req, n) => (n === 1 ? { hang: true } : { status: 200 }));
  const first = await deliveryWorker(svc);
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url('/shutdown'), ['booking.created']);
  await putBooking(svc, t.organization.id);
  const [hung] = await receiver.waitFor(1, 10_000);

  const stopping = Date.now();
  await first.stop(300);
  const took = Date.now() - stopping;
  assert.ok(took >= 300 && took < 3000, `stopped in ${took} ms`);
  const [row] = await svc.db.query<Record<string, unknown>>(
    `SELECT d.status, d.attempt, q.lease_token, q.next_retry_at <= now() AS queued_due, d.last_error,
            d.next_retry_at <= now() AS due
     FROM webhook_deliveries d JOIN delivery_queue q ON q.id = d.id WHERE d.webhook_id = $1`,
    [hook.id],
  );
  assert.equal(row?.status, 'failed');
  assert.equal(row?.attempt, 1);
  assert.equal(row?.lease_token, null);
  assert.equal(row?.due, true, 'due at once, not after the 60 s lease');
  assert.equal(row?.queued_due, true, 'in the queue, due at once');
  assert.match(String(row?.last_error), /interrumpido/);

  const second = await deliveryWorker(svc);
  try {
    const [, again] = await receiver.waitFor(2, 10_000);
    assert.equal(again?.headers['x-svc-delivery'], hung?.headers['x-svc-delivery']);
    assert.equal(again?.headers['x-svc-attempt'], '2');
  } finally {
    await second.stop(1000);
  }
});

test('a stopping worker writes each outcome as its attempt ends, not once the slowest has ended', async () => {
  // Both receivers answer when the test says: the order of events, not time, decides.
  const answer = new Map<string, () => void>();
  let bothArrived = () => {};
  const arrived = new Promise<void>((resolve) => {
    bothArrived = resolve;
  });
  receiver.respond((req) => ({
    custom: (res) => {
      answer.set(req.path, () => {
        res.writeHead(200);
        res.end('ok');
      });
      if (answer.size === 2) bothArrived();
    },
  }));
  const worker = await deliveryWorker(svc);
  const t = await webhookTenant(svc);
  const fast = await createWebhook(svc, t, receiver.url('/answers'), ['booking.created']);
  await createWebhook(svc, t, receiver.url('/still-working'), ['booking.created']);
  await putBooking(svc, t.organization.id);
  await Promise.race([
    arrived,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error('the attempts never arrived')), 10_000).unref(),
    ),
  ]);
  let stopped = false;
  const stopping = worker.stop(60_000).then(() => {
    stopped = true;
  });
  try {
    answer.get('/answers')?.();
    const [written] = await deliveriesUntil(svc, t, fast.id, (ds) => ds[0]?.status === 'succeeded', 10_000);
    assert.equal(written?.attempt, 1);
    assert.equal(stopped, false, 'written while the other attempt still ran');
  } finally {
    answer.get('/still-working')?.();
    await stopping;
  }
});

test('an idle worker stops at once', async () => {
  const worker = await deliveryWorker(svc);
  const started = Date.now();
  await worker.stop(10_000);
  assert.ok(Date.now() - started < 1000);
});

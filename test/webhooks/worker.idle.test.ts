// An idle worker polls less and less often (up to five times SVC_WEBHOOK_POLL_MS), and work that
// is announced still reaches it at once: a platform's idle workers cost the database next to nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { putBooking } from '../support/feed.js';
import { until } from '../support/wait.js';
import {
  arrivalsAt,
  claimsMade,
  createWebhook,
  deliveryWorker,
  webhookService,
  webhookTenant,
} from '../support/webhooks.js';

test('an idle worker backs off its polls, and an event committed still arrives at once', async () => {
  const { svc, receiver } = await webhookService({ SVC_WEBHOOK_POLL_MS: '100' });
  const t = await webhookTenant(svc);
  await createWebhook(svc, t, receiver.url('/idle'), ['booking.created']);
  await deliveryWorker(svc);
  // Idle from the start: the first polls come every 100 ms, then 200, 400, and 500 ms apart.
  await until('the worker has polled a few times', async () => (await claimsMade(svc)) >= 4, 5000);
  const from = await claimsMade(svc);
  await sleep(2000); // the rate of polls is what is measured
  const polls = (await claimsMade(svc)) - from;
  // Every 100 ms would be 20; backed off to 500 ms, 4 or 5.
  assert.ok(polls <= 8, `an idle worker polled ${polls} times in 2 s at SVC_WEBHOOK_POLL_MS=100`);
  assert.ok(polls >= 2, `an idle worker still polls (${polls} in 2 s)`);
  const sentAt = Date.now();
  await putBooking(svc, t.organization.id);
  const [arrived] = await arrivalsAt(receiver, '/idle', 1, 5000);
  assert.ok(arrived);
  assert.ok(
    Date.now() - sentAt < 400,
    `the event arrived ${Date.now() - sentAt} ms after its write, not at the next poll`,
  );
});

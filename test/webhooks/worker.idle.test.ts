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

/** A service whose one webhook goes to `path`, with a delivery worker polling every `pollMs`. */
async function idleWorker(pollMs: number, path: string) {
  const { svc, receiver } = await webhookService({ SVC_WEBHOOK_POLL_MS: String(pollMs) });
  const t = await webhookTenant(svc);
  await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  await deliveryWorker(svc);
  return { svc, receiver, t };
}

test('an idle worker backs off its polls', async () => {
  const { svc } = await idleWorker(100, '/idle');
  // Idle from the start: the first polls come every 100 ms, then 200, 400, and 500 ms apart.
  await until('the worker has polled a few times', async () => (await claimsMade(svc)) >= 4, 5000);
  const from = await claimsMade(svc);
  await sleep(2000); // the rate of polls is what is measured
  const polls = (await claimsMade(svc)) - from;
  // Every 100 ms would be 20; backed off to 500 ms, 4 or 5.
  assert.ok(polls <= 8, `an idle worker polled ${polls} times in 2 s at SVC_WEBHOOK_POLL_MS=100`);
  assert.ok(polls >= 2, `an idle worker still polls (${polls} in 2 s)`);
});

test('an event committed reaches an idle worker at once, not at its next poll', async () => {
  // Polls 10 s apart: an arrival within 3 s of the write was woken by the write's notification,
  // however slow the machine (at a poll of 100 ms, backed off to 500, a loaded machine's PUT and
  // attempt took 416 ms and could not be told from a poll).
  const { svc, receiver, t } = await idleWorker(10_000, '/woken');
  // The worker's first round, at its start; the next poll is 10 s away.
  await until('the worker has made its first round', async () => (await claimsMade(svc)) >= 1, 5000);
  await putBooking(svc, t.organization.id);
  const answeredAt = Date.now();
  const [arrived] = await arrivalsAt(receiver, '/woken', 1, 3000);
  assert.ok(arrived, 'the event arrived');
  assert.ok(
    Date.now() - answeredAt < 3000,
    `the event arrived ${Date.now() - answeredAt} ms after the write`,
  );
});

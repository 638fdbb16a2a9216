// Work that is announced reaches an idle worker at once, not at its next poll: idle workers can
// poll seldom and still deliver within milliseconds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
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
  const { svc, receiver } = await webhookService({
    SVC_WEBHOOK_POLL_MS: String(pollMs),
    SVC_WEBHOOK_WORKER_LEASE_MS: String(pollMs * 3),
  });
  const t = await webhookTenant(svc);
  await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  await deliveryWorker(svc);
  return { svc, receiver, t };
}

test('an event committed reaches an idle worker at once, not at its next poll', async () => {
  // Polls 10 s apart: an arrival within 3 s of the write was woken by the write's notification,
  // however slow the machine.
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

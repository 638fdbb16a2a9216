// Who publishes the platform's writes. The process that wrote an event publishes it (the feed's
// answer waits for that); a worker publishes only what a writer left behind (LEFT_BEHIND_MS after
// the commit's notification, or at its poll), so it never races a writer for the publisher's lock.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { LEFT_BEHIND_MS } from '../../src/delivery/worker.js';
import type { BookingInput } from '../../src/operator/feed/booking-schemas.js';
import { upsertBooking } from '../../src/operator/feed/bookings.js';
import type { TestService } from '../support/context.js';
import { bookingBody } from '../support/feed.js';
import {
  arrivalsAt,
  createWebhook,
  deliveryWorker,
  webhookService,
  webhookTenant,
} from '../support/webhooks.js';

/** A booking written and committed by a writer that never publishes it (it stopped after its commit). */
async function writeUnpublished(svc: TestService, orgId: string) {
  const id = randomUUID();
  await svc.db.tx((q) => upsertBooking(q, orgId, id, bookingBody() as BookingInput));
  return { id, committedAt: Date.now() };
}

/** When the event of a booking entered the log (its stamp is set when it is published). */
async function publishedAt(svc: TestService, bookingId: string) {
  const [event] = await svc.db.query<{ created_at: Date }>(
    'SELECT created_at FROM events WHERE resource_id = $1',
    [bookingId],
  );
  assert.ok(event, 'the event is in the log');
  return event.created_at.getTime();
}

test('a worker publishes what a writer left behind, once it waited', async () => {
  const { svc, receiver } = await webhookService();
  const t = await webhookTenant(svc);
  await createWebhook(svc, t, receiver.url('/left'), ['booking.created']);
  await deliveryWorker(svc);
  const { id, committedAt } = await writeUnpublished(svc, t.organization.id);
  const [arrival] = await arrivalsAt(receiver, '/left', 1, 10_000);
  assert.equal(arrival?.headers['x-svc-event'], 'booking.created');
  const waited = (await publishedAt(svc, id)) - committedAt;
  assert.ok(waited >= LEFT_BEHIND_MS - 5, `published ${waited} ms after its commit, before its writer could`);
});

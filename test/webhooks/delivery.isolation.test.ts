// A receiver that hangs holds at most SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK of the worker's attempts,
// so deliveries to other webhooks go on at once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { putBooking } from '../support/feed.js';
import { createWebhook, webhookHarness, webhookTenant } from '../support/webhooks.js';

const { svc, receiver } = await webhookHarness({
  SVC_WEBHOOK_CONCURRENCY: '6',
  SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '2',
  // Long enough that no hanging attempt ends during the test, even on a busy machine: the other
  // webhook must be served while they all still hang.
  SVC_WEBHOOK_TIMEOUT_MS: '20000',
  SVC_WEBHOOK_LEASE_SECONDS: '30',
});

test('thirty deliveries stuck on a hanging receiver do not delay another webhook', async () => {
  const slow = `/slow/${randomUUID()}`;
  const fast = `/fast/${randomUUID()}`;
  receiver.respond((req) => (req.path === slow ? { hang: true } : { status: 200 }));
  const stuck = await webhookTenant(svc);
  const other = await webhookTenant(svc);
  const hook = await createWebhook(svc, stuck, receiver.url(slow), ['booking.created']);
  await createWebhook(svc, other, receiver.url(fast), ['booking.created']);
  for (let i = 0; i < 30; i++) await putBooking(svc, stuck.organization.id);
  // The slow receiver now holds its two slots; without the per-webhook bound it would hold all six.
  const until = Date.now() + 5000;
  while (receiver.requests.filter((r) => r.path === slow).length < 2 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 10));
  }
  // The bound holds in the database: two leased (both attempted), the others due and waiting.
  const states = await svc.db.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM delivery_states WHERE webhook_id = $1 GROUP BY status ORDER BY status`,
    [hook.id],
  );
  assert.deepEqual(states, [
    { status: 'delivering', n: 2 },
    { status: 'pending', n: 28 },
  ]);
  assert.equal(receiver.requests.filter((r) => r.path === slow).length, 2, 'two in flight, no more');
  const sent = Date.now();
  await putBooking(svc, other.organization.id);
  while (!receiver.requests.some((r) => r.path === fast)) {
    assert.ok(Date.now() - sent < 10_000, 'the other webhook waited for the hanging one');
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(receiver.requests.filter((r) => r.path === slow).length, 2, 'served while both still hang');
  const inFlight = await svc.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM delivery_states WHERE webhook_id = $1 AND status = 'delivering'`,
    [hook.id],
  );
  assert.equal(inFlight[0]?.n, 2, 'the hanging webhook holds its leases, the rest wait their turn');
});

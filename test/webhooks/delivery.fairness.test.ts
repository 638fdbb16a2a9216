// One webhook's backlog never holds up another tenant: the claim takes each webhook's oldest due
// rows, within its bound, however deep any backlog is, and the worker sleeps while everything due
// waits for a slot instead of asking again and again.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, test } from 'node:test';
import { publishEvents } from '../../src/delivery/publish.js';
import { putBooking } from '../support/feed.js';
import { until } from '../support/wait.js';
import {
  claimsMade,
  createWebhook,
  deliveryWorker,
  webhookHarness,
  webhookTenant,
} from '../support/webhooks.js';

const IDLE_GAP_MS = 200;
const { svc, receiver } = await webhookHarness({
  SVC_WEBHOOK_CONCURRENCY: '8',
  SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '4',
  // No hanging attempt ends during the file, however slow the machine.
  SVC_WEBHOOK_TIMEOUT_MS: '120000',
  SVC_WEBHOOK_LEASE_SECONDS: '180',
  // A claim that took nothing is not repeated on a notification sooner than this. Wider than the
  // default so that sixty events arrive faster than it even on a loaded machine (at 50 ms, events
  // 45 ms apart each gave both workers a claim, legitimately).
  SVC_WEBHOOK_IDLE_GAP_MS: String(IDLE_GAP_MS),
});

const claims = () => claimsMade(svc);
// The receiver hangs on the paths the tests add here, for the whole file: a test's hanging webhook
// must not start answering in the next test (its backlog would then drain at full speed, a claim at
// each attempt that ends, and be counted as the next test's claims).
const hanging = new Set<string>();
receiver.respond((req) => (hanging.has(req.path) ? { hang: true } : { status: 200 }));

test('2,000 due deliveries on a hanging receiver: another organization is served within a second', async () => {
  const slow = `/slow/${randomUUID()}`;
  const fast = `/fast/${randomUUID()}`;
  hanging.add(slow);
  const stuck = await webhookTenant(svc);
  const other = await webhookTenant(svc);
  await createWebhook(svc, stuck, receiver.url(slow), ['booking.created']);
  await createWebhook(svc, other, receiver.url(fast), ['booking.created']);
  // A bulk import: 2,000 bookings in one statement, 2,000 deliveries due at once.
  await svc.db.query(
    `INSERT INTO bookings (id, originator_organization_id, reference, status, service_type, pickup_at, passengers)
     SELECT gen_random_uuid(), $1, $2 || n, 'solicitada', 'transfer', now(), '{}'
     FROM generate_series(1000, 2999) AS n`,
    [stuck.organization.id, stuck.organization.code],
  );
  await publishEvents(svc.db);
  const [queued] = await svc.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
     WHERE w.organization_id = $1`,
    [stuck.organization.id],
  );
  assert.equal(queued?.n, 2000);
  const until = Date.now() + 10_000;
  while (receiver.requests.filter((r) => r.path === slow).length < 4) {
    assert.ok(Date.now() < until, 'the hanging receiver got its four attempts');
    await new Promise((r) => setTimeout(r, 10));
  }

  // Blocked: everything due waits for a slot of the hanging webhook. The worker sleeps.
  const before = await claims();
  await new Promise((r) => setTimeout(r, 1000));
  const blockedClaims = (await claims()) - before;
  assert.ok(blockedClaims <= 3, `${blockedClaims} claims in a second while blocked`);

  const sent = Date.now();
  await putBooking(svc, other.organization.id);
  while (!receiver.requests.some((r) => r.path === fast)) {
    assert.ok(Date.now() - sent < 1000, 'the other organization waited behind the backlog');
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.equal(receiver.requests.filter((r) => r.path === slow).length, 4, 'four in flight, no more');
});

test('events streaming in for a webhook held at its bound: two workers claim a few times, not at each event', async () => {
  const second = await deliveryWorker(svc);
  after(() => second.stop(100));
  const held = `/held/${randomUUID()}`;
  hanging.add(held);
  const t = await webhookTenant(svc);
  await createWebhook(svc, t, receiver.url(held), ['booking.created']);
  // Eight deliveries: four attempts hang at the bound, four wait due behind them.
  for (let i = 0; i < 8; i++) await putBooking(svc, t.organization.id);
  await until('four attempts hang', () => receiver.requests.filter((r) => r.path === held).length === 4);
  await until('four deliveries held', async () => {
    const [row] = await svc.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delivery_states d JOIN webhooks w ON w.id = d.webhook_id
       WHERE w.organization_id = $1 AND d.status = 'delivering'`,
      [t.organization.id],
    );
    return row?.n === 4;
  });

  // Sixty events through the feed, each publish its own notification: nothing either worker can take.
  const EVENTS = 60;
  const before = await claims();
  const started = Date.now();
  for (let i = 0; i < EVENTS; i += 4) {
    await Promise.all([0, 1, 2, 3].map(() => putBooking(svc, t.organization.id)));
  }
  await until('every event fanned out', async () => {
    const [row] = await svc.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
       WHERE w.organization_id = $1`,
      [t.organization.id],
    );
    return row?.n === 8 + EVENTS;
  });
  const elapsed = Date.now() - started;
  const made = (await claims()) - before;
  // At most one claim per worker per gap, plus the first of each and those that start between the
  // last fan-out and the count; at every event it was 2 each.
  const most = 2 * (Math.ceil(elapsed / IDLE_GAP_MS) + 4);
  assert.ok(made <= most, `${made} claims for ${EVENTS} events in ${elapsed} ms (at most ${most})`);
  // The bound tells the two apart only while the events came faster than the gap.
  assert.ok(most < EVENTS, `${EVENTS} events took ${elapsed} ms: the test cannot tell`);
});

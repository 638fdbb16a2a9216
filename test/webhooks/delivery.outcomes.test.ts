// Outcomes are written once, by the holder of the lease, even when the database stumbles: a write
// that fails is tried again until shortly before the lease ends, so a delivered attempt is not sent
// a second time; an outcome that arrives after its lease was lost does not count.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { releaseExpiredLeases } from '../../src/delivery/engine.js';
import { putBooking } from '../support/feed.js';
import type { ReceivedRequest } from '../support/https-receiver.js';
import { until } from '../support/wait.js';
import { createWebhook, deliveriesUntil, webhookHarness, webhookTenant } from '../support/webhooks.js';

const { svc, receiver, worker } = await webhookHarness({
  SVC_WEBHOOK_TIMEOUT_MS: '3000',
  SVC_WEBHOOK_LEASE_SECONDS: '10',
});

const attempts = async (outcome: string) => {
  const metric = await svc.deps.metrics.registry.getSingleMetric('svc_webhook_attempts_total')?.get();
  return metric?.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
};

test('a failed outcome write is tried again: the delivery is recorded once and sent once', async () => {
  const t = await webhookTenant(svc);
  const path = `/hiccup/${randomUUID()}`;
  receiver.respond((req: ReceivedRequest) => (req.path === path ? { status: 200 } : { status: 200 }));
  const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  // The database refuses the first three outcome writes, as it would during a fail-over.
  await svc.db.exec(`
    CREATE SEQUENCE outcome_hiccups;
    CREATE FUNCTION refuse_outcomes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF nextval('outcome_hiccups') <= 3 THEN RAISE EXCEPTION 'database hiccup'; END IF;
      RETURN OLD;
    END $$;
    CREATE TRIGGER refuse_outcomes BEFORE DELETE ON delivery_queue FOR EACH ROW
      WHEN (OLD.lease_owner IS NOT NULL) EXECUTE FUNCTION refuse_outcomes();`);
  try {
    const succeeded = await attempts('2xx');
    await putBooking(svc, t.organization.id);
    // Read from the table: the engine's writes are what is under test.
    const row = async () =>
      (
        await svc.db.query<{ status: string; attempt: number }>(
          'SELECT status, attempt FROM webhook_deliveries WHERE webhook_id = $1',
          [hook.id],
        )
      )[0];
    await until('the outcome is written', async () => (await row())?.status === 'succeeded');
    const d = await row();
    const [seq] = await svc.db.query<{ last_value: string }>('SELECT last_value FROM outcome_hiccups');
    assert.ok(Number(seq?.last_value) >= 4, 'three writes were refused before this one');
    assert.equal(d?.attempt, 1);
    assert.equal(receiver.requests.filter((r) => r.path === path).length, 1, 'sent once');
    assert.equal((await attempts('2xx')) - succeeded, 1, 'counted once, when written');
  } finally {
    await svc.db.exec('DROP TRIGGER refuse_outcomes ON delivery_queue; DROP FUNCTION refuse_outcomes()');
  }
});

test('a lease that ends while its attempt still runs: the late outcome is not written nor counted', async () => {
  const t = await webhookTenant(svc);
  const path = `/late/${randomUUID()}`;
  // The first attempt answers after 1.5 s; the second at once.
  receiver.respond((req: ReceivedRequest) =>
    req.path === path && req.headers['x-svc-attempt'] === '1'
      ? { status: 200, delayMs: 1500 }
      : { status: 200 },
  );
  const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  const succeeded = await attempts('2xx');
  await putBooking(svc, t.organization.id);
  await until('the first attempt arrived', () => receiver.requests.some((r) => r.path === path));
  // The lease ends under the running attempt (its worker looks hung), and another round takes the
  // delivery back and sends it again.
  await svc.db.query(
    `UPDATE delivery_queue SET lease_until = now() - interval '1 second' WHERE webhook_id = $1`,
    [hook.id],
  );
  assert.equal(await releaseExpiredLeases(svc.db), 1);
  worker.wake();
  const [d] = await deliveriesUntil(svc, t, hook.id, (x) => x[0]?.status === 'succeeded');
  assert.equal(d?.attempt, 2, 'the second attempt holds the delivery');
  // The first attempt ends after the second; its outcome is refused.
  await until(
    'the first attempt was answered',
    () => Date.now() - (receiver.requests[0]?.receivedAt ?? 0) > 1700,
  );
  await until('both outcomes are settled', async () => (await attempts('2xx')) - succeeded >= 1);
  await new Promise((r) => setTimeout(r, 50));
  const sent = receiver.requests.filter((r) => r.path === path).map((r) => r.headers['x-svc-attempt']);
  assert.deepEqual(sent, ['1', '2']);
  assert.equal((await attempts('2xx')) - succeeded, 1, 'only the lease holder is counted');
  const [row] = await svc.db.query<{ attempt: number; status: string }>(
    'SELECT attempt, status FROM webhook_deliveries WHERE webhook_id = $1',
    [hook.id],
  );
  assert.deepEqual(row, { attempt: 2, status: 'succeeded' });
});

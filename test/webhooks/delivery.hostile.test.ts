// A tenant whose every webhook hangs cannot stall the others: one integration's ten webhooks (the
// contract's maximum) at a receiver that never answers, a backlog of retries due behind them, and
// another organization's deliveries still arrive within a second, with the default budget and bound.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { putBooking } from '../support/feed.js';
import { until } from '../support/wait.js';
import { arrivalsAt, createWebhook, webhookHarness, webhookTenant } from '../support/webhooks.js';

const { svc, receiver } = await webhookHarness({
  // No hanging attempt ends during the test: the others are served while all of them hang.
  SVC_WEBHOOK_TIMEOUT_MS: '60000',
  SVC_WEBHOOK_LEASE_SECONDS: '90',
});

test('ten webhooks at a receiver that never answers: another organization’s deliveries arrive within a second', async () => {
  const hang = `/hang/${randomUUID()}`;
  const ok = `/ok/${randomUUID()}`;
  receiver.respond((req) => (req.path.startsWith(hang) ? { hang: true } : { status: 200 }));
  const hostile = await webhookTenant(svc);
  for (let i = 0; i < 10; i++)
    await createWebhook(svc, hostile, receiver.url(`${hang}/${i}`), ['booking.created']);
  const other = await webhookTenant(svc);
  await createWebhook(svc, other, receiver.url(ok), ['booking.created']);

  // Twelve events to each hanging webhook: four attempts of each hang (the bound), the rest due.
  for (let i = 0; i < 12; i++) await putBooking(svc, hostile.organization.id);
  await until(
    'forty attempts hang',
    () => receiver.requests.filter((r) => r.path.startsWith(hang)).length >= 40,
  );
  // Retries of an earlier round, due now, queued behind them.
  await svc.db.query(
    `UPDATE webhook_deliveries d SET status = 'failed', attempt = 1, last_error = 'tiempo de espera agotado'
     FROM delivery_queue q JOIN webhooks w ON w.id = q.webhook_id
     WHERE q.id = d.id AND q.lease_owner IS NULL AND w.organization_id = $1`,
    [hostile.organization.id],
  );

  const latencies: number[] = [];
  for (let i = 0; i < 20; i++) {
    await putBooking(svc, other.organization.id);
    const answered = Date.now();
    const arrivals = await arrivalsAt(receiver, ok, i + 1, 10_000);
    latencies.push((arrivals[i]?.receivedAt ?? Number.POSITIVE_INFINITY) - answered);
  }
  latencies.sort((a, b) => a - b);
  const p99 = latencies[Math.ceil(latencies.length * 0.99) - 1] as number;
  assert.ok(p99 <= 1000, `the other organization's p99 was ${p99} ms (${latencies.join(', ')})`);
  // Served while every hanging attempt still hangs, and the hostile tenant held no more than its bound.
  const hanging = receiver.requests.filter((r) => r.path.startsWith(hang));
  assert.equal(hanging.length, 40, 'four attempts per hanging webhook, no more');
  assert.ok(
    hanging.every((r) => r.answeredAt === undefined),
    'none of them had ended',
  );
});

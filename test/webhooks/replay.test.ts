// An operator's replay of dead deliveries after a receiver was down past the whole retry span:
// queued again under their delivery ids, in event order, the schedule starting over; another
// webhook's and another organization's deliveries never touched; limited, validated and audited.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { putBooking } from '../support/feed.js';
import type { ReceivedRequest } from '../support/https-receiver.js';
import { expectOk } from '../support/tenants.js';
import { createWebhook, deliveriesUntil, webhookHarness, webhookTenant } from '../support/webhooks.js';

// One attempt at a time per webhook, so arrivals show the order deliveries were queued in.
const { svc, receiver } = await webhookHarness({ SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '1' });
const down = new Set<string>();
// A receiver that is gone answers 404: dead at the third attempt.
receiver.respond((req: ReceivedRequest) => (down.has(req.path) ? { status: 404 } : { status: 200 }));
const arrivals = (path: string) => receiver.requests.filter((r) => r.path === path);
const replay = (id: string, body: Record<string, unknown>) =>
  svc.op('POST', `/webhooks/${id}/deliveries/replay`, body);

async function deadWebhook(events: number) {
  const t = await webhookTenant(svc);
  const path = `/down/${randomUUID()}`;
  down.add(path);
  const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  for (let i = 0; i < events; i++) await putBooking(svc, t.organization.id);
  const dead = await deliveriesUntil(
    svc,
    t,
    hook.id,
    (d) => d.length === events && d.every((x) => x.status === 'dead'),
    20_000,
  );
  return { t, path, hook, dead };
}

test('dead deliveries are queued again under their ids, in event order, counting on from where they ended', async () => {
  const since = new Date(Date.now() - 1000).toISOString();
  const a = await deadWebhook(3);
  const b = await deadWebhook(1);
  down.delete(a.path);
  const sentBefore = arrivals(a.path).length;

  const res = await replay(a.hook.id, { since, organization_id: a.t.organization.id });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body, { webhook_id: a.hook.id, organization_id: a.t.organization.id, replayed: 3 });
  const audit = svc.logs.map((l) => JSON.parse(l)).find((l) => l.audit === 'webhook_deliveries.replay');
  assert.equal(audit?.webhook, a.hook.id);
  assert.equal(audit?.replayed, 3);

  const after = await deliveriesUntil(svc, a.t, a.hook.id, (d) => d.every((x) => x.status === 'succeeded'));
  assert.deepEqual(
    after.map((d) => d.id).sort(),
    a.dead.map((d) => d.id).sort(),
    'the same delivery ids, no new deliveries',
  );
  for (const d of after) {
    assert.equal(d.attempt, 4, 'attempt counts on');
    assert.equal(d.max_attempts, 11, 'eight more attempts allowed');
    assert.equal(d.last_status, 200);
  }
  const replayed = arrivals(a.path).slice(sentBefore);
  assert.equal(replayed.length, 3);
  assert.deepEqual(
    replayed.map((r) => r.headers['x-svc-event-id']),
    [...a.dead].reverse().map((d) => d.event_id),
    'in event order',
  );
  assert.ok(replayed.every((r) => r.headers['x-svc-attempt'] === '4'));
  const body = JSON.parse(replayed[0]?.body ?? '{}');
  assert.equal(body.type, 'booking.created');
  assert.ok(body.data?.id, 'the body carries the booking (as it is now)');

  // The other organization's webhook was not touched.
  const other = await deliveriesUntil(svc, b.t, b.hook.id, () => true);
  assert.deepEqual(
    other.map((d) => [d.status, d.attempt]),
    [['dead', 3]],
  );
});

test('another organization, a missing webhook, an inactive one and bad filters are refused', async () => {
  const since = new Date(Date.now() - 1000).toISOString();
  const a = await deadWebhook(1);
  const stranger = await webhookTenant(svc);
  const wrongOrg = await replay(a.hook.id, { since, organization_id: stranger.organization.id });
  assert.equal(wrongOrg.status, 404);
  assert.equal(wrongOrg.body.error.code, 'not_found');
  assert.equal((await replay(randomUUID(), { since })).status, 404);

  for (const bad of [
    {},
    { since: 'yesterday' },
    { since, status: 'failed' },
    { since, limit: 10_001 },
    { since, until: since },
    { since, extra: true },
  ]) {
    const res = await replay(a.hook.id, bad);
    assert.equal(res.status, 400, JSON.stringify(bad));
    assert.equal(res.body.error.code, 'validation_error');
    assert.ok(res.body.error.details, 'details name the field');
  }

  expectOk(await svc.call('PATCH', `/webhooks/${a.hook.id}`, { key: a.t.key, body: { active: false } }));
  const inactive = await replay(a.hook.id, { since });
  assert.equal(inactive.status, 409);
  assert.equal(inactive.body.error.code, 'conflict');
  const [d] = await deliveriesUntil(svc, a.t, a.hook.id, () => true);
  assert.equal(d?.status, 'dead', 'nothing replayed');
});

test('since, until and limit choose which dead deliveries go back', async () => {
  const a = await deadWebhook(3);
  down.delete(a.path);
  const oldest = [...a.dead].sort((x, y) => Date.parse(x.created_at) - Date.parse(y.created_at));
  const res = await replay(a.hook.id, {
    since: new Date(Date.parse(oldest[0]?.created_at ?? '') - 1).toISOString(),
    until: oldest[2]?.created_at,
    limit: 1,
  });
  assert.equal(res.body.replayed, 1);
  const after = await deliveriesUntil(svc, a.t, a.hook.id, (d) => d.some((x) => x.status === 'succeeded'));
  assert.deepEqual(
    after.filter((d) => d.status === 'succeeded').map((d) => d.id),
    [oldest[0]?.id],
    'the oldest, within the window, one only',
  );
});

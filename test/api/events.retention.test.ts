import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { EVENT_RETENTION_BATCH } from '../../src/api/events/retention.js';
import { eventRetentionTask, MAINTENANCE_TASKS, runMaintenance } from '../../src/maintenance.js';
import { startService, type TestService } from '../support/context.js';
import { createTenant } from '../support/tenants.js';

const DAY = 24 * 60 * 60 * 1000;
let svc: TestService;
before(async () => {
  svc = await startService({ SVC_EVENT_RETENTION_DAYS: '45' });
});
after(() => svc.close());

/** `n` events of the organization created `ageMs` before the service's clock. */
async function eventsAged(orgId: string, n: number, ageMs: number) {
  await svc.db.query(
    `INSERT INTO events (organization_id, type, resource_id, created_at)
     SELECT $1, 'booking.updated', $2, $3::timestamptz FROM generate_series(1, $4)`,
    [orgId, randomUUID(), new Date(svc.clock.now() - ageMs), n],
  );
}

const count = async (orgId: string) =>
  (
    await svc.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE organization_id = $1', [
      orgId,
    ])
  )[0]?.n;

test('events older than SVC_EVENT_RETENTION_DAYS go, in batches; younger ones stay', async () => {
  assert.equal(svc.config.eventRetentionDays, 45);
  const t = await createTenant(svc);
  const org = t.organization.id;
  const old = EVENT_RETENTION_BATCH * 2 + 7;
  await eventsAged(org, old, 45 * DAY + 1);
  await eventsAged(org, 3, 400 * DAY);
  await eventsAged(org, 4, 45 * DAY); // exactly at the limit: kept
  await eventsAged(org, 5, 31 * DAY); // beyond the contract's 30 days but inside ours: kept
  const removed = await eventRetentionTask.run({ db: svc.db, config: svc.config, now: svc.clock.now });
  assert.equal(removed, old + 3);
  assert.equal(await count(org), 9);
  assert.equal(await eventRetentionTask.run({ db: svc.db, config: svc.config, now: svc.clock.now }), 0);
  // Time passes: the ones at the limit age out next.
  svc.clock.advance(1);
  assert.equal(await eventRetentionTask.run({ db: svc.db, config: svc.config, now: svc.clock.now }), 4);
  assert.equal(await count(org), 5);
});

test('the task is one of the periodic maintenance tasks and runs with them', async () => {
  assert.ok(MAINTENANCE_TASKS.includes(eventRetentionTask));
  const t = await createTenant(svc);
  await eventsAged(t.organization.id, 2, 46 * DAY);
  await runMaintenance({ db: svc.db, config: svc.config, now: svc.clock.now, logger: svc.deps.logger });
  assert.equal(await count(t.organization.id), 0);
});

test('30 days is the default', async () => {
  const other = await startService();
  try {
    assert.equal(other.config.eventRetentionDays, 30);
    const t = await createTenant(other);
    const at = (ms: number) => new Date(other.clock.now() - ms);
    await other.db.query(
      `INSERT INTO events (organization_id, type, resource_id, created_at)
       VALUES ($1, 'booking.created', $2, $3), ($1, 'booking.created', $2, $4)`,
      [t.organization.id, randomUUID(), at(30 * DAY + 1), at(30 * DAY - 1)],
    );
    assert.equal(
      await eventRetentionTask.run({ db: other.db, config: other.config, now: other.clock.now }),
      1,
    );
  } finally {
    await other.close();
  }
});

test('an old event stays while one of its deliveries is unfinished, and goes with its history after', async () => {
  const t = await createTenant(svc, { flags: { webhooks_enabled: true } });
  const org = t.organization.id;
  await eventsAged(org, 2, 46 * DAY);
  const [webhook] = await svc.db.query<{ id: string }>(
    `INSERT INTO webhooks (integration_id, organization_id, url, events, secret)
     VALUES ($1, $2, 'https://example.com/', '{*}', '\\x00') RETURNING id`,
    [t.integration.id, org],
  );
  const events = await svc.db.query<{ id: string }>('SELECT id FROM events WHERE organization_id = $1', [
    org,
  ]);
  for (const [i, status] of ['failed', 'succeeded'].entries()) {
    await svc.db.query(
      `INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, status) VALUES ($1, $2, 'booking.updated', $3)`,
      [webhook?.id, events[i]?.id, status],
    );
  }
  assert.equal(await eventRetentionTask.run({ db: svc.db, config: svc.config, now: svc.clock.now }), 1);
  const left = await svc.db.query<{ id: string }>('SELECT id FROM events WHERE organization_id = $1', [org]);
  assert.deepEqual(left, [{ id: events[0]?.id }], 'the one still being retried');
  await svc.db.query(`UPDATE webhook_deliveries SET status = 'dead' WHERE webhook_id = $1`, [webhook?.id]);
  assert.equal(await eventRetentionTask.run({ db: svc.db, config: svc.config, now: svc.clock.now }), 1);
  const history = await svc.db.query('SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1', [webhook?.id]);
  assert.equal(history.length, 0);
});

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { publishEvents } from '../../src/delivery/publish.js';
import { planBookings, type Side } from '../../src/demo/bookings.js';
import { PARTNER_CODE } from '../../src/demo/data.js';
import { DEMO_CODE, prepareDemo } from '../../src/demo/demo.js';
import { seededRandom } from '../../src/demo/random.js';
import { INTERNAL_STATUSES } from '../../src/domain/bookings.js';
import { startService, type TestService } from '../support/context.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

const DAY = 86_400_000;

test('the demo seeds a catalogue, the exchange and bookings of every status', async () => {
  const demo = await prepareDemo(svc.deps);
  const now = Date.now();

  const [org] = await svc.db.query<{ id: string; code: string }>(
    'SELECT id, code FROM organizations WHERE code = $1',
    [DEMO_CODE],
  );
  const [partner] = await svc.db.query<{ id: string; name: string; outbox_enabled: boolean }>(
    'SELECT id, name, outbox_enabled FROM organizations WHERE code = $1',
    [PARTNER_CODE],
  );
  assert.equal(org?.id, demo.organizationId);
  assert.deepEqual(
    { name: partner?.name, outbox: partner?.outbox_enabled },
    { name: 'Partner Transfers', outbox: true },
  );

  const customers = await svc.db.query<{ type: string; active: boolean; group_id: string | null }>(
    'SELECT type, active, group_id FROM customers WHERE organization_id = $1',
    [demo.organizationId],
  );
  assert.equal(customers.length, 8);
  assert.equal(customers.filter((c) => c.type === 'public_engine').length, 1);
  assert.equal(customers.filter((c) => !c.active).length, 1);
  assert.ok(customers.some((c) => c.group_id !== null));
  for (const id of [demo.organizationId, partner?.id]) {
    const [counts] = await svc.db.query<{ drivers: number; vehicles: number }>(
      `SELECT (SELECT count(*) FROM drivers WHERE organization_id = $1) AS drivers,
              (SELECT count(*) FROM vehicles WHERE organization_id = $1) AS vehicles`,
      [id],
    );
    assert.deepEqual(counts, { drivers: 6, vehicles: 6 });
  }

  const own = await svc.db.query<{
    status: string;
    service_type: string;
    executor_organization_id: string | null;
    pickup_at: Date;
    created_at: Date;
    reference: string;
  }>(
    'SELECT status, service_type, executor_organization_id, pickup_at, created_at, reference FROM bookings WHERE originator_organization_id = $1',
    [demo.organizationId],
  );
  assert.equal(own.length, 60);
  assert.deepEqual([...new Set(own.map((b) => b.status))].sort(), [...INTERNAL_STATUSES].sort());
  assert.deepEqual([...new Set(own.map((b) => b.service_type))].sort(), ['hourly', 'transfer']);
  assert.ok(own.filter((b) => b.executor_organization_id === partner?.id).length >= 5);
  for (const b of own) {
    assert.ok(b.pickup_at.getTime() >= now - 61 * DAY && b.pickup_at.getTime() <= now + 31 * DAY);
    assert.ok(b.created_at.getTime() <= now && b.created_at.getTime() >= now - 61 * DAY);
    assert.ok(b.reference.startsWith(DEMO_CODE));
  }
  const received = await svc.db.query<{ driver_id: string | null; reference: string }>(
    'SELECT driver_id, reference FROM bookings WHERE originator_organization_id = $1 AND executor_organization_id = $2',
    [partner?.id, demo.organizationId],
  );
  assert.equal(received.length, 8);
  assert.ok(received.some((b) => b.driver_id !== null));
  assert.ok(received.every((b) => b.reference.startsWith(PARTNER_CODE)));

  // Events enter the log when the publisher (a worker's job) takes them from the outbox.
  await publishEvents(svc.db);
  const types = await svc.db.query<{ type: string }>(
    'SELECT DISTINCT type FROM events WHERE organization_id = $1',
    [demo.organizationId],
  );
  for (const type of [
    'booking.created',
    'booking.assigned',
    'booking.started',
    'booking.updated',
    'booking.completed',
  ]) {
    assert.ok(
      types.some((t) => t.type === type),
      type,
    );
  }

  const res = await svc.call('GET', `/bookings/${demo.bookingReference}`, { key: demo.key });
  assert.equal(res.status, 200, res.text);
});

test('the plan is the same on every run for the same instant', () => {
  const side = (id: string, code: string): Side => ({
    id,
    code,
    customers: [{ id: `${id}-c`, name: 'C', type: 'account', active: true }],
    fleet: { drivers: [`${id}-d`], vehicles: [{ id: `${id}-v`, category: 'sedan', seats: 4 }] },
  });
  const now = Date.parse('2026-06-01T12:00:00.000Z');
  const plan = () => planBookings(seededRandom(7), now, side('a', '100'), side('b', '200'));
  assert.deepEqual(plan(), plan());
  assert.equal(plan().length, 68);
});

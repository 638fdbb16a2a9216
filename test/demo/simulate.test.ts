// The sandbox's simulated traffic: bookings of the demo organization walk their life cycle through
// the feed's service functions, one event per change, the same changes for the same seed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { publishEvents } from '../../src/delivery/publish.js';
import { prepareDemo } from '../../src/demo/demo.js';
import { createSimulator, type SimulatedStep, startSimulation } from '../../src/demo/simulate.js';
import { startService, type TestService } from '../support/context.js';

let svc: TestService;
let organizationId: string;
before(async () => {
  svc = await startService();
  organizationId = (await prepareDemo(svc.deps)).organizationId;
  await publishEvents(svc.db);
});
after(() => svc.close());

const EVENT_OF: Record<SimulatedStep['change'], string> = {
  created: 'booking.created',
  confirmed: 'booking.updated',
  rejected: 'booking.updated',
  assigned: 'booking.assigned',
  en_route: 'booking.started',
  in_progress: 'booking.updated',
  completed: 'booking.completed',
  cancelled: 'booking.cancelled',
  no_show: 'booking.no_show',
};

/** Every life cycle the simulation may walk, as the changes in order. */
const PATHS = [
  'created confirmed assigned en_route in_progress completed',
  'created confirmed assigned en_route no_show',
  'created confirmed assigned cancelled',
  'created confirmed cancelled',
  'created rejected',
  'created assigned en_route in_progress completed',
  'created assigned en_route no_show',
  'created assigned cancelled',
  'created cancelled',
];

async function run(seed: number, count: number): Promise<SimulatedStep[]> {
  const simulator = await createSimulator(svc.db, organizationId, seed);
  const steps: SimulatedStep[] = [];
  for (let i = 0; i < count; i += 1) steps.push(await simulator.step());
  return steps;
}

test('the same seed makes the same changes; each booking walks a real life cycle, one event a change', async () => {
  const first = await run(7, 80);
  const again = await run(7, 80);
  const other = await run(8, 80);
  const changes = (steps: SimulatedStep[]) => steps.map((s) => s.change);
  assert.deepEqual(changes(again), changes(first));
  assert.notDeepEqual(changes(other), changes(first));
  assert.equal(
    new Set(first.map((s) => s.bookingId)).size,
    first.filter((s) => s.change === 'created').length,
  );
  assert.ok(
    first.every((s) => !again.some((a) => a.bookingId === s.bookingId)),
    'a second run makes new bookings',
  );
  assert.deepEqual(
    new Set(changes(first)),
    new Set(Object.keys(EVENT_OF)),
    'created, confirmed, rejected, assigned, en route, in progress, completed, cancelled and no-show',
  );

  const byBooking = new Map<string, string[]>();
  for (const s of first) byBooking.set(s.bookingId, [...(byBooking.get(s.bookingId) ?? []), s.change]);
  for (const [id, walked] of byBooking) {
    const path = walked.join(' ');
    assert.ok(
      PATHS.some((p) => p === path || p.startsWith(`${path} `)),
      `booking ${id}: ${path}`,
    );
  }

  await publishEvents(svc.db);
  const ids = [...byBooking.keys()];
  const events = await svc.db.query<{ resource_id: string; type: string }>(
    'SELECT resource_id, type FROM events WHERE resource_id = ANY ($1::uuid[]) ORDER BY created_at, id',
    [ids],
  );
  assert.equal(events.length, first.length, 'one event per change');
  for (const id of ids) {
    assert.deepEqual(
      events.filter((e) => e.resource_id === id).map((e) => e.type),
      (byBooking.get(id) ?? []).map((c) => EVENT_OF[c as SimulatedStep['change']]),
    );
  }
  const [org] = await svc.db.query<{ id: string }>(
    'SELECT originator_organization_id AS id FROM bookings WHERE id = $1',
    [ids[0]],
  );
  assert.equal(org?.id, organizationId);
});

test('on a timer at the rate asked, and nothing more once stopped', async () => {
  const simulation = await startSimulation({
    db: svc.db,
    organizationId,
    rate: 50,
    seed: 1,
    logger: svc.deps.logger,
  });
  const until = Date.now() + 10_000;
  while (simulation.steps < 5) {
    assert.ok(Date.now() < until, 'five changes within ten seconds at 50 per second');
    await new Promise((r) => setTimeout(r, 20));
  }
  await simulation.stop();
  const stoppedAt = simulation.steps;
  const [before] = await svc.db.query<{ n: number }>('SELECT count(*)::int AS n FROM bookings');
  await new Promise((r) => setTimeout(r, 200));
  const [later] = await svc.db.query<{ n: number }>('SELECT count(*)::int AS n FROM bookings');
  assert.equal(simulation.steps, stoppedAt);
  assert.equal(later?.n, before?.n);
  assert.ok(svc.logs.some((l) => l.includes('simulated: booking')));
  await assert.rejects(
    startSimulation({ db: svc.db, organizationId, rate: 0, seed: 1, logger: svc.deps.logger }),
    /--rate/,
  );
});

// The event log as the feed's writes produce it (written by the database trigger in the same
// transaction). Read with SQL: one row per involved organization with the outbox on.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { patchBooking } from '../../src/operator/feed/bookings.js';
import { startService, type TestService } from '../support/context.js';
import { bookingBody, putBooking, putDriver, putVehicle } from '../support/feed.js';
import { eventReader, newOrg } from './feed.fixture.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

async function patch(orgId: string, id: string, body: Record<string, unknown>) {
  const res = await svc.op('PATCH', `/organizations/${orgId}/bookings/${id}`, body);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** An organization with the outbox on, a booking of it and a reader of its log past the creation. */
async function bookedOrg(overrides: Record<string, unknown> = {}) {
  const org = await newOrg(svc, { outbox_enabled: true });
  const read = eventReader(svc, org.id);
  const id = randomUUID();
  const booking = await putBooking(svc, org.id, overrides, id);
  await read();
  return { org, read, id, booking };
}

const event = (type: string, id: string, changes: string[], previous: string | null, reference: string) => ({
  type,
  resource_id: id,
  changes,
  previous_status: previous,
  reference,
});

describe('event types', () => {
  test('booking.created: no changes, no previous status, the booking number', async () => {
    const org = await newOrg(svc, { outbox_enabled: true });
    const read = eventReader(svc, org.id);
    const id = randomUUID();
    const booking = await putBooking(svc, org.id, { reference: `${org.code}777` }, id);
    assert.deepEqual(await read(), [event('booking.created', id, [], null, `${org.code}777`)]);
    assert.equal(booking.reference, `${org.code}777`);
  });

  test('booking.updated names the exact columns that changed and the status before', async () => {
    const { org, read, id, booking } = await bookedOrg();
    const ref = booking.reference;
    await patch(org.id, id, { pickup_at: '2026-12-01T10:30:00.000Z', distance_km: 61 });
    assert.deepEqual(await read(), [
      event('booking.updated', id, ['distance_km', 'pickup_at'], 'confirmada', ref),
    ]);
    await patch(org.id, id, { confirmation: { mode: 'manual', confirmed_at: null } });
    assert.deepEqual(await read(), [
      event('booking.updated', id, ['confirmation_mode', 'confirmed_at'], 'confirmada', ref),
    ]);
    await patch(org.id, id, {
      status: 'no_segura',
      passenger: { name: 'Ana Pérez', phone: null, email: null },
    });
    assert.deepEqual(await read(), [
      event('booking.updated', id, ['passenger', 'status'], 'confirmada', ref),
    ]);
    await patch(org.id, id, { reference: `${org.code}9001`, pricing: null });
    assert.deepEqual(await read(), [
      event('booking.updated', id, ['pricing', 'reference'], 'no_segura', `${org.code}9001`),
    ]);
  });

  test('booking.assigned: driver, vehicle, executor', async () => {
    const { org, read, id, booking } = await bookedOrg();
    const partner = await newOrg(svc, { outbox_enabled: true });
    const ref = booking.reference;
    const driver = (await putDriver(svc, org.id)).id;
    const vehicle = (await putVehicle(svc, org.id)).id;
    await patch(org.id, id, { driver_id: driver });
    assert.deepEqual(await read(), [event('booking.assigned', id, ['driver_id'], 'confirmada', ref)]);
    await patch(org.id, id, { vehicle_id: vehicle });
    assert.deepEqual(await read(), [event('booking.assigned', id, ['vehicle_id'], 'confirmada', ref)]);
    await patch(org.id, id, { driver_id: null, vehicle_id: null, executor_organization_id: partner.id });
    assert.deepEqual(await read(), [
      event(
        'booking.assigned',
        id,
        ['driver_id', 'executor_organization_id', 'vehicle_id'],
        'confirmada',
        ref,
      ),
    ]);
  });

  test('booking.assigned when a driver or vehicle is deleted, one per booking', async () => {
    const org = await newOrg(svc, { outbox_enabled: true });
    const driver = (await putDriver(svc, org.id)).id;
    const vehicle = (await putVehicle(svc, org.id)).id;
    const first = await putBooking(svc, org.id, { driver_id: driver, vehicle_id: vehicle });
    const second = await putBooking(svc, org.id, { driver_id: driver, status: 'en_camino' });
    const read = eventReader(svc, org.id);
    await read();
    assert.equal((await svc.op('DELETE', `/organizations/${org.id}/drivers/${driver}`)).status, 200);
    const sorted = (await read()).sort((a, b) => a.reference!.localeCompare(b.reference!));
    const expected = [
      event('booking.assigned', first.id, ['driver_id'], 'confirmada', first.reference),
      event('booking.assigned', second.id, ['driver_id'], 'en_camino', second.reference),
    ].sort((a, b) => a.reference.localeCompare(b.reference));
    assert.deepEqual(sorted, expected);
    assert.equal((await svc.op('DELETE', `/organizations/${org.id}/vehicles/${vehicle}`)).status, 200);
    assert.deepEqual(await read(), [
      event('booking.assigned', first.id, ['vehicle_id'], 'confirmada', first.reference),
    ]);
    const [row] = await svc.db.query('SELECT driver_id, vehicle_id FROM bookings WHERE id = $1', [first.id]);
    assert.deepEqual(row, { driver_id: null, vehicle_id: null });
  });

  test('booking.started only when entering en_camino or en_curso from a status not started', async () => {
    const { org, read, id, booking } = await bookedOrg();
    await patch(org.id, id, { status: 'en_camino' });
    assert.deepEqual(await read(), [
      event('booking.started', id, ['status'], 'confirmada', booking.reference),
    ]);
    await patch(org.id, id, { status: 'en_curso' });
    assert.deepEqual(await read(), [
      event('booking.updated', id, ['status'], 'en_camino', booking.reference),
    ]);

    const other = randomUUID();
    const requested = await putBooking(svc, org.id, { status: 'solicitada' }, other);
    await read();
    await patch(org.id, other, { status: 'en_curso' });
    assert.deepEqual(await read(), [
      event('booking.started', other, ['status'], 'solicitada', requested.reference),
    ]);
  });

  test('booking.completed, booking.cancelled, booking.no_show; status decides over assignment', async () => {
    const { org, read } = await bookedOrg();
    const driver = (await putDriver(svc, org.id)).id;
    const cases: [string, string][] = [
      ['completada', 'booking.completed'],
      ['cancelada', 'booking.cancelled'],
      ['no_show', 'booking.no_show'],
    ];
    for (const [status, type] of cases) {
      const id = randomUUID();
      const b = await putBooking(svc, org.id, { status: 'en_curso' }, id);
      await read();
      await patch(org.id, id, { status, driver_id: driver });
      assert.deepEqual(await read(), [event(type, id, ['driver_id', 'status'], 'en_curso', b.reference)]);
    }
  });

  test('booking.deleted carries the last status and the number', async () => {
    const { org, read, id, booking } = await bookedOrg({ status: 'cancelada' });
    assert.equal((await svc.op('DELETE', `/organizations/${org.id}/bookings/${id}`)).status, 200);
    assert.deepEqual(await read(), [event('booking.deleted', id, [], 'cancelada', booking.reference)]);
  });
});

describe('who is told', () => {
  test('the executor gets its own rows; the executor that loses the booking is told too', async () => {
    const origin = await newOrg(svc, { outbox_enabled: true });
    const first = await newOrg(svc, { outbox_enabled: true });
    const second = await newOrg(svc, { outbox_enabled: true });
    const readOrigin = eventReader(svc, origin.id);
    const readFirst = eventReader(svc, first.id);
    const readSecond = eventReader(svc, second.id);
    const id = randomUUID();
    const driver = (await putDriver(svc, first.id)).id;
    const b = await putBooking(svc, origin.id, { executor_organization_id: first.id, driver_id: driver }, id);
    const created = [event('booking.created', id, [], null, b.reference)];
    assert.deepEqual(await readOrigin(), created);
    assert.deepEqual(await readFirst(), created);

    await patch(origin.id, id, { executor_organization_id: second.id, driver_id: null });
    const moved = [
      event('booking.assigned', id, ['driver_id', 'executor_organization_id'], 'confirmada', b.reference),
    ];
    assert.deepEqual(await readOrigin(), moved);
    assert.deepEqual(await readFirst(), moved, 'the executor that lost it');
    assert.deepEqual(await readSecond(), moved);

    await patch(origin.id, id, { status: 'completada' });
    const done = [event('booking.completed', id, ['status'], 'confirmada', b.reference)];
    assert.deepEqual(await readOrigin(), done);
    assert.deepEqual(await readSecond(), done);
    assert.deepEqual(await readFirst(), [], 'no longer involved');
  });

  test('an organization with the outbox off gets no event, the other side still does', async () => {
    const quiet = await newOrg(svc);
    const partner = await newOrg(svc, { outbox_enabled: true });
    const readQuiet = eventReader(svc, quiet.id);
    const readPartner = eventReader(svc, partner.id);
    const id = randomUUID();
    const b = await putBooking(svc, quiet.id, { executor_organization_id: partner.id }, id);
    await patch(quiet.id, id, { status: 'cancelada' });
    assert.equal((await svc.op('DELETE', `/organizations/${quiet.id}/bookings/${id}`)).status, 200);
    assert.deepEqual(await readQuiet(), []);
    assert.deepEqual((await readPartner()).map((e) => e.type).sort(), [
      'booking.cancelled',
      'booking.created',
      'booking.deleted',
    ]);
    const own = await putBooking(svc, quiet.id, {});
    await patch(quiet.id, own.id, { status: 'completada' });
    assert.deepEqual(await readQuiet(), []);
    assert.ok(b.reference);
  });
});

describe('what is not announced', () => {
  test('a change of only internal data announces nothing', async () => {
    const { org, read, id } = await bookedOrg();
    const res = await patch(org.id, id, { internal: { notes: 'changed', chat: [] } });
    assert.equal(res.internal.notes, 'changed');
    assert.deepEqual(await read(), []);
    await patch(org.id, id, { internal: null });
    assert.deepEqual(await read(), []);
  });

  test('a PUT or PATCH with identical data announces nothing', async () => {
    const { org, read, id } = await bookedOrg();
    const again = await svc.op('PUT', `/organizations/${org.id}/bookings/${id}`, bookingBody());
    assert.equal(again.status, 200, again.text);
    await patch(org.id, id, { status: 'confirmada', distance_km: 52.4 });
    assert.deepEqual(await read(), []);
  });

  test('a transaction that rolls back leaves no event', async () => {
    const { org, read, id } = await bookedOrg();
    await assert.rejects(
      svc.db.tx(async (q) => {
        await patchBooking(q, org.id, id, { status: 'cancelada' });
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.deepEqual(await read(), []);
    const [row] = await svc.db.query('SELECT status FROM bookings WHERE id = $1', [id]);
    assert.deepEqual(row, { status: 'confirmada' });
  });

  test('a write refused by a rule leaves no event and no booking', async () => {
    const org = await newOrg(svc, { outbox_enabled: true });
    const read = eventReader(svc, org.id);
    const id = randomUUID();
    const res = await svc.op(
      'PUT',
      `/organizations/${org.id}/bookings/${id}`,
      bookingBody({ driver_id: randomUUID() }),
    );
    assert.equal(res.status, 400, res.text);
    assert.deepEqual(await read(), []);
    assert.deepEqual(await svc.db.query('SELECT id FROM bookings WHERE id = $1', [id]), []);
  });
});

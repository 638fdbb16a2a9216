import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { BookingInput } from '../../src/operator/feed/booking-schemas.js';
import { upsertBooking } from '../../src/operator/feed/bookings.js';
import { serviceForFile } from '../support/context.js';
import {
  bookingBody,
  customerBody,
  driverBody,
  putBooking,
  putCustomer,
  putDriver,
  putVehicle,
  vehicleBody,
} from '../support/feed.js';
import { assertError, newOrg, type Org } from './feed.fixture.js';

const svc = await serviceForFile();

const putB = (org: Org, overrides: Record<string, unknown>, id = randomUUID()) =>
  svc.op('PUT', `/organizations/${org.id}/bookings/${id}`, bookingBody(overrides));

/** A 400 naming the field, and nothing stored under that id. */
async function refused(org: Org, overrides: Record<string, unknown>, field: string) {
  const id = randomUUID();
  assertError(await putB(org, overrides, id), 400, 'validation_error', { field });
  assert.deepEqual(await svc.db.query('SELECT id FROM bookings WHERE id = $1', [id]), []);
}

describe('booking body', () => {
  test('strict: an unknown field, top-level or nested, is named', async () => {
    const org = await newOrg(svc);
    await refused(org, { statsu: 'confirmada' }, 'statsu');
    await refused(org, { pickup: { address: 'x', lat: 1, lng: 1, zip: '29600' } }, 'pickup.zip');
    await refused(org, { pricing: { ...bookingBody().pricing, vat: 10 } }, 'pricing.vat');
    await refused(org, { internal: { note: 'typo' } }, 'internal.note');
  });

  test('required fields, types and enumerations', async () => {
    const org = await newOrg(svc);
    const { status: _s, ...noStatus } = bookingBody();
    assertError(
      await svc.op('PUT', `/organizations/${org.id}/bookings/${randomUUID()}`, noStatus),
      400,
      'validation_error',
      { field: 'status' },
    );
    const res = await putB(org, { status: 'confirmed' });
    assertError(res, 400, 'validation_error', { field: 'status' });
    assert.ok(res.body.error.details.allowed.includes('confirmada'));
    await refused(org, { service_type: 'taxi' }, 'service_type');
    await refused(org, { pickup_at: '2026-12-01 10:00' }, 'pickup_at');
    await refused(org, { passengers: { count: 0 } }, 'passengers.count');
    await refused(org, { passengers: { count: '2' } }, 'passengers.count');
    await refused(org, { vehicle_category: 'bus' }, 'vehicle_category');
    await refused(org, { channel: 'fax' }, 'channel');
    await refused(org, { customer_id: 'not-a-uuid' }, 'customer_id');
    await refused(org, { distance_km: -1 }, 'distance_km');
    await refused(org, { pricing: { ...bookingBody().pricing, currency: 'eur' } }, 'pricing.currency');
  });

  test('places: latitude -90..90, longitude -180..180, address required', async () => {
    const org = await newOrg(svc);
    await refused(org, { pickup: { address: 'x', lat: 90.01, lng: 0 } }, 'pickup.lat');
    await refused(org, { pickup: { address: 'x', lat: -90.01, lng: 0 } }, 'pickup.lat');
    await refused(org, { destination: { address: 'x', lat: 0, lng: 180.5 } }, 'destination.lng');
    await refused(org, { destination: { address: 'x', lat: 0, lng: -181 } }, 'destination.lng');
    await refused(org, { destination: { lat: 0, lng: 0 } }, 'destination.address');
    assert.equal((await putB(org, { pickup: { address: 'x', lat: 90, lng: -180 } })).status, 201);
  });

  test('hours only for hourly, and hourly needs them; end_at not before pickup_at', async () => {
    const org = await newOrg(svc);
    await refused(org, { service_type: 'transfer', hours: 2 }, 'hours');
    await refused(org, { service_type: 'hourly', hours: null }, 'hours');
    await refused(org, { service_type: 'hourly', hours: 0 }, 'hours');
    await refused(org, { end_at: '2026-12-01T09:59:00.000Z' }, 'end_at');
    assert.equal((await putB(org, { service_type: 'hourly', hours: 4 })).status, 201);
  });
});

describe('references to other rows', () => {
  test('executor: another existing organization, never the originator', async () => {
    const org = await newOrg(svc);
    await refused(org, { executor_organization_id: org.id }, 'executor_organization_id');
    await refused(org, { executor_organization_id: randomUUID() }, 'executor_organization_id');
  });

  test('driver and vehicle of the executing organization', async () => {
    const org = await newOrg(svc);
    const partner = await newOrg(svc);
    const ours = { driver: (await putDriver(svc, org.id)).id, vehicle: (await putVehicle(svc, org.id)).id };
    const theirs = {
      driver: (await putDriver(svc, partner.id)).id,
      vehicle: (await putVehicle(svc, partner.id)).id,
    };
    await refused(org, { driver_id: theirs.driver }, 'driver_id');
    await refused(org, { vehicle_id: theirs.vehicle }, 'vehicle_id');
    await refused(org, { executor_organization_id: partner.id, driver_id: ours.driver }, 'driver_id');
    await refused(org, { executor_organization_id: partner.id, vehicle_id: ours.vehicle }, 'vehicle_id');
    await refused(org, { driver_id: randomUUID() }, 'driver_id');
  });

  test('customer: of the originator and not deleted', async () => {
    const org = await newOrg(svc);
    const partner = await newOrg(svc);
    const foreign = await putCustomer(svc, partner.id);
    await refused(org, { customer_id: foreign.id }, 'customer_id');
    await refused(org, { customer_id: randomUUID() }, 'customer_id');
    const gone = await putCustomer(svc, org.id);
    await svc.op('DELETE', `/organizations/${org.id}/customers/${gone.id}`);
    await refused(org, { customer_id: gone.id }, 'customer_id');
    // Executed by the partner, the customer is still the originator's.
    await refused(org, { executor_organization_id: partner.id, customer_id: foreign.id }, 'customer_id');
  });

  test('a PATCH that moves the executor must move the driver too', async () => {
    const org = await newOrg(svc);
    const partner = await newOrg(svc);
    const driver = await putDriver(svc, org.id);
    const booking = await putBooking(svc, org.id, { driver_id: driver.id });
    const path = `/organizations/${org.id}/bookings/${booking.id}`;
    assertError(
      await svc.op('PATCH', path, { executor_organization_id: partner.id }),
      400,
      'validation_error',
      {
        field: 'driver_id',
      },
    );
    const [row] = await svc.db.query('SELECT executor_organization_id FROM bookings WHERE id = $1', [
      booking.id,
    ]);
    assert.deepEqual(row, { executor_organization_id: null }, 'nothing half-written');
  });
});

describe('booking numbers', () => {
  test('digits beginning with the originator code, more than the code', async () => {
    const org = await newOrg(svc);
    await refused(org, { reference: `9${org.code}1` }, 'reference');
    await refused(org, { reference: org.code }, 'reference');
    await refused(org, { reference: `${org.code}A1` }, 'reference');
    await refused(org, { reference: `${org.code}${'1'.repeat(40)}` }, 'reference');
  });

  test('a number taken by another booking is a 409 naming reference', async () => {
    const org = await newOrg(svc);
    const taken = await putBooking(svc, org.id);
    assertError(await putB(org, { reference: taken.reference }), 409, 'conflict', { field: 'reference' });
    const other = await putBooking(svc, org.id);
    assertError(
      await svc.op('PATCH', `/organizations/${org.id}/bookings/${other.id}`, { reference: taken.reference }),
      409,
      'conflict',
      { field: 'reference' },
    );
  });

  test('a new number drawn that another booking has is drawn again, not refused', async () => {
    const org = await newOrg(svc);
    await putB(org, { reference: `${org.code}00000007` });
    const draws = [7, 7, 8];
    const id = randomUUID();
    const { row } = await svc.db.tx((q) =>
      upsertBooking(q, org.id, id, bookingBody() as BookingInput, () => draws.shift() as number),
    );
    assert.equal(row.reference, `${org.code}00000008`);
    assert.deepEqual(draws, [], 'the taken number was drawn twice, then a free one');
  });
});

describe('ids of another organization', () => {
  test('a booking id of another originator: PUT 409 on id, PATCH and DELETE 404', async () => {
    const org = await newOrg(svc);
    const partner = await newOrg(svc);
    const theirs = await putBooking(svc, partner.id, { executor_organization_id: org.id });
    assertError(await putB(org, {}, theirs.id), 409, 'conflict', { field: 'id' });
    const path = `/organizations/${org.id}/bookings/${theirs.id}`;
    assertError(await svc.op('PATCH', path, { status: 'cancelada' }), 404, 'not_found');
    assertError(await svc.op('DELETE', path), 404, 'not_found');
    const [row] = await svc.db.query('SELECT status FROM bookings WHERE id = $1', [theirs.id]);
    assert.deepEqual(row, { status: 'confirmada' });
  });

  test('catalogue ids of another organization: PUT 409 on id, DELETE 404', async () => {
    const org = await newOrg(svc);
    const partner = await newOrg(svc);
    const rows = {
      customers: [(await putCustomer(svc, partner.id)).id, customerBody()],
      drivers: [(await putDriver(svc, partner.id)).id, driverBody()],
      vehicles: [(await putVehicle(svc, partner.id)).id, vehicleBody()],
    } as const;
    for (const [kind, [id, body]] of Object.entries(rows)) {
      const path = `/organizations/${org.id}/${kind}/${id}`;
      assertError(await svc.op('PUT', path, body), 409, 'conflict', { field: 'id' });
      assertError(await svc.op('DELETE', path), 404, 'not_found');
    }
  });

  test('a customer group of another organization: 409 on group.id, the customer not written', async () => {
    const org = await newOrg(svc);
    const partner = await newOrg(svc);
    const group = { id: randomUUID(), name: 'Suyos' };
    await putCustomer(svc, partner.id, { group });
    const id = randomUUID();
    assertError(
      await svc.op('PUT', `/organizations/${org.id}/customers/${id}`, customerBody({ group })),
      409,
      'conflict',
      { field: 'group.id' },
    );
    assert.deepEqual(await svc.db.query('SELECT id FROM customers WHERE id = $1', [id]), []);
  });
});

describe('paths and bodies', () => {
  test('an unknown organization, or a path id that cannot name a row, is a 404', async () => {
    const org = await newOrg(svc);
    const id = randomUUID();
    assertError(
      await svc.op('PUT', `/organizations/${randomUUID()}/bookings/${id}`, bookingBody()),
      404,
      'not_found',
    );
    assertError(
      await svc.op('PUT', `/organizations/${randomUUID()}/drivers/${id}`, driverBody()),
      404,
      'not_found',
    );
    assertError(
      await svc.op('PUT', `/organizations/${org.id}/bookings/nope`, bookingBody()),
      404,
      'not_found',
    );
    assertError(await svc.op('PUT', `/organizations/123/customers/${id}`, customerBody()), 404, 'not_found');
    assertError(await svc.op('DELETE', `/organizations/${org.id}/vehicles/x`), 404, 'not_found');
    assertError(
      await svc.op('PATCH', `/organizations/${org.id}/bookings/${id}`, { status: 'cancelada' }),
      404,
      'not_found',
    );
  });

  test('PATCH needs at least one field, and the result must satisfy every rule', async () => {
    const org = await newOrg(svc);
    const booking = await putBooking(svc, org.id);
    const path = `/organizations/${org.id}/bookings/${booking.id}`;
    assertError(await svc.op('PATCH', path, {}), 400, 'validation_error', { field: 'body' });
    assertError(await svc.op('PATCH', path, { service_type: 'hourly' }), 400, 'validation_error', {
      field: 'hours',
    });
    assertError(await svc.op('PATCH', path, { status: null }), 400, 'validation_error', { field: 'status' });
  });

  test('catalogue bodies are strict and typed', async () => {
    const org = await newOrg(svc);
    const at = (kind: string) => `/organizations/${org.id}/${kind}/${randomUUID()}`;
    assertError(
      await svc.op('PUT', at('customers'), customerBody({ type: 'vip' })),
      400,
      'validation_error',
      {
        field: 'type',
      },
    );
    assertError(await svc.op('PUT', at('customers'), { name: 'x' }), 400, 'validation_error', {
      field: 'type',
    });
    assertError(
      await svc.op('PUT', at('customers'), customerBody({ group: { id: randomUUID() } })),
      400,
      'validation_error',
      { field: 'group.name' },
    );
    assertError(await svc.op('PUT', at('drivers'), driverBody({ nick: 'x' })), 400, 'validation_error', {
      field: 'nick',
    });
    assertError(await svc.op('PUT', at('vehicles'), vehicleBody({ seats: -1 })), 400, 'validation_error', {
      field: 'seats',
    });
    assertError(
      await svc.op('PUT', at('vehicles'), vehicleBody({ category: 'bus' })),
      400,
      'validation_error',
      {
        field: 'category',
      },
    );
  });

  test('a string PostgreSQL cannot store (U+0000) is a 400, in a column or in JSON', async () => {
    const org = await newOrg(svc);
    assertError(
      await svc.op(
        'PUT',
        `/organizations/${org.id}/drivers/${randomUUID()}`,
        driverBody({ name: 'a\u0000b' }),
      ),
      400,
      'validation_error',
      { field: 'name' },
    );
    // Refused by the validator, which names the field, before PostgreSQL would refuse it.
    await refused(org, { passenger: { name: 'a\u0000b' } }, 'passenger.name');
  });

  test('a body that is not JSON is a 415', async () => {
    const org = await newOrg(svc);
    const res = await svc.operator.inject({
      method: 'PUT',
      url: `/operator/v1/organizations/${org.id}/drivers/${randomUUID()}`,
      headers: { authorization: 'Bearer test-operator-token-0123456789abcdef', 'content-type': 'text/plain' },
      payload: 'name=x',
    });
    assert.equal(res.statusCode, 415);
  });
});

// The feed for bookings: create, replace, PATCH, DELETE, booking numbers, the exchange.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { bookingBody, putBooking, putCustomer, putDriver, putVehicle } from '../support/feed.js';
import { assertError, newOrg } from './feed.fixture.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('bookings', () => {
  test('PUT creates (201) and answers the stored data, internal and net_executor included', async () => {
    const org = await newOrg(svc);
    const id = randomUUID();
    const customer = await putCustomer(svc, org.id);
    const driver = await putDriver(svc, org.id);
    const vehicle = await putVehicle(svc, org.id);
    const links = { customer_id: customer.id, driver_id: driver.id, vehicle_id: vehicle.id };
    const res = await svc.op('PUT', `/organizations/${org.id}/bookings/${id}`, bookingBody(links));
    assert.equal(res.status, 201, res.text);
    const { confirmation, ...sent } = bookingBody(links);
    const { reference, created_at, updated_at, ...stored } = res.body;
    assert.deepEqual(stored, {
      id,
      originator_organization_id: org.id,
      ...sent,
      confirmation,
    });
    assert.match(reference, new RegExp(`^${org.code}\\d{8}$`));
    assert.match(created_at, ISO);
    assert.equal(updated_at, created_at);
  });

  test('a replace (200) keeps the number and the creation time when omitted', async () => {
    const org = await newOrg(svc);
    const id = randomUUID();
    const first = await putBooking(svc, org.id, { created_at: '2026-01-01T08:00:00.000Z' }, id);
    const res = await svc.op(
      'PUT',
      `/organizations/${org.id}/bookings/${id}`,
      bookingBody({ status: 'cancelada' }),
    );
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.reference, first.reference);
    assert.equal(res.body.created_at, '2026-01-01T08:00:00.000Z');
    assert.equal(res.body.status, 'cancelada');
  });

  test('a PUT body with only the required fields stores nulls and defaults', async () => {
    const org = await newOrg(svc);
    const id = randomUUID();
    const res = await svc.op('PUT', `/organizations/${org.id}/bookings/${id}`, {
      status: 'solicitada',
      service_type: 'hourly',
      hours: 3.5,
      pickup_at: '2026-12-01T10:00:00Z',
      passengers: { count: 1 },
      flight: { number: null, pending: true },
      pricing: { currency: 'EUR', total: 120, vat_pct: 10, payment_mode: 'cash', payment_status: 'pending' },
    });
    assert.equal(res.status, 201, res.text);
    const b = res.body;
    assert.equal(b.hours, 3.5);
    assert.equal(b.pickup_at, '2026-12-01T10:00:00.000Z');
    assert.deepEqual(b.passengers, {
      count: 1,
      luggage: 0,
      luggage_big: 0,
      luggage_small: 0,
      baby_seats: 0,
      child_seats: 0,
      booster_seats: 0,
      wheelchair: false,
    });
    assert.deepEqual(b.pricing, {
      currency: 'EUR',
      total: 120,
      vat_pct: 10,
      sale_total: null,
      extras: [],
      diet: null,
      parking: null,
      night_surcharge: null,
      payment_mode: 'cash',
      payment_status: 'pending',
      paid_at: null,
      net_executor: null,
    });
    assert.deepEqual(b.confirmation, { mode: null, confirmed_at: null });
    for (const field of ['end_at', 'pickup', 'destination', 'distance_km', 'customer_id', 'driver_id']) {
      assert.equal(b[field], null, field);
    }
    assert.equal(b.passenger, null);
    assert.equal(b.internal, null);
  });

  test('a given booking number is kept; a new one on replace replaces it', async () => {
    const org = await newOrg(svc);
    const id = randomUUID();
    const one = await putBooking(svc, org.id, { reference: `${org.code}0001` }, id);
    assert.equal(one.reference, `${org.code}0001`);
    const two = await putBooking(svc, org.id, { reference: `${org.code}0002` }, id);
    assert.equal(two.reference, `${org.code}0002`);
    const same = await putBooking(svc, org.id, { reference: `${org.code}0002` }, id);
    assert.equal(same.reference, `${org.code}0002`);
  });

  test('generated numbers begin with the code and are unique', async () => {
    const org = await newOrg(svc);
    const refs = new Set<string>();
    for (let i = 0; i < 15; i += 1) refs.add((await putBooking(svc, org.id)).reference);
    assert.equal(refs.size, 15);
    for (const r of refs) assert.ok(r.startsWith(org.code) && /^\d+$/.test(r), r);
  });

  test('PATCH changes only the fields sent; a nested object is replaced whole', async () => {
    const org = await newOrg(svc);
    const id = randomUUID();
    const driver = await putDriver(svc, org.id);
    const before = await putBooking(svc, org.id, { driver_id: driver.id }, id);
    const path = `/organizations/${org.id}/bookings/${id}`;
    const res = await svc.op('PATCH', path, { status: 'en_camino', passenger: { name: 'Luis' } });
    assert.equal(res.status, 200, res.text);
    const { updated_at: _a, ...after } = res.body;
    const { updated_at: _b, ...expected } = before;
    assert.deepEqual(after, {
      ...expected,
      status: 'en_camino',
      passenger: { name: 'Luis', phone: null, email: null },
    });
    const unassigned = await svc.op('PATCH', path, {
      driver_id: null,
      created_at: '2026-02-02T00:00:00.000Z',
    });
    assert.equal(unassigned.status, 200);
    assert.equal(unassigned.body.driver_id, null);
    assert.equal(unassigned.body.created_at, '2026-02-02T00:00:00.000Z');
    assert.equal(unassigned.body.reference, before.reference);
  });

  test('a booking of a customer deleted later can still be changed', async () => {
    const org = await newOrg(svc);
    const customer = await putCustomer(svc, org.id);
    const booking = await putBooking(svc, org.id, { customer_id: customer.id });
    await svc.op('DELETE', `/organizations/${org.id}/customers/${customer.id}`);
    const res = await svc.op('PATCH', `/organizations/${org.id}/bookings/${booking.id}`, {
      status: 'completada',
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.customer_id, customer.id);
  });

  test('the exchange: executed by a partner with its driver; originated by a partner', async () => {
    const org = await newOrg(svc);
    const partner = await newOrg(svc);
    const theirDriver = await putDriver(svc, partner.id);
    const theirVehicle = await putVehicle(svc, partner.id);
    const out = await putBooking(svc, org.id, {
      executor_organization_id: partner.id,
      driver_id: theirDriver.id,
      vehicle_id: theirVehicle.id,
    });
    assert.equal(out.executor_organization_id, partner.id);
    assert.equal(out.driver_id, theirDriver.id);
    const ourDriver = await putDriver(svc, org.id);
    const inbound = await putBooking(svc, partner.id, {
      executor_organization_id: org.id,
      driver_id: ourDriver.id,
    });
    assert.equal(inbound.originator_organization_id, partner.id);
    assert.ok(inbound.reference.startsWith(partner.code));
  });

  test('DELETE removes the booking and its external-id links', async () => {
    const org = await newOrg(svc);
    const booking = await putBooking(svc, org.id);
    const [integration] = await svc.db.query<{ id: string }>(
      `INSERT INTO integrations (organization_id, name, kind, scopes) VALUES ($1, 'ERP', 'erp', '{}') RETURNING id`,
      [org.id],
    );
    await svc.db.query(
      `INSERT INTO booking_external_ids (integration_id, booking_id, external_id) VALUES ($1, $2, 'X-1')`,
      [integration?.id, booking.id],
    );
    const path = `/organizations/${org.id}/bookings/${booking.id}`;
    const res = await svc.op('DELETE', path);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { deleted: true });
    assert.deepEqual(
      await svc.db.query('SELECT 1 FROM booking_external_ids WHERE booking_id = $1', [booking.id]),
      [],
    );
    assertError(await svc.op('DELETE', path), 404, 'not_found');
  });

  test('upper-case ids in the path name the same rows', async () => {
    const org = await newOrg(svc);
    const id = randomUUID();
    const res = await svc.op(
      'PUT',
      `/organizations/${org.id.toUpperCase()}/bookings/${id.toUpperCase()}`,
      bookingBody(),
    );
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.id, id);
    assert.equal(res.body.originator_organization_id, org.id);
  });
});

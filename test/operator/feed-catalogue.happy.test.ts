// The feed for the catalogue: customers (soft delete), drivers and vehicles (hard delete).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { serviceForFile } from '../support/context.js';
import {
  customerBody,
  driverBody,
  putBooking,
  putCustomer,
  putDriver,
  putVehicle,
  vehicleBody,
} from '../support/feed.js';
import { assertError, newOrg } from './feed.fixture.js';

const svc = await serviceForFile();

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('customers', () => {
  test('PUT creates (201) then replaces (200), answering the public shape', async () => {
    const org = await newOrg(svc);
    const id = randomUUID();
    const group = { id: randomUUID(), name: 'Hoteles Costa' };
    const path = `/organizations/${org.id}/customers/${id}`;
    const created = await svc.op('PUT', path, customerBody({ external_id: 'CRM-1', group }));
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.created_at, ISO);
    assert.deepEqual(created.body, {
      id,
      external_id: 'CRM-1',
      name: 'Hotel Mirador',
      type: 'account',
      active: true,
      group,
      created_at: created.body.created_at,
    });
    const replaced = await svc.op('PUT', path, { type: 'public_engine', name: 'Web', active: false });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual(replaced.body, {
      id,
      external_id: null,
      name: 'Web',
      type: 'public_engine',
      active: false,
      group: null,
      created_at: created.body.created_at,
    });
  });

  test('created_at of an import is kept; the group is renamed by a later PUT', async () => {
    const org = await newOrg(svc);
    const group = { id: randomUUID(), name: 'Agencias' };
    const one = await putCustomer(svc, org.id, { group, created_at: '2025-01-02T03:04:05.678Z' });
    assert.equal(one.created_at, '2025-01-02T03:04:05.678Z');
    const two = await putCustomer(svc, org.id, { group: { ...group, name: 'Agencias de viaje' } });
    assert.deepEqual(two.group, { id: group.id, name: 'Agencias de viaje' });
    const [row] = await svc.db.query('SELECT name FROM customer_groups WHERE id = $1', [group.id]);
    assert.deepEqual(row, { name: 'Agencias de viaje' });
  });

  test('DELETE is soft: deleted_at is set, bookings keep the customer, a PUT revives it (201)', async () => {
    const org = await newOrg(svc);
    const customer = await putCustomer(svc, org.id, { created_at: '2025-03-01T00:00:00.000Z' });
    const booking = await putBooking(svc, org.id, { customer_id: customer.id });
    const path = `/organizations/${org.id}/customers/${customer.id}`;
    const removed = await svc.op('DELETE', path);
    assert.equal(removed.status, 200);
    assert.deepEqual(removed.body, { deleted: true });
    const [row] = await svc.db.query<{ deleted_at: Date | null }>(
      'SELECT deleted_at FROM customers WHERE id = $1',
      [customer.id],
    );
    assert.ok(row?.deleted_at instanceof Date);
    const [kept] = await svc.db.query('SELECT customer_id FROM bookings WHERE id = $1', [booking.id]);
    assert.deepEqual(kept, { customer_id: customer.id });
    assertError(await svc.op('DELETE', path), 404, 'not_found');

    const revived = await svc.op('PUT', path, customerBody({ name: 'Hotel Mirador II' }));
    assert.equal(revived.status, 201, revived.text);
    assert.equal(revived.body.name, 'Hotel Mirador II');
    assert.equal(revived.body.created_at, '2025-03-01T00:00:00.000Z');
    const [back] = await svc.db.query('SELECT deleted_at FROM customers WHERE id = $1', [customer.id]);
    assert.deepEqual(back, { deleted_at: null });
  });
});

describe('drivers and vehicles', () => {
  test('driver PUT 201 then 200 in the public shape; defaults for omitted fields', async () => {
    const org = await newOrg(svc);
    const id = randomUUID();
    const path = `/organizations/${org.id}/drivers/${id}`;
    const created = await svc.op('PUT', path, driverBody({ external_id: 'HR-9' }));
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body, {
      id,
      external_id: 'HR-9',
      name: 'Lucía Gómez',
      nickname: 'Lucía',
      phone: '+34600000001',
      active: true,
      status: 'available',
      has_app_access: true,
      created_at: created.body.created_at,
    });
    const replaced = await svc.op('PUT', path, { name: 'Lucía G.' });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual(replaced.body, {
      id,
      external_id: null,
      name: 'Lucía G.',
      nickname: null,
      phone: null,
      active: true,
      status: null,
      has_app_access: false,
      created_at: created.body.created_at,
    });
  });

  test('vehicle PUT 201 then 200 in the public shape', async () => {
    const org = await newOrg(svc);
    const id = randomUUID();
    const path = `/organizations/${org.id}/vehicles/${id}`;
    const created = await svc.op('PUT', path, vehicleBody());
    assert.equal(created.status, 201, created.text);
    const { created_at, ...rest } = created.body;
    assert.match(created_at, ISO);
    const { external_id: _e, ...sent } = vehicleBody();
    assert.deepEqual(rest, { id, external_id: null, ...sent });
    const replaced = await svc.op('PUT', path, vehicleBody({ seats: 7, category: 'van', active: false }));
    assert.equal(replaced.status, 200);
    assert.equal(replaced.body.seats, 7);
    assert.equal(replaced.body.category, 'van');
    assert.equal(replaced.body.active, false);
  });

  test('DELETE is hard; the bookings that had them keep existing without them', async () => {
    const org = await newOrg(svc);
    const driver = await putDriver(svc, org.id);
    const vehicle = await putVehicle(svc, org.id);
    const booking = await putBooking(svc, org.id, { driver_id: driver.id, vehicle_id: vehicle.id });
    for (const path of [`drivers/${driver.id}`, `vehicles/${vehicle.id}`]) {
      const res = await svc.op('DELETE', `/organizations/${org.id}/${path}`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { deleted: true });
      assertError(await svc.op('DELETE', `/organizations/${org.id}/${path}`), 404, 'not_found');
    }
    assert.deepEqual(await svc.db.query('SELECT id FROM drivers WHERE id = $1', [driver.id]), []);
    const [row] = await svc.db.query('SELECT driver_id, vehicle_id FROM bookings WHERE id = $1', [
      booking.id,
    ]);
    assert.deepEqual(row, { driver_id: null, vehicle_id: null });
  });
});

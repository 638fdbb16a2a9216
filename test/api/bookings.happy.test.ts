import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { bookingBody, putBooking, putCustomer, putDriver, putVehicle } from '../support/feed.js';
import { createTenant } from '../support/tenants.js';
import { ALL_READ, at, exchangePair, ORIGINATOR_PRICING, putExchanged } from './read-support.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

const fixture = bookingBody();

describe('GET /bookings/{id}: the booking shape', () => {
  test('the originator that executes sees every public field, with numbers as numbers', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const org = t.organization.id;
    const customer = randomUUID();
    const driver = randomUUID();
    const vehicle = randomUUID();
    await putCustomer(svc, org, { name: 'Hotel Mirador' }, customer);
    await putDriver(svc, org, {}, driver);
    await putVehicle(svc, org, {}, vehicle);
    const id = randomUUID();
    await putBooking(
      svc,
      org,
      { customer_id: customer, driver_id: driver, vehicle_id: vehicle, created_at: at(0) },
      id,
    );
    const res = await svc.call('GET', `/bookings/${id}`, { key: t.key });
    assert.equal(res.status, 200, res.text);
    const b = res.body;
    assert.match(b.reference, new RegExp(`^${t.organization.code}[0-9]+$`));
    assert.deepEqual(b, {
      id,
      reference: b.reference,
      external_id: null,
      status: 'confirmed',
      service_type: 'transfer',
      hours: null,
      pickup_at: fixture.pickup_at,
      end_at: fixture.end_at,
      pickup: fixture.pickup,
      destination: fixture.destination,
      distance_km: 52.4,
      flight: { number: 'IB3911', pending: false },
      passengers: fixture.passengers,
      vehicle_category: 'sedan',
      customer: { id: customer, name: 'Hotel Mirador' },
      assignment: {
        external: false,
        driver: { id: driver, name: 'Lucía Gómez', nickname: 'Lucía' },
        vehicle: { id: vehicle, plate: '1234ABC', model: 'Mercedes-Benz Clase E' },
      },
      role: 'originator_and_executor',
      channel: 'manual',
      confirmation: { mode: 'automatic', confirmed_at: '2026-11-20T09:00:00.000Z' },
      event_reference: null,
      created_at: at(0),
      passenger: { name: 'Ana Pérez', phone: '+34600111222', email: 'ana@example.com' },
      pricing: ORIGINATOR_PRICING,
    });
    for (const secret of ['internal note', 'internal observation', 'chat line', 'PEREZ', '-4.49,']) {
      assert.ok(!res.text.includes(secret), `${secret} must never be exposed`);
    }
    // The same booking by its number, and in the list: the same body.
    assert.deepEqual((await svc.call('GET', `/bookings/${b.reference}`, { key: t.key })).body, b);
    assert.deepEqual((await svc.call('GET', `/bookings/${id.toUpperCase()}`, { key: t.key })).body, b);
    assert.deepEqual((await svc.call('GET', '/bookings', { key: t.key })).body.data, [b]);
  });

  test('hourly hire without destination, pending flight, no customer, no assignment', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const id = randomUUID();
    await putBooking(
      svc,
      t.organization.id,
      {
        service_type: 'hourly',
        hours: 3.5,
        destination: null,
        flight: { number: null, pending: true },
        distance_km: null,
        channel: null,
        vehicle_category: null,
        event_reference: 'BODA-2026',
        status: 'solicitada',
      },
      id,
    );
    const b = (await svc.call('GET', `/bookings/${id}`, { key: t.key })).body;
    assert.equal(b.status, 'requested');
    assert.equal(b.service_type, 'hourly');
    assert.equal(b.hours, 3.5);
    assert.equal(b.destination, null);
    assert.deepEqual(b.flight, { pending: true });
    assert.equal(b.distance_km, null);
    assert.equal(b.customer, null);
    assert.equal(b.channel, null);
    assert.equal(b.vehicle_category, null);
    assert.equal(b.event_reference, 'BODA-2026');
    assert.deepEqual(b.assignment, { external: false, driver: null, vehicle: null });
  });

  test('with pricing:read and no stored price, pricing is absent (never null); the diet amount passes through', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const bare = randomUUID();
    const priced = randomUUID();
    await putBooking(svc, t.organization.id, { pricing: null, passenger: null }, bare);
    await putBooking(
      svc,
      t.organization.id,
      { pricing: { ...fixture.pricing, diet: 12.5, paid_at: '2026-11-21T10:00:00.000Z' } },
      priced,
    );
    const b = (await svc.call('GET', `/bookings/${bare}`, { key: t.key })).body;
    assert.ok(!('pricing' in b));
    assert.deepEqual(b.passenger, { name: null, phone: null, email: null });
    const p = (await svc.call('GET', `/bookings/${priced}`, { key: t.key })).body.pricing;
    assert.equal(p.diet, 12.5);
    assert.equal(p.paid_at, '2026-11-21T10:00:00.000Z');
  });
});

describe('GET /bookings filters', () => {
  async function seeded() {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const org = t.organization.id;
    const customer = randomUUID();
    await putCustomer(svc, org, {}, customer);
    const rows = [
      { status: 'confirmada', pickup_at: '2026-12-01T10:00:00.000Z', created_at: at(1) },
      {
        status: 'cancelada',
        pickup_at: '2026-12-02T10:00:00.000Z',
        end_at: null,
        created_at: at(2),
        customer_id: customer,
      },
      {
        status: 'confirmada',
        pickup_at: '2026-12-03T10:00:00.000Z',
        end_at: null,
        created_at: at(3),
        customer_id: customer,
      },
      { status: 'en_camino', pickup_at: '2026-12-04T10:00:00.000Z', end_at: null, created_at: at(4) },
    ];
    const ids: string[] = [];
    for (const r of rows) {
      const id = randomUUID();
      await putBooking(svc, org, r, id);
      ids.push(id);
    }
    const list = async (query: string) => {
      const res = await svc.call('GET', `/bookings?${query}`, { key: t.key });
      assert.equal(res.status, 200, res.text);
      return res.body.data.map((b: any) => ids.indexOf(b.id));
    };
    return { t, customer, ids, list };
  }

  test('status by public name', async () => {
    const { list } = await seeded();
    assert.deepEqual(await list('status=confirmed'), [0, 2]);
    assert.deepEqual(await list('status=cancelled'), [1]);
    assert.deepEqual(await list('status=en_route'), [3]);
    assert.deepEqual(await list('status=completed'), []);
  });

  test('customer_id', async () => {
    const { list, customer } = await seeded();
    assert.deepEqual(await list(`customer_id=${customer}`), [1, 2]);
    assert.deepEqual(await list(`customer_id=${randomUUID()}`), []);
  });

  test('pickup_from and pickup_to are inclusive', async () => {
    const { list } = await seeded();
    assert.deepEqual(await list('pickup_from=2026-12-02T10:00:00.000Z'), [1, 2, 3]);
    assert.deepEqual(await list('pickup_to=2026-12-02T10:00:00Z'), [0, 1]);
    assert.deepEqual(
      await list('pickup_from=2026-12-02T10:00:00Z&pickup_to=2026-12-03T11:00:00%2B01:00'),
      [1, 2],
    );
    // Finer than milliseconds: the bound still means exactly what it says.
    assert.deepEqual(await list('pickup_from=2026-12-02T10:00:00.0001Z'), [2, 3]);
    assert.deepEqual(await list('pickup_to=2026-12-02T10:00:00.0009Z'), [0, 1]);
  });

  test('created_from and created_to are inclusive', async () => {
    const { list } = await seeded();
    assert.deepEqual(await list(`created_from=${at(3)}`), [0, 1, 2]);
    assert.deepEqual(await list(`created_to=${at(3)}`), [2, 3]);
    assert.deepEqual(await list(`created_from=${at(3)}&created_to=${at(2)}`), [1, 2]);
  });

  test('filters combine', async () => {
    const { list, customer } = await seeded();
    assert.deepEqual(await list(`status=confirmed&customer_id=${customer}`), [2]);
    assert.deepEqual(
      await list(`status=confirmed&pickup_from=2026-12-02T00:00:00Z&created_to=${at(1)}`),
      [2],
    );
  });

  test('external_id: the booking this integration linked, every other filter ignored', async () => {
    const { t, ids, list } = await seeded();
    await svc.db.query(
      'INSERT INTO booking_external_ids (integration_id, booking_id, external_id) VALUES ($1, $2, $3)',
      [t.integration.id, ids[1], 'ERP/0001 a'],
    );
    assert.deepEqual(await list('external_id=ERP%2F0001%20a'), [1]);
    assert.deepEqual(
      await list(`external_id=ERP%2F0001%20a&status=confirmed&customer_id=${randomUUID()}`),
      [1],
    );
    assert.deepEqual(await list('external_id=ERP%2F0002'), []);
    assert.deepEqual(await list('external_id='), []);
    const res = await svc.call('GET', '/bookings?external_id=ERP%2F0001%20a&limit=1', { key: t.key });
    assert.equal(res.body.data[0].external_id, 'ERP/0001 a');
    assert.equal(res.body.next_cursor, null);
    assert.equal(res.body.has_more, false);
    // Every shape of this integration's bookings carries the link.
    const one = (await svc.call('GET', `/bookings/${ids[1]}`, { key: t.key })).body;
    assert.equal(one.external_id, 'ERP/0001 a');
  });

  test('the executor filters the bookings it receives too', async () => {
    const { originator, executor } = await exchangePair(svc);
    const id = randomUUID();
    await putExchanged(svc, originator, executor, { status: 'completada' }, id);
    const res = await svc.call('GET', '/bookings?status=completed', { key: executor.key });
    assert.deepEqual(
      res.body.data.map((b: any) => b.id),
      [id],
    );
  });
});

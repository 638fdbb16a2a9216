import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type BookingRow, bookingView, roleOf } from './booking-view.js';
import { STATUS_TO_INTERNAL } from './bookings.js';

const ORIGINATOR = '11111111-1111-4111-8111-111111111111';
const EXECUTOR = '22222222-2222-4222-8222-222222222222';
const STRANGER = '33333333-3333-4333-8333-333333333333';
const DRIVER = '44444444-4444-4444-8444-444444444444';
const VEHICLE = '55555555-5555-4555-8555-555555555555';
const CUSTOMER = '66666666-6666-4666-8666-666666666666';

const ORIGINATOR_PRICING = {
  currency: 'EUR',
  total: 95.5,
  vat_pct: 10,
  sale_total: 110,
  extras: [{ name: 'Silla de bebé', amount: 5, per_passenger: false }],
  diet: null,
  parking: null,
  night_surcharge: null,
  payment_mode: 'credit',
  payment_status: 'pending',
  paid_at: null,
};

function row(overrides: Partial<BookingRow> = {}): BookingRow {
  const stored = {
    id: '77777777-7777-4777-8777-777777777777',
    originator_organization_id: ORIGINATOR,
    executor_organization_id: null,
    reference: '4210001',
    status: 'confirmada',
    service_type: 'transfer',
    hours: null,
    pickup_at: new Date('2026-12-01T10:00:00.000Z'),
    end_at: new Date('2026-12-01T11:00:00.000Z'),
    pickup: { address: 'Aeropuerto de Málaga T2', lat: 36.6749, lng: -4.4991 },
    destination: { address: 'Hotel Mirador, Marbella', lat: 36.5101, lng: -4.8825 },
    distance_km: 52.4,
    flight: { number: 'IB3911', pending: false },
    passengers: {
      count: 2,
      luggage: 2,
      luggage_big: 1,
      luggage_small: 1,
      baby_seats: 0,
      child_seats: 0,
      booster_seats: 0,
      wheelchair: false,
    },
    vehicle_category: 'sedan',
    customer_id: CUSTOMER,
    customer_name: 'Hotel Mirador',
    driver_id: DRIVER,
    driver_name: 'Lucía Gómez',
    driver_nickname: 'Lucía',
    vehicle_id: VEHICLE,
    vehicle_plate: '1234ABC',
    vehicle_model: 'Mercedes-Benz Clase E',
    channel: 'manual',
    confirmation_mode: 'automatic',
    confirmed_at: new Date('2026-11-20T09:00:00.000Z'),
    event_reference: null,
    passenger: { name: 'Ana Pérez', phone: '+34600111222', email: 'ana@example.com', notes: 'x' },
    pricing: { ...ORIGINATOR_PRICING, net_executor: 80 },
    link_external_id: 'ERP-1',
    created_at: new Date('2026-11-19T08:00:00.000Z'),
    // Stored-only data a query could carry by mistake: the view must never read it.
    internal: { notes: 'internal note', chat: [{ text: 'chat line' }], pickup_sign: 'PEREZ' },
    ...overrides,
  };
  return stored as BookingRow;
}

const exchanged = () => row({ executor_organization_id: EXECUTOR });

const SCOPE_SETS: Array<[string, string[]]> = [
  ['no extra scope', ['bookings:read']],
  ['passengers:read', ['bookings:read', 'passengers:read']],
  ['pricing:read', ['bookings:read', 'pricing:read']],
  ['both', ['bookings:read', 'passengers:read', 'pricing:read']],
];

describe('roleOf', () => {
  test('originator that also executes, originator, executor', () => {
    assert.equal(roleOf(row(), ORIGINATOR), 'originator_and_executor');
    assert.equal(roleOf(exchanged(), ORIGINATOR), 'originator');
    assert.equal(roleOf(exchanged(), EXECUTOR), 'executor');
  });
  test('an organization that is neither side is a programming error', () => {
    assert.throws(() => roleOf(row(), STRANGER));
    assert.throws(() => roleOf(exchanged(), STRANGER));
  });
});

describe('bookingView: fields every role sees', () => {
  test('the originator that executes sees the whole public booking', () => {
    const b = bookingView(row(), ORIGINATOR, ['bookings:read']);
    assert.deepEqual(b, {
      id: '77777777-7777-4777-8777-777777777777',
      reference: '4210001',
      external_id: 'ERP-1',
      status: 'confirmed',
      service_type: 'transfer',
      hours: null,
      pickup_at: '2026-12-01T10:00:00.000Z',
      end_at: '2026-12-01T11:00:00.000Z',
      pickup: { address: 'Aeropuerto de Málaga T2', lat: 36.6749, lng: -4.4991 },
      destination: { address: 'Hotel Mirador, Marbella', lat: 36.5101, lng: -4.8825 },
      distance_km: 52.4,
      flight: { number: 'IB3911', pending: false },
      passengers: {
        count: 2,
        luggage: 2,
        luggage_big: 1,
        luggage_small: 1,
        baby_seats: 0,
        child_seats: 0,
        booster_seats: 0,
        wheelchair: false,
      },
      vehicle_category: 'sedan',
      customer: { id: CUSTOMER, name: 'Hotel Mirador' },
      assignment: {
        external: false,
        driver: { id: DRIVER, name: 'Lucía Gómez', nickname: 'Lucía' },
        vehicle: { id: VEHICLE, plate: '1234ABC', model: 'Mercedes-Benz Clase E' },
      },
      role: 'originator_and_executor',
      channel: 'manual',
      confirmation: { mode: 'automatic', confirmed_at: '2026-11-20T09:00:00.000Z' },
      event_reference: null,
      created_at: '2026-11-19T08:00:00.000Z',
    });
  });

  test('every internal status maps to its public name', () => {
    for (const [pub, internal] of Object.entries(STATUS_TO_INTERNAL)) {
      assert.equal(bookingView(row({ status: internal }), ORIGINATOR, []).status, pub);
    }
  });

  test('no link, no customer, no flight, no places are null; no confirmation is absent members', () => {
    const b = bookingView(
      row({
        link_external_id: null,
        customer_id: null,
        customer_name: null,
        flight: null,
        destination: null,
        service_type: 'hourly',
        hours: 3.5,
        end_at: null,
        confirmed_at: null,
        confirmation_mode: null,
      }),
      ORIGINATOR,
      [],
    );
    assert.equal(b.external_id, null);
    assert.equal(b.customer, null);
    assert.equal(b.flight, null);
    assert.equal(b.destination, null);
    assert.equal(b.hours, 3.5);
    assert.equal(typeof b.distance_km, 'number');
    assert.deepEqual(b.confirmation, {});
  });

  test('unassigned booking: external false, driver and vehicle null', () => {
    const b = bookingView(row({ driver_id: null, vehicle_id: null }), ORIGINATOR, []);
    assert.deepEqual(b.assignment, { external: false, driver: null, vehicle: null });
  });

  test('stored-only data never appears, whatever the scopes', () => {
    for (const org of [ORIGINATOR, EXECUTOR]) {
      const json = JSON.stringify(
        bookingView(exchanged(), org, ['bookings:read', 'passengers:read', 'pricing:read']),
      );
      for (const secret of ['internal', 'internal note', 'chat line', 'PEREZ', 'notes']) {
        assert.ok(!json.includes(secret), `${secret} leaked for ${org}`);
      }
    }
  });
});

describe('bookingView: originator of a booking another company executes', () => {
  test('assignment is external with no driver or vehicle', () => {
    const b = bookingView(exchanged(), ORIGINATOR, ['bookings:read']);
    assert.equal(b.role, 'originator');
    assert.deepEqual(b.assignment, { external: true, driver: null, vehicle: null });
  });
});

for (const [role, org, make, pricing] of [
  ['originator_and_executor', ORIGINATOR, row, ORIGINATOR_PRICING],
  ['originator', ORIGINATOR, exchanged, ORIGINATOR_PRICING],
  ['executor', EXECUTOR, exchanged, { currency: 'EUR', net_executor: 80 }],
] as const) {
  describe(`bookingView as ${role}: the four scope combinations`, () => {
    for (const [name, scopes] of SCOPE_SETS) {
      test(name, () => {
        const b = bookingView(make(), org, scopes);
        assert.equal(b.role, role);
        if (scopes.includes('passengers:read')) {
          assert.deepEqual(b.passenger, {
            name: 'Ana Pérez',
            phone: '+34600111222',
            email: 'ana@example.com',
          });
        } else {
          assert.equal('passenger' in b, false, 'absent, not null');
        }
        if (scopes.includes('pricing:read')) {
          assert.deepEqual(b.pricing, pricing);
        } else {
          assert.equal('pricing' in b, false, 'absent, not null');
        }
      });
    }
  });
}

test('the executor sees its own driver and vehicle, and only its net price', () => {
  const b = bookingView(exchanged(), EXECUTOR, ['pricing:read']);
  assert.deepEqual(b.assignment, {
    external: false,
    driver: { id: DRIVER, name: 'Lucía Gómez', nickname: 'Lucía' },
    vehicle: { id: VEHICLE, plate: '1234ABC', model: 'Mercedes-Benz Clase E' },
  });
  const json = JSON.stringify(b);
  for (const hidden of ['total', 'sale_total', 'vat_pct', 'payment_status', 'extras']) {
    assert.ok(!json.includes(hidden), `${hidden} visible to the executor`);
  }
});

test('the originator never sees the executor net', () => {
  const b = bookingView(exchanged(), ORIGINATOR, ['pricing:read']);
  assert.ok(!JSON.stringify(b).includes('net_executor'));
});

test('the view is pure: same input, same output, input untouched', () => {
  const r = exchanged();
  const before = JSON.stringify(r);
  assert.deepEqual(bookingView(r, EXECUTOR, ['pricing:read']), bookingView(r, EXECUTOR, ['pricing:read']));
  assert.equal(JSON.stringify(r), before);
});

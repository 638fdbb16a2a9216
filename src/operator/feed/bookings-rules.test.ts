import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AppError } from '../../http/errors.js';
import type { BookingInput, BookingRecordRow } from './booking-schemas.js';
import { checkFieldRules, drawDigits, toColumns, toInput } from './bookings-rules.js';

const ORG = '00000000-0000-4000-8000-000000000001';

const minimal: BookingInput = {
  status: 'confirmada',
  service_type: 'transfer',
  pickup_at: '2026-12-01T10:00:00.000Z',
  passengers: { count: 2 },
};

function fieldOf(fn: () => void): unknown {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof AppError);
    assert.equal(error.code, 'validation_error');
    return error.details?.field;
  }
  return undefined;
}

test('toColumns resolves every omitted field, so one body always stores one row', () => {
  const c = toColumns(minimal);
  assert.deepEqual(c.passengers, {
    count: 2,
    luggage: 0,
    luggage_big: 0,
    luggage_small: 0,
    baby_seats: 0,
    child_seats: 0,
    booster_seats: 0,
    wheelchair: false,
  });
  assert.equal(c.hours, null);
  assert.equal(c.confirmation_mode, null);
  assert.equal(c.confirmed_at, null);
  assert.equal(c.pricing, null);
  assert.deepEqual(toColumns({ ...minimal, flight: { number: null } }).flight, {
    number: null,
    pending: false,
  });
  assert.deepEqual(toColumns({ ...minimal, passenger: { name: 'Ana' } }).passenger, {
    name: 'Ana',
    phone: null,
    email: null,
  });
  assert.deepEqual(toColumns({ ...minimal, confirmation: { mode: 'manual' } }).confirmation_mode, 'manual');
});

test('toInput of a stored booking gives back the same columns', () => {
  const c = toColumns({
    ...minimal,
    confirmation: { mode: 'auto', confirmed_at: '2026-11-01T00:00:00.000Z' },
  });
  const { confirmation_mode, confirmed_at, ...rest } = c;
  const record = {
    ...rest,
    id: ORG,
    originator_organization_id: ORG,
    reference: '101',
    pickup_at: new Date(c.pickup_at),
    confirmation: { mode: confirmation_mode, confirmed_at: confirmed_at ? new Date(confirmed_at) : null },
    created_at: new Date(),
    updated_at: new Date(),
  } as BookingRecordRow;
  assert.deepEqual(toColumns(toInput(record)), c);
});

test('hours belong to hourly services only, and hourly needs them', () => {
  assert.equal(
    fieldOf(() => checkFieldRules(toColumns({ ...minimal, hours: 2 }), ORG)),
    'hours',
  );
  assert.equal(
    fieldOf(() => checkFieldRules(toColumns({ ...minimal, service_type: 'hourly' }), ORG)),
    'hours',
  );
  assert.equal(
    fieldOf(() => checkFieldRules(toColumns({ ...minimal, service_type: 'hourly', hours: 1 }), ORG)),
    undefined,
  );
});

test('end_at may equal pickup_at but not precede it', () => {
  const at = (end_at: string) => fieldOf(() => checkFieldRules(toColumns({ ...minimal, end_at }), ORG));
  assert.equal(at('2026-12-01T10:00:00.000Z'), undefined);
  assert.equal(at('2026-12-01T09:59:59.999Z'), 'end_at');
});

test('the originator cannot be its own executor', () => {
  const c = toColumns({ ...minimal, executor_organization_id: ORG });
  assert.equal(
    fieldOf(() => checkFieldRules(c, ORG)),
    'executor_organization_id',
  );
});

test('the random part of a new number: 8 digits, zero-padded', () => {
  assert.equal(
    drawDigits(() => 42),
    '00000042',
  );
  assert.match(drawDigits(), /^\d{8}$/);
});

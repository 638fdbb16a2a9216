import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AppError } from '../../http/errors.js';
import { constraintToClientError } from './constraints.js';

const pgError = (code: string, constraint?: string) => Object.assign(new Error('db'), { code, constraint });

function mapped(error: unknown): unknown {
  try {
    constraintToClientError(error);
  } catch (thrown) {
    return thrown;
  }
  assert.fail('must throw');
}

test('unique violations are 409 conflicts naming the field', () => {
  const e = mapped(pgError('23505', 'bookings_reference_key'));
  assert.ok(e instanceof AppError);
  assert.equal(e.code, 'conflict');
  assert.deepEqual(e.details, { field: 'reference' });
  assert.deepEqual((mapped(pgError('23505', 'bookings_pkey')) as AppError).details, { field: 'id' });
});

test('foreign-key and check violations are 400s naming the field', () => {
  for (const [constraint, field] of [
    ['bookings_driver_id_fkey', 'driver_id'],
    ['bookings_vehicle_id_fkey', 'vehicle_id'],
    ['bookings_customer_id_fkey', 'customer_id'],
    ['bookings_executor_organization_id_fkey', 'executor_organization_id'],
  ]) {
    const e = mapped(pgError('23503', constraint)) as AppError;
    assert.equal(e.code, 'validation_error');
    assert.deepEqual(e.details, { field });
  }
  const check = mapped(pgError('23514', 'bookings_check')) as AppError;
  assert.deepEqual(check.details, { field: 'executor_organization_id' });
});

test('the organization vanishing mid-request is a 404', () => {
  assert.equal(
    (mapped(pgError('23503', 'bookings_originator_organization_id_fkey')) as AppError).code,
    'not_found',
  );
});

test('a value PostgreSQL cannot store is a 400 on the body', () => {
  const e = mapped(pgError('22021')) as AppError;
  assert.equal(e.code, 'validation_error');
  assert.deepEqual(e.details, { field: 'body' });
});

test('anything else passes through unchanged', () => {
  const other = pgError('40001');
  assert.equal(mapped(other), other);
  const unknownUnique = mapped(pgError('23505', 'something_else')) as AppError;
  assert.equal(unknownUnique.code, 'conflict');
  assert.equal(unknownUnique.details, undefined);
});

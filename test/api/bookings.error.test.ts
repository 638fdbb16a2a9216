import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { BOOKING_STATUSES } from '../../src/domain/bookings.js';
import { serviceForFile } from '../support/context.js';
import { createTenant } from '../support/tenants.js';
import { ALL_READ, assertError, withoutRequestId } from './read-support.js';

const svc = await serviceForFile();
const t = await createTenant(svc, { scopes: ALL_READ });

const list = (query: string) => svc.call('GET', `/bookings?${query}`, { key: t.key });

describe('GET /bookings: every invalid value is a 400 naming the parameter', () => {
  test('status: unknown, internal names and case are refused with the allowed list', async () => {
    for (const status of ['confirmada', 'CONFIRMED', 'pending', '', 'confirmed,cancelled']) {
      assertError(await list(`status=${encodeURIComponent(status)}`), 400, 'validation_error', {
        param: 'status',
        allowed: [...BOOKING_STATUSES],
      });
    }
    const twice = await list('status=confirmed&status=cancelled');
    assertError(twice, 400, 'validation_error');
    assert.equal(twice.body.error.details.param, 'status');
  });

  test('customer_id must be a UUID', async () => {
    for (const id of ['abc', '42', `${randomUUID()}0`, 'urn:uuid:a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '']) {
      assertError(await list(`customer_id=${encodeURIComponent(id)}`), 400, 'validation_error', {
        param: 'customer_id',
      });
    }
  });

  for (const param of ['pickup_from', 'pickup_to', 'created_from', 'created_to']) {
    test(`${param} must be an ISO 8601 date-time with offset`, async () => {
      for (const value of [
        'tomorrow',
        '2026-12-01',
        '2026-12-01T10:00:00',
        '2026-02-30T10:00:00Z',
        '2026-12-01T25:00:00Z',
        '1733046000',
        '0000-01-01T00:00:00Z',
        '2026-06-30T23:59:60Z',
        '',
      ]) {
        assertError(await list(`${param}=${encodeURIComponent(value)}`), 400, 'validation_error', { param });
      }
    });
  }

  test('external_id longer than 200 characters', async () => {
    assertError(await list(`external_id=${'x'.repeat(201)}`), 400, 'validation_error', {
      param: 'external_id',
    });
    assert.equal((await list(`external_id=${'x'.repeat(200)}`)).status, 200);
  });

  test('limit below 1 or not an integer', async () => {
    for (const value of ['0', '-1', '1.5', 'abc', '', '1e-1']) {
      assertError(await list(`limit=${value}`), 400, 'validation_error', { param: 'limit' });
    }
    const twice = await list('limit=1&limit=2');
    assertError(twice, 400, 'validation_error');
    assert.equal(twice.body.error.details.param, 'limit');
  });

  test('limit is plain decimal digits: exponents, signs, spaces, fractions, hex and leading zeros are 400', async () => {
    for (const value of ['1e309', '1e2', '1.0', '01', '+5', '%205', '5%20', '0x10', '-0', '1_0']) {
      assertError(await list(`limit=${value}`), 400, 'validation_error', { param: 'limit' });
    }
    // Digits above 100, however many, are a valid integer: cut to 100 as the contract says.
    assert.equal((await list('limit=100000000000000000000')).status, 200);
    assert.equal((await list('limit=7')).status, 200);
  });

  test('a NUL byte in any query value is a 400 naming the parameter, never a 500', async () => {
    for (const [param, value] of [
      ['external_id', '%00'],
      ['external_id', 'abc%00def'],
      ['cursor', '%00'],
      ['status', '%00'],
    ]) {
      assertError(await list(`${param}=${value}`), 400, 'validation_error', { param });
    }
    const events = await svc.call('GET', '/events?type=%00', { key: t.key });
    assertError(events, 400, 'validation_error', { param: 'type' });
    const logged = svc.logs.join('');
    assert.doesNotMatch(logged, /unexpected failure/, 'nothing was logged as a failure');
  });

  test('an unknown parameter is refused, not ignored', async () => {
    for (const param of ['statuss', 'offset', 'page', 'organization_id', 'sort']) {
      assertError(await list(`${param}=1`), 400, 'validation_error', { param });
    }
  });
});

describe('GET /bookings/{id}', () => {
  test('anything but a UUID or a booking number is the 404 of a missing booking', async () => {
    const missing = await svc.call('GET', `/bookings/${randomUUID()}`, { key: t.key });
    assertError(missing, 404, 'not_found');
    for (const id of [
      'abc',
      '12a',
      '-1',
      '1.5',
      'urn:uuid:a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
      '1'.repeat(40),
    ]) {
      const res = await svc.call('GET', `/bookings/${encodeURIComponent(id)}`, { key: t.key });
      assert.deepEqual(withoutRequestId(res), withoutRequestId(missing), id);
    }
    const number = await svc.call('GET', '/bookings/424242424242', { key: t.key });
    assert.deepEqual(withoutRequestId(number), withoutRequestId(missing));
  });
});

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { serviceForFile } from '../support/context.js';
import { createTenant } from '../support/tenants.js';
import { ALL_READ, assertError, withoutRequestId } from './read-support.js';

const svc = await serviceForFile();
const t = await createTenant(svc, { scopes: ALL_READ });

for (const path of ['/customers', '/drivers', '/vehicles']) {
  describe(`${path} errors`, () => {
    test('active is strictly true or false', async () => {
      for (const value of ['1', '0', 'TRUE', 'False', 'yes', '', 'true,false']) {
        const res = await svc.call('GET', `${path}?active=${encodeURIComponent(value)}`, { key: t.key });
        assertError(res, 400, 'validation_error', { param: 'active', allowed: ['true', 'false'] });
      }
      const twice = await svc.call('GET', `${path}?active=true&active=false`, { key: t.key });
      assertError(twice, 400, 'validation_error');
      assert.equal(twice.body.error.details.param, 'active');
    });

    test('limit below 1 or not an integer', async () => {
      for (const value of ['0', '-1', '1.5', 'abc', '']) {
        const res = await svc.call('GET', `${path}?limit=${value}`, { key: t.key });
        assertError(res, 400, 'validation_error', { param: 'limit' });
      }
    });

    test('an unknown query parameter is refused by name', async () => {
      for (const param of ['organization_id', 'status', 'Active', 'offset']) {
        const res = await svc.call('GET', `${path}?${param}=x`, { key: t.key });
        assertError(res, 400, 'validation_error', { param });
      }
    });

    test('an id that is not a UUID is the same 404 as a missing one', async () => {
      const missing = await svc.call('GET', `${path}/${randomUUID()}`, { key: t.key });
      assertError(missing, 404, 'not_found');
      for (const id of ['abc', '123', 'urn:uuid:a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', `${randomUUID()}x`]) {
        const res = await svc.call('GET', `${path}/${encodeURIComponent(id)}`, { key: t.key });
        assert.deepEqual(withoutRequestId(res), withoutRequestId(missing), id);
      }
    });
  });
}

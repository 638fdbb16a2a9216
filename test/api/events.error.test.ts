import { after, before, test } from 'node:test';
import { EVENT_TYPES } from '../../src/api/events/schemas.js';
import { startService, type TestService } from '../support/context.js';
import { createTenant, type Tenant } from '../support/tenants.js';
import { ALL_READ, assertError } from './read-support.js';

let svc: TestService;
let t: Tenant;
before(async () => {
  svc = await startService();
  t = await createTenant(svc, { scopes: ALL_READ, flags: { outbox_enabled: true } });
});
after(() => svc.close());

test('an unknown type names the parameter and the allowed values', async () => {
  for (const type of ['booking.exploded', 'BOOKING.CREATED', 'booking', '*', '']) {
    const res = await svc.call('GET', `/events?type=${encodeURIComponent(type)}`, { key: t.key });
    assertError(res, 400, 'validation_error', { param: 'type', allowed: [...EVENT_TYPES] });
  }
});

test('resource_id must be a UUID', async () => {
  for (const id of ['abc', '1234', 'urn:uuid:a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '']) {
    const res = await svc.call('GET', `/events?resource_id=${encodeURIComponent(id)}`, { key: t.key });
    assertError(res, 400, 'validation_error', { param: 'resource_id' });
  }
});

test('there is no date filter: created_from and friends are unknown parameters', async () => {
  for (const param of ['created_from', 'since', 'organization_id']) {
    const res = await svc.call('GET', `/events?${param}=2026-01-01T00:00:00Z`, { key: t.key });
    assertError(res, 400, 'validation_error', { param });
  }
});

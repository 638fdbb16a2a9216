import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { serviceForFile } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { createTenant } from '../support/tenants.js';
import {
  assertError,
  bookedTenant,
  deleteLink,
  getLink,
  LINK_SCOPES,
  putLink,
} from './external-ids.fixture.js';

const svc = await serviceForFile();

/** The error without its request id: a foreign booking and a missing one must answer the same. */
const shape = (res: any) => ({
  status: res.status,
  code: res.body.error.code,
  message: res.body.error.message,
  details: res.body.error.details,
});

describe('scopes: all of them are needed', () => {
  const cases: [string, string[], string][] = [
    ['GET', ['links:read'], 'bookings:read'],
    ['GET', ['bookings:read', 'links:write'], 'links:read'],
    ['PUT', ['links:write', 'links:read'], 'bookings:read'],
    ['PUT', ['bookings:read', 'links:read'], 'links:write'],
    ['DELETE', ['links:write'], 'bookings:read'],
    ['DELETE', ['bookings:read', 'links:read'], 'links:write'],
  ];
  for (const [method, scopes, missing] of cases) {
    test(`${method} with ${scopes.join(' + ')} is 403 insufficient_scope ${missing}`, async () => {
      const owner = await bookedTenant(svc);
      await putLink(svc, owner.tenant.key, owner.bookingId, { external_id: 'SCOPED' });
      const t = await createTenant(svc, { scopes, organizationId: owner.tenant.organization.id });
      const res = await svc.call(method, `/bookings/${owner.bookingId}/external-id`, {
        key: t.key,
        ...(method === 'PUT' ? { body: { external_id: 'X' } } : {}),
      });
      assertError(res, 403, 'insufficient_scope', { required_scope: missing });
      assert.equal(res.headers['x-ratelimit-limit'], '600');
      assert.equal((await getLink(svc, owner.tenant.key, owner.bookingId)).body.external_id, 'SCOPED');
    });
  }

  test('a key holding fewer scopes than its integration is limited to its own', async () => {
    const t = await createTenant(svc, { scopes: LINK_SCOPES, keyScopes: ['bookings:read', 'links:read'] });
    const bookingId = randomUUID();
    await putBooking(svc, t.organization.id, {}, bookingId);
    assert.equal((await getLink(svc, t.key, bookingId)).status, 200);
    assertError(await putLink(svc, t.key, bookingId, { external_id: 'X' }), 403, 'insufficient_scope', {
      required_scope: 'links:write',
    });
  });

  test('no key: 401 unauthorized', async () => {
    const { bookingId } = await bookedTenant(svc);
    assertError(await svc.call('GET', `/bookings/${bookingId}/external-id`), 401, 'unauthorized');
    assertError(
      await svc.call('PUT', `/bookings/${bookingId}/external-id`, { body: { external_id: 'X' } }),
      401,
      'unauthorized',
    );
  });
});

describe('organization boundary', () => {
  test('another organization’s booking answers exactly like a missing one, on every method', async () => {
    const owner = await bookedTenant(svc);
    await putLink(svc, owner.tenant.key, owner.bookingId, { external_id: 'MINE' });
    const stranger = await createTenant(svc, { scopes: LINK_SCOPES });
    const missing = randomUUID();
    for (const [method, body] of [
      ['GET', undefined],
      ['PUT', { external_id: 'THEIRS' }],
      ['DELETE', undefined],
    ] as const) {
      const foreign = await svc.call(method, `/bookings/${owner.bookingId}/external-id`, {
        key: stranger.key,
        body,
      });
      const absent = await svc.call(method, `/bookings/${missing}/external-id`, { key: stranger.key, body });
      assertError(foreign, 404, 'not_found');
      assert.deepEqual(shape(foreign), shape(absent), method);
    }
    assert.equal((await getLink(svc, owner.tenant.key, owner.bookingId)).body.external_id, 'MINE');
    const rows = await svc.db.query('SELECT 1 FROM booking_external_ids WHERE integration_id = $1', [
      stranger.integration.id,
    ]);
    assert.equal(rows.length, 0, 'nothing written for the stranger');
  });

  test('an executor that loses the booking loses access to its link', async () => {
    const originator = await createTenant(svc, { scopes: LINK_SCOPES });
    const executor = await createTenant(svc, { scopes: LINK_SCOPES });
    const bookingId = randomUUID();
    const exchanged = { executor_organization_id: executor.organization.id };
    await putBooking(svc, originator.organization.id, exchanged, bookingId);
    assert.equal((await putLink(svc, executor.key, bookingId, { external_id: 'EXEC' })).status, 200);

    await putBooking(svc, originator.organization.id, { executor_organization_id: null }, bookingId);
    assertError(await getLink(svc, executor.key, bookingId), 404, 'not_found');
    assertError(await putLink(svc, executor.key, bookingId, { external_id: 'EXEC2' }), 404, 'not_found');
    assertError(await deleteLink(svc, executor.key, bookingId), 404, 'not_found');
  });
});

describe('integration boundary', () => {
  test('an integration neither sees, nor deletes, nor collides with another’s link', async () => {
    const a = await bookedTenant(svc);
    const b = await createTenant(svc, { scopes: LINK_SCOPES, organizationId: a.tenant.organization.id });
    await putLink(svc, a.tenant.key, a.bookingId, { external_id: 'A-ONLY' });

    assert.equal((await getLink(svc, b.key, a.bookingId)).body.external_id, null);
    assertError(await deleteLink(svc, b.key, a.bookingId), 404, 'not_found');
    assert.equal((await getLink(svc, a.tenant.key, a.bookingId)).body.external_id, 'A-ONLY');

    const other = randomUUID();
    await putBooking(svc, a.tenant.organization.id, {}, other);
    assert.equal((await putLink(svc, b.key, other, { external_id: 'A-ONLY' })).status, 200, 'no collision');
  });

  test('Idempotency-Key records of one integration never answer another', async () => {
    const a = await bookedTenant(svc);
    const b = await createTenant(svc, { scopes: LINK_SCOPES, organizationId: a.tenant.organization.id });
    const headers = { 'idempotency-key': 'same-key' };
    const ra = await putLink(svc, a.tenant.key, a.bookingId, { external_id: 'IA' }, headers);
    const rb = await putLink(svc, b.key, a.bookingId, { external_id: 'IB' }, headers);
    assert.deepEqual([ra.status, rb.status], [200, 200]);
    assert.equal(rb.headers['idempotent-replayed'], undefined);
    assert.equal(rb.body.external_id, 'IB');
  });
});

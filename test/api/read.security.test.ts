import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { putBooking, putCustomer, putDriver, putVehicle } from '../support/feed.js';
import { createTenant } from '../support/tenants.js';
import { ALL_READ, assertError, exchangePair, putExchanged, withoutRequestId } from './read-support.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

describe('missing scope: 403 insufficient_scope naming it, on every read route', () => {
  const ROUTES: Array<[string, string]> = [
    ['/bookings', 'bookings:read'],
    [`/bookings/${randomUUID()}`, 'bookings:read'],
    ['/bookings/1234567', 'bookings:read'],
    ['/customers', 'customers:read'],
    [`/customers/${randomUUID()}`, 'customers:read'],
    ['/drivers', 'drivers:read'],
    [`/drivers/${randomUUID()}`, 'drivers:read'],
    ['/vehicles', 'vehicles:read'],
    [`/vehicles/${randomUUID()}`, 'vehicles:read'],
    ['/events', 'events:read'],
  ];
  for (const [path, scope] of ROUTES) {
    test(`GET ${path.replace(/[0-9a-f-]{36}/, '{id}')} needs ${scope}`, async () => {
      const t = await createTenant(svc, { scopes: ALL_READ.filter((s) => s !== scope) });
      const res = await svc.call('GET', path, { key: t.key });
      assertError(res, 403, 'insufficient_scope', { required_scope: scope });
      // A scope the key lacks but the integration has is missing too (effective scopes).
      const u = await createTenant(svc, { scopes: ALL_READ, keyScopes: ALL_READ.filter((s) => s !== scope) });
      assertError(await svc.call('GET', path, { key: u.key }), 403, 'insufficient_scope', {
        required_scope: scope,
      });
    });
  }
});

describe("another organization's resources: exactly the 404 of a missing one", () => {
  test('bookings by UUID and by booking number', async () => {
    const owner = await createTenant(svc, { scopes: ALL_READ });
    const stranger = await createTenant(svc, { scopes: ALL_READ });
    const id = randomUUID();
    const booking = await putBooking(svc, owner.organization.id, {}, id);
    const reference = booking.reference as string;
    assert.equal((await svc.call('GET', `/bookings/${id}`, { key: owner.key })).status, 200);
    assert.equal((await svc.call('GET', `/bookings/${reference}`, { key: owner.key })).status, 200);

    const missingById = await svc.call('GET', `/bookings/${randomUUID()}`, { key: stranger.key });
    assertError(missingById, 404, 'not_found');
    const missingByRef = await svc.call('GET', '/bookings/99999999999', { key: stranger.key });
    const foreignById = await svc.call('GET', `/bookings/${id}`, { key: stranger.key });
    const foreignByRef = await svc.call('GET', `/bookings/${reference}`, { key: stranger.key });
    const malformed = await svc.call('GET', '/bookings/12a4', { key: stranger.key });
    for (const res of [missingByRef, foreignById, foreignByRef, malformed]) {
      assert.deepEqual(withoutRequestId(res), withoutRequestId(missingById));
      assert.notEqual(res.body.error.request_id, missingById.body.error.request_id);
    }
    const list = await svc.call('GET', '/bookings', { key: stranger.key });
    assert.deepEqual(list.body.data, []);
  });

  test('an executor that lost the booking no longer sees it', async () => {
    const { originator, executor } = await exchangePair(svc);
    const id = randomUUID();
    const body = { executor_organization_id: executor.organization.id };
    const booking = await putBooking(svc, originator.organization.id, body, id);
    assert.equal((await svc.call('GET', `/bookings/${id}`, { key: executor.key })).status, 200);
    await putBooking(svc, originator.organization.id, { executor_organization_id: null }, id);
    assertError(await svc.call('GET', `/bookings/${id}`, { key: executor.key }), 404, 'not_found');
    assertError(
      await svc.call('GET', `/bookings/${booking.reference}`, { key: executor.key }),
      404,
      'not_found',
    );
    assert.deepEqual((await svc.call('GET', '/bookings', { key: executor.key })).body.data, []);
  });

  for (const [path, put] of [
    ['/customers', putCustomer],
    ['/drivers', putDriver],
    ['/vehicles', putVehicle],
  ] as const) {
    test(path, async () => {
      const owner = await createTenant(svc, { scopes: ALL_READ });
      const stranger = await createTenant(svc, { scopes: ALL_READ });
      const id = randomUUID();
      await put(svc, owner.organization.id, {}, id);
      assert.equal((await svc.call('GET', `${path}/${id}`, { key: owner.key })).status, 200);
      const missing = await svc.call('GET', `${path}/${randomUUID()}`, { key: stranger.key });
      assertError(missing, 404, 'not_found');
      const foreign = await svc.call('GET', `${path}/${id}`, { key: stranger.key });
      assert.deepEqual(withoutRequestId(foreign), withoutRequestId(missing));
      assert.deepEqual((await svc.call('GET', path, { key: stranger.key })).body.data, []);
    });
  }
});

describe('no parameter widens the organization', () => {
  test("another organization's customer_id finds nothing", async () => {
    const owner = await createTenant(svc, { scopes: ALL_READ });
    const stranger = await createTenant(svc, { scopes: ALL_READ });
    const customer = randomUUID();
    await putCustomer(svc, owner.organization.id, {}, customer);
    await putBooking(svc, owner.organization.id, { customer_id: customer });
    const res = await svc.call('GET', `/bookings?customer_id=${customer}`, { key: stranger.key });
    assert.deepEqual(res.body.data, []);
  });

  test('organization_id in the query is refused, not ignored', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    for (const path of ['/bookings', '/customers', '/drivers', '/vehicles', '/events']) {
      const res = await svc.call('GET', `${path}?organization_id=${t.organization.id}`, { key: t.key });
      assertError(res, 400, 'validation_error', { param: 'organization_id' });
    }
  });

  test("external_id finds only this integration's link, and only a visible booking", async () => {
    const owner = await createTenant(svc, { scopes: ALL_READ });
    // A second integration of the same organization: its links are its own.
    const sibling = await createTenant(svc, { scopes: ALL_READ, organizationId: owner.organization.id });
    const id = randomUUID();
    await putBooking(svc, owner.organization.id, {}, id);
    await svc.db.query(
      'INSERT INTO booking_external_ids (integration_id, booking_id, external_id) VALUES ($1, $2, $3)',
      [owner.integration.id, id, 'ERP-1'],
    );
    const mine = await svc.call('GET', '/bookings?external_id=ERP-1', { key: owner.key });
    assert.deepEqual(
      mine.body.data.map((b: any) => b.id),
      [id],
    );
    const theirs = await svc.call('GET', '/bookings?external_id=ERP-1', { key: sibling.key });
    assert.deepEqual(theirs.body.data, []);
    const one = await svc.call('GET', `/bookings/${id}`, { key: sibling.key });
    assert.equal(one.body.external_id, null, "the sibling integration does not see the other's link");
  });

  test('a link to a booking the organization no longer sees is not returned', async () => {
    const { originator, executor } = await exchangePair(svc);
    const id = randomUUID();
    await putExchanged(svc, originator, executor, {}, id);
    await svc.db.query(
      'INSERT INTO booking_external_ids (integration_id, booking_id, external_id) VALUES ($1, $2, $3)',
      [executor.integration.id, id, 'FLEET-9'],
    );
    const before = await svc.call('GET', '/bookings?external_id=FLEET-9', { key: executor.key });
    assert.equal(before.body.data.length, 1);
    // The originator takes the booking back: the former executor loses it.
    await putBooking(svc, originator.organization.id, {}, id);
    const afterLoss = await svc.call('GET', '/bookings?external_id=FLEET-9', { key: executor.key });
    assert.deepEqual(afterLoss.body.data, []);
  });
});

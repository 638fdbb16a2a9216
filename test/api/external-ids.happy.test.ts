import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { serviceForFile } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { createTenant } from '../support/tenants.js';
import {
  ageLinks,
  assertError,
  bookedTenant,
  deleteLink,
  getLink,
  LINK_SCOPES,
  putLink,
} from './external-ids.fixture.js';
import { putExchanged } from './read-support.js';

const svc = await serviceForFile();

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('GET /bookings/{id}/external-id', () => {
  test('without a link: 200 with external_id, created_at and updated_at null', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const res = await getLink(svc, tenant.key, bookingId);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      id: bookingId,
      entity: 'booking',
      external_id: null,
      created_at: null,
      updated_at: null,
    });
    assert.match(String(res.headers['x-svc-request-id']), /^req_/);
    assert.equal(res.headers['x-ratelimit-limit'], '600');
  });

  test('after a PUT it shows the link', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const put = await putLink(svc, tenant.key, bookingId, { external_id: 'ERP-1001' });
    const res = await getLink(svc, tenant.key, bookingId);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, put.body);
  });
});

describe('PUT /bookings/{id}/external-id', () => {
  test('creates the link: 200 ExternalIdLink', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const res = await putLink(svc, tenant.key, bookingId, { external_id: 'ERP-1001' });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body), ['id', 'entity', 'external_id', 'created_at', 'updated_at']);
    assert.equal(res.body.id, bookingId);
    assert.equal(res.body.entity, 'booking');
    assert.equal(res.body.external_id, 'ERP-1001');
    assert.match(res.body.created_at, ISO);
    assert.equal(res.body.updated_at, res.body.created_at);
    assert.match(String(res.headers['content-type']), /^application\/json/);
  });

  test('the same pair again is an idempotent 200 that leaves updated_at alone', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    await putLink(svc, tenant.key, bookingId, { external_id: 'SAME' });
    await ageLinks(svc, tenant, 10);
    const aged = (await getLink(svc, tenant.key, bookingId)).body;
    const again = await putLink(svc, tenant.key, bookingId, { external_id: 'SAME' });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, aged);
  });

  test('another value replaces the old one: created_at kept, updated_at moves', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    await putLink(svc, tenant.key, bookingId, { external_id: 'OLD' });
    await ageLinks(svc, tenant, 10);
    const aged = (await getLink(svc, tenant.key, bookingId)).body;
    const res = await putLink(svc, tenant.key, bookingId, { external_id: 'NEW' });
    assert.equal(res.status, 200);
    assert.equal(res.body.external_id, 'NEW');
    assert.equal(res.body.created_at, aged.created_at);
    assert.ok(Date.parse(res.body.updated_at) > Date.parse(aged.updated_at));
    const rows = await svc.db.query('SELECT external_id FROM booking_external_ids WHERE booking_id = $1', [
      bookingId,
    ]);
    assert.deepEqual(rows, [{ external_id: 'NEW' }], 'one id per integration per booking');
  });

  test('a replaced value is free for another booking', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const second = randomUUID();
    await putBooking(svc, tenant.organization.id, {}, second);
    await putLink(svc, tenant.key, bookingId, { external_id: 'MOVING' });
    await putLink(svc, tenant.key, bookingId, { external_id: 'OTHER' });
    const res = await putLink(svc, tenant.key, second, { external_id: 'MOVING' });
    assert.equal(res.status, 200, res.text);
  });

  test('accepts 1 and 200 characters and every printable ASCII character, spaces included', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const printable = Array.from({ length: 0x7e - 0x20 + 1 }, (_, i) => String.fromCharCode(0x20 + i)).join(
      '',
    );
    for (const value of ['x', ' ', 'y'.repeat(200), printable, ' padded ']) {
      const res = await putLink(svc, tenant.key, bookingId, { external_id: value });
      assert.equal(res.status, 200, `${JSON.stringify(value)}: ${res.text}`);
      assert.equal(res.body.external_id, value);
    }
  });

  test('an upper-case booking UUID names the same booking', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const res = await putLink(svc, tenant.key, bookingId.toUpperCase(), { external_id: 'UPPER' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.id, bookingId);
  });

  test('the executor organization links a booking it executes', async () => {
    const originator = await createTenant(svc, { scopes: LINK_SCOPES });
    const executor = await createTenant(svc, { scopes: LINK_SCOPES });
    const bookingId = randomUUID();
    await putExchanged(svc, originator, executor, {}, bookingId);
    const res = await putLink(svc, executor.key, bookingId, { external_id: 'EXEC-1' });
    assert.equal(res.status, 200, res.text);
    assert.equal((await getLink(svc, executor.key, bookingId)).body.external_id, 'EXEC-1');
    assert.equal((await getLink(svc, originator.key, bookingId)).body.external_id, null);
  });

  test('two integrations of one organization keep their own ids, even the same value', async () => {
    const a = await bookedTenant(svc);
    const b = await createTenant(svc, { scopes: LINK_SCOPES, organizationId: a.tenant.organization.id });
    const other = randomUUID();
    await putBooking(svc, a.tenant.organization.id, {}, other);

    assert.equal((await putLink(svc, a.tenant.key, a.bookingId, { external_id: 'SHARED' })).status, 200);
    assert.equal((await getLink(svc, b.key, a.bookingId)).body.external_id, null, 'b does not see a’s link');
    assert.equal((await putLink(svc, b.key, other, { external_id: 'SHARED' })).status, 200);
    assert.equal((await putLink(svc, b.key, a.bookingId, { external_id: 'B-OWN' })).status, 200);
    assert.equal((await getLink(svc, a.tenant.key, a.bookingId)).body.external_id, 'SHARED');
    assert.equal((await getLink(svc, b.key, a.bookingId)).body.external_id, 'B-OWN');
  });

  test('accepts Idempotency-Key: a repeated request replays with Idempotent-Replayed', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const headers = { 'idempotency-key': 'link-booking-1' };
    const first = await putLink(svc, tenant.key, bookingId, { external_id: 'IDEM' }, headers);
    assert.equal(first.status, 200);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    await ageLinks(svc, tenant, 5);
    const again = await putLink(svc, tenant.key, bookingId, { external_id: 'IDEM' }, headers);
    assert.equal(again.status, 200);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.body, first.body, 'the stored answer, not a new read');

    assertError(
      await putLink(svc, tenant.key, bookingId, { external_id: 'OTHER' }, headers),
      409,
      'idempotency_conflict',
    );
    assert.equal((await getLink(svc, tenant.key, bookingId)).body.external_id, 'IDEM');
  });

  test('a stored 409 conflict is replayed, and the same key on another booking is a conflict', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const second = randomUUID();
    await putBooking(svc, tenant.organization.id, {}, second);
    await putLink(svc, tenant.key, bookingId, { external_id: 'TAKEN' });
    const headers = { 'idempotency-key': 'k-conflict' };
    const first = await putLink(svc, tenant.key, second, { external_id: 'TAKEN' }, headers);
    assertError(first, 409, 'conflict', { field: 'external_id' });
    const again = await putLink(svc, tenant.key, second, { external_id: 'TAKEN' }, headers);
    assertError(again, 409, 'conflict', { field: 'external_id' });
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assertError(
      await putLink(svc, tenant.key, bookingId, { external_id: 'TAKEN' }, headers),
      409,
      'idempotency_conflict',
    );
  });
});

describe('DELETE /bookings/{id}/external-id', () => {
  test('removes the link: 200 {deleted: true}, then GET shows nulls and a second DELETE is 404', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    await putLink(svc, tenant.key, bookingId, { external_id: 'GONE' });
    const res = await deleteLink(svc, tenant.key, bookingId);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { deleted: true });
    assert.equal((await getLink(svc, tenant.key, bookingId)).body.external_id, null);
    assertError(await deleteLink(svc, tenant.key, bookingId), 404, 'not_found');
    assert.equal(
      (await putLink(svc, tenant.key, bookingId, { external_id: 'GONE' })).status,
      200,
      'reusable',
    );
  });

  test('deleting one integration’s link leaves the other’s', async () => {
    const a = await bookedTenant(svc);
    const b = await createTenant(svc, { scopes: LINK_SCOPES, organizationId: a.tenant.organization.id });
    await putLink(svc, a.tenant.key, a.bookingId, { external_id: 'A' });
    await putLink(svc, b.key, a.bookingId, { external_id: 'B' });
    assert.equal((await deleteLink(svc, a.tenant.key, a.bookingId)).status, 200);
    assert.equal((await getLink(svc, b.key, a.bookingId)).body.external_id, 'B');
  });
});

describe('booking deleted on the feed', () => {
  test('its links go with it (foreign key cascade) and the value is free again', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const b = await createTenant(svc, { scopes: LINK_SCOPES, organizationId: tenant.organization.id });
    await putLink(svc, tenant.key, bookingId, { external_id: 'CASCADE' });
    await putLink(svc, b.key, bookingId, { external_id: 'CASCADE-B' });
    const removed = await svc.op('DELETE', `/organizations/${tenant.organization.id}/bookings/${bookingId}`);
    assert.equal(removed.status, 200, removed.text);

    const rows = await svc.db.query('SELECT 1 FROM booking_external_ids WHERE booking_id = $1', [bookingId]);
    assert.equal(rows.length, 0);
    assertError(await getLink(svc, tenant.key, bookingId), 404, 'not_found');
    const next = randomUUID();
    await putBooking(svc, tenant.organization.id, {}, next);
    assert.equal((await putLink(svc, tenant.key, next, { external_id: 'CASCADE' })).status, 200);
  });
});

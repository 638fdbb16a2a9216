import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { assertError, bookedTenant, deleteLink, getLink, linkPath, putLink } from './external-ids.fixture.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

describe('PUT body validation: 400 validation_error on external_id', () => {
  const invalid: [string, unknown][] = [
    ['missing', {}],
    ['a number', { external_id: 42 }],
    ['null', { external_id: null }],
    ['a boolean', { external_id: true }],
    ['an object', { external_id: { value: 'x' } }],
    ['an array', { external_id: ['x'] }],
    ['empty', { external_id: '' }],
    ['201 characters', { external_id: 'x'.repeat(201) }],
    ['a tab', { external_id: 'a\tb' }],
    ['a newline', { external_id: 'a\nb' }],
    ['a NUL', { external_id: 'a\u0000b' }],
    ['DEL (0x7F)', { external_id: 'a\u007fb' }],
    ['non-ASCII', { external_id: 'reserva-ñ' }],
    ['an emoji', { external_id: 'id-🚕' }],
    ['a lone surrogate', { external_id: 'a\ud800b' }],
  ];
  for (const [name, body] of invalid) {
    test(name, async () => {
      const { tenant, bookingId } = await bookedTenant(svc);
      const res = await putLink(svc, tenant.key, bookingId, body);
      assertError(res, 400, 'validation_error');
      assert.equal(res.body.error.details.field, 'external_id', res.text);
      assert.equal((await getLink(svc, tenant.key, bookingId)).body.external_id, null, 'nothing written');
    });
  }

  test('another field is refused, naming it', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const res = await putLink(svc, tenant.key, bookingId, { external_id: 'ok', entity: 'booking' });
    assertError(res, 400, 'validation_error', { field: 'entity' });
  });

  test('a body that is not an object, or empty, or not JSON, is refused', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    assertError(await putLink(svc, tenant.key, bookingId, ['ERP-1']), 400, 'validation_error');
    assertError(await putLink(svc, tenant.key, bookingId, 'ERP-1'), 400, 'validation_error');
    const empty = await svc.call('PUT', linkPath(bookingId), {
      key: tenant.key,
      payload: '',
      headers: { 'content-type': 'application/json' },
    });
    assertError(empty, 400, 'validation_error', { field: 'body' });
    const broken = await svc.call('PUT', linkPath(bookingId), {
      key: tenant.key,
      payload: '{"external_id": ',
      headers: { 'content-type': 'application/json' },
    });
    assertError(broken, 400, 'validation_error', { field: 'body' });
  });
});

describe('PUT: media type and size (from the kit)', () => {
  test('415 without Content-Type and with another media type', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const none = await svc.call('PUT', linkPath(bookingId), {
      key: tenant.key,
      payload: '{"external_id":"A"}',
    });
    assertError(none, 415, 'unsupported_media_type');
    const text = await svc.call('PUT', linkPath(bookingId), {
      key: tenant.key,
      payload: '{"external_id":"A"}',
      headers: { 'content-type': 'text/plain' },
    });
    assertError(text, 415, 'unsupported_media_type');
    assert.equal((await getLink(svc, tenant.key, bookingId)).body.external_id, null);
  });

  test('413 over 256 KiB of UTF-8; exactly 256 KiB is parsed (and then refused by the schema)', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const shell = '{"external_id":""}';
    const over = `{"external_id":"${'x'.repeat(256 * 1024 - shell.length + 1)}"}`;
    assert.equal(Buffer.byteLength(over), 256 * 1024 + 1);
    assertError(await putLink(svc, tenant.key, bookingId, JSON.parse(over)), 413, 'payload_too_large');
    const exact = `{"external_id":"${'x'.repeat(256 * 1024 - shell.length)}"}`;
    assert.equal(Buffer.byteLength(exact), 256 * 1024);
    assertError(await putLink(svc, tenant.key, bookingId, JSON.parse(exact)), 400, 'validation_error', {
      field: 'external_id',
    });
  });

  test('413 counts UTF-8 bytes, not characters', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const body = { external_id: 'é'.repeat(140 * 1024) }; // 140 Ki characters, 280 KiB
    assertError(await putLink(svc, tenant.key, bookingId, body), 413, 'payload_too_large');
  });
});

describe('409 conflict', () => {
  test('an external_id already on another booking of this integration', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const second = randomUUID();
    await putBooking(svc, tenant.organization.id, {}, second);
    await putLink(svc, tenant.key, bookingId, { external_id: 'DUP-1' });
    const res = await putLink(svc, tenant.key, second, { external_id: 'DUP-1' });
    assertError(res, 409, 'conflict', { field: 'external_id' });
    assert.ok(
      !/booking_external_ids|constraint|unique/i.test(res.body.error.message),
      res.body.error.message,
    );
    assert.equal((await getLink(svc, tenant.key, second)).body.external_id, null);
    assert.equal((await getLink(svc, tenant.key, bookingId)).body.external_id, 'DUP-1');
  });

  test('a replacement onto a value used elsewhere is refused and keeps the old value', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const second = randomUUID();
    await putBooking(svc, tenant.organization.id, {}, second);
    await putLink(svc, tenant.key, bookingId, { external_id: 'FIRST' });
    await putLink(svc, tenant.key, second, { external_id: 'SECOND' });
    assertError(await putLink(svc, tenant.key, second, { external_id: 'FIRST' }), 409, 'conflict');
    assert.equal((await getLink(svc, tenant.key, second)).body.external_id, 'SECOND');
  });

  test('values compare exactly: case and spaces make another id', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const second = randomUUID();
    await putBooking(svc, tenant.organization.id, {}, second);
    await putLink(svc, tenant.key, bookingId, { external_id: 'abc' });
    assert.equal((await putLink(svc, tenant.key, second, { external_id: 'ABC' })).status, 200);
    assert.equal((await putLink(svc, tenant.key, second, { external_id: 'abc ' })).status, 200);
  });
});

describe('404 not_found', () => {
  const ids = (reference: string) => [
    ['a booking number', reference],
    ['a malformed id', 'not-a-uuid'],
    ['a uuid without hyphens', randomUUID().replaceAll('-', '')],
    ['a uuid in braces', `{${randomUUID()}}`],
    ['a missing booking', randomUUID()],
  ];

  test('GET, PUT and DELETE answer 404 for ids that name no booking of the organization', async () => {
    const { tenant, reference } = await bookedTenant(svc);
    for (const [name, id] of ids(reference)) {
      const path = linkPath(encodeURIComponent(id!));
      for (const res of [
        await svc.call('GET', path, { key: tenant.key }),
        await svc.call('PUT', path, { key: tenant.key, body: { external_id: 'X' } }),
        await svc.call('DELETE', path, { key: tenant.key }),
      ]) {
        assertError(res, 404, 'not_found');
        assert.equal(res.body.error.details, undefined, name);
      }
    }
  });

  test('a malformed id answers exactly like a missing one, also when the body is invalid', async () => {
    const { tenant } = await bookedTenant(svc);
    const strip = (res: any) => ({ status: res.status, error: { ...res.body.error, request_id: undefined } });
    for (const body of [{ external_id: 'x' }, { external_id: '' }]) {
      const malformed = await putLink(svc, tenant.key, 'nope', body);
      const missing = await putLink(svc, tenant.key, randomUUID(), body);
      assert.deepEqual(strip(malformed), strip(missing));
    }
  });

  test('DELETE of a booking without a link is 404', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    assertError(await deleteLink(svc, tenant.key, bookingId), 404, 'not_found');
  });
});

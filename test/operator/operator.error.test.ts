// What the operator API refuses, and how: 400 naming the field (and the admitted values), 404,
// 409 for a duplicate organization code.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ALL_SCOPES, INTEGRATION_KINDS } from '../../src/http/scopes.js';
import { assertError } from '../http/guarded-app.js';
import { type Response, startService, type TestService } from '../support/context.js';
import { createTenant, expectOk, nextCode } from '../support/tenants.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

const MISSING = '0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10';

async function assertField(res: Response, field: string, allowed?: readonly string[]) {
  assertError(res, 400, 'validation_error');
  assert.equal(res.body.error.details.field, field, res.text);
  if (allowed) assert.deepEqual(res.body.error.details.allowed, allowed);
}

describe('organizations', () => {
  test('POST names the invalid field', async () => {
    for (const code of ['1', '0123', '1234567', 'abc', '12a', '', 12]) {
      await assertField(await svc.op('POST', '/organizations', { code, name: 'A' }), 'code');
    }
    await assertField(await svc.op('POST', '/organizations', { name: 'A' }), 'code');
    await assertField(await svc.op('POST', '/organizations', { code: nextCode(), name: '' }), 'name');
    await assertField(
      await svc.op('POST', '/organizations', { code: nextCode(), name: 'n'.repeat(201) }),
      'name',
    );
    await assertField(await svc.op('POST', '/organizations', { code: nextCode() }), 'name');
    await assertField(
      await svc.op('POST', '/organizations', { code: nextCode(), name: 'A', plan: 'gold' }),
      'plan',
    );
    await assertField(
      await svc.op('POST', '/organizations', { code: nextCode(), name: 'A', api_enabled: 'yes' }),
      'api_enabled',
    );
  });

  test('POST accepts the bounds: 2 and 6 digits, 1 and 200 characters', async () => {
    await expectOk(await svc.op('POST', '/organizations', { code: nextCode(), name: 'A' }), 201);
    await expectOk(await svc.op('POST', '/organizations', { code: nextCode(), name: 'n'.repeat(200) }), 201);
    // nextCode never goes above 989998; two-digit codes may be taken by it, hence the search.
    await expectOk(await svc.op('POST', '/organizations', { code: '999999', name: 'Seis' }), 201);
    let two: Response | undefined;
    for (let code = 10; code < 100 && two?.status !== 201; code++) {
      two = await svc.op('POST', '/organizations', { code: String(code), name: 'Dos' });
      assert.ok(two.status === 201 || two.status === 409, two.text);
    }
    assert.equal(two?.status, 201);
  });

  test('a code already taken is 409 conflict naming the field', async () => {
    const code = nextCode();
    await expectOk(await svc.op('POST', '/organizations', { code, name: 'Primera' }), 201);
    const res = await svc.op('POST', '/organizations', { code, name: 'Segunda' });
    assertError(res, 409, 'conflict');
    assert.equal(res.body.error.details.field, 'code');
  });

  test('a NUL character in any string of a body is a 400 naming the field, never a 500', async () => {
    await assertField(await svc.op('POST', '/organizations', { code: nextCode(), name: 'a\u0000b' }), 'name');
    const tenant = await createTenant(svc);
    await assertField(
      await svc.op('PATCH', `/organizations/${tenant.organization.id}`, { name: '\u0000' }),
      'name',
    );
    await assertField(
      await svc.op('POST', `/integrations/${tenant.integration.id}/keys`, {
        scopes: ['bookings:read'],
        environment: 'live',
        name: 'x\u0000',
      }),
      'name',
    );
    await assertField(
      await svc.op('PUT', `/organizations/${tenant.organization.id}/customers/${MISSING}`, {
        name: 'Cliente\u0000',
        type: 'account',
      }),
      'name',
    );
    assert.doesNotMatch(svc.logs.join(''), /unexpected failure/);
  });

  test('PATCH needs at least one known field', async () => {
    const t = await createTenant(svc);
    await assertField(await svc.op('PATCH', `/organizations/${t.organization.id}`, {}), 'body');
    await assertField(await svc.op('PATCH', `/organizations/${t.organization.id}`, { code: '77' }), 'code');
    await assertField(await svc.op('PATCH', `/organizations/${t.organization.id}`, { name: '' }), 'name');
  });

  test('an unknown organization is 404', async () => {
    assertError(await svc.op('GET', `/organizations/${MISSING}`), 404, 'not_found');
    assertError(await svc.op('PATCH', `/organizations/${MISSING}`, { name: 'X' }), 404, 'not_found');
    const res = await svc.op('POST', `/organizations/${MISSING}/integrations`, {
      name: 'ERP',
      kind: 'erp',
      scopes: [],
    });
    assertError(res, 404, 'not_found');
  });
});

describe('integrations', () => {
  test('an unknown kind or scope is 400 with the admitted values', async () => {
    const t = await createTenant(svc);
    const path = `/organizations/${t.organization.id}/integrations`;
    await assertField(
      await svc.op('POST', path, { name: 'X', kind: 'sap', scopes: [] }),
      'kind',
      INTEGRATION_KINDS,
    );
    await assertField(
      await svc.op('POST', path, { name: 'X', kind: 'erp', scopes: ['bookings:read', 'bookings:delete'] }),
      'scopes.1',
      ALL_SCOPES,
    );
    await assertField(
      await svc.op('PATCH', `/integrations/${t.integration.id}`, { scopes: ['everything'] }),
      'scopes.0',
      ALL_SCOPES,
    );
    await assertField(
      await svc.op('PATCH', `/integrations/${t.integration.id}`, { status: 'paused' }),
      'status',
      ['active', 'disabled', 'revoked'],
    );
  });

  test('other invalid bodies name their field', async () => {
    const t = await createTenant(svc);
    const path = `/organizations/${t.organization.id}/integrations`;
    await assertField(await svc.op('POST', path, { name: '', kind: 'erp', scopes: [] }), 'name');
    await assertField(await svc.op('POST', path, { name: 'X', kind: 'erp' }), 'scopes');
    await assertField(
      await svc.op('POST', path, { name: 'X', kind: 'erp', scopes: ['bookings:read', 'bookings:read'] }),
      'scopes',
    );
    await assertField(await svc.op('POST', path, { name: 'X', kind: 'erp', scopes: [], extra: 1 }), 'extra');
    await assertField(await svc.op('PATCH', `/integrations/${t.integration.id}`, {}), 'body');
  });

  test('an unknown integration is 404', async () => {
    assertError(await svc.op('GET', `/integrations/${MISSING}`), 404, 'not_found');
    assertError(await svc.op('PATCH', `/integrations/${MISSING}`, { status: 'disabled' }), 404, 'not_found');
    assertError(await svc.op('GET', `/integrations/${MISSING}/keys`), 404, 'not_found');
    const res = await svc.op('POST', `/integrations/${MISSING}/keys`, { scopes: [], environment: 'live' });
    assertError(res, 404, 'not_found');
  });
});

describe('keys', () => {
  test('scopes beyond the integration are 400 with the integration scopes as allowed', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read', 'links:read'] });
    const res = await svc.op('POST', `/integrations/${t.integration.id}/keys`, {
      scopes: ['bookings:read', 'webhooks:write'],
      environment: 'live',
    });
    await assertField(res, 'scopes', ['bookings:read', 'links:read']);
  });

  test('expires_at must be a date-time in the future of the service clock', async () => {
    const t = await createTenant(svc);
    const path = `/integrations/${t.integration.id}/keys`;
    const at = (ms: number) => new Date(svc.clock.now() + ms).toISOString();
    for (const expires_at of [at(-1000), at(0), 'tomorrow', '2020-01-01T00:00:00Z']) {
      await assertField(
        await svc.op('POST', path, { scopes: [], environment: 'live', expires_at }),
        'expires_at',
      );
    }
    // The service clock, not the wall clock, decides: an hour ahead of it.
    svc.clock.advance(7_200_000);
    await assertField(
      await svc.op('POST', path, { scopes: [], environment: 'live', expires_at: at(-3_600_000) }),
      'expires_at',
    );
    await expectOk(
      await svc.op('POST', path, { scopes: [], environment: 'live', expires_at: at(1000) }),
      201,
    );
  });

  test('environment is live or test; name has bounds; unknown fields are refused', async () => {
    const t = await createTenant(svc);
    const path = `/integrations/${t.integration.id}/keys`;
    await assertField(await svc.op('POST', path, { scopes: [], environment: 'prod' }), 'environment', [
      'live',
      'test',
    ]);
    await assertField(await svc.op('POST', path, { scopes: [] }), 'environment');
    await assertField(await svc.op('POST', path, { scopes: [], environment: 'live', name: '' }), 'name');
    await assertField(
      await svc.op('POST', path, { scopes: [], environment: 'live', prefix: 'svc_live_x' }),
      'prefix',
    );
  });

  test('revoking an unknown key is 404', async () => {
    assertError(await svc.op('POST', `/keys/${MISSING}/revoke`), 404, 'not_found');
  });
});

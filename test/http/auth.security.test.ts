// The contract's Authentication section, one rule per test: what each kind of key answers.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { App } from '../../src/http/kit.js';
import { startService, type TestService } from '../support/context.js';
import { createTenant, expectOk } from '../support/tenants.js';
import { assertError, buildGuardedApp, call, PREFIX } from './guarded-app.js';

let svc: TestService;
let guarded: App;
before(async () => {
  svc = await startService();
  guarded = await buildGuardedApp(svc.deps);
});
after(async () => {
  await guarded.close();
  await svc.close();
});

const me = (key?: string, headers?: Record<string, string>) =>
  svc.call('GET', '/integrations/me', { key, headers });

describe('authentication', () => {
  test('a valid live key reads its identity', async () => {
    const t = await createTenant(svc, {
      scopes: ['bookings:read', 'pricing:read', 'webhooks:read'],
      keyScopes: ['bookings:read', 'pricing:read'],
    });
    const res = await me(t.key);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      integration: { id: t.integration.id, name: 'ERP', kind: 'erp' },
      organization: { id: t.organization.id, code: t.organization.code, name: 'Transportes Test' },
      key: { prefix: t.key.slice(0, 15), name: 'main' },
      environment: 'live',
      scopes: ['bookings:read', 'pricing:read'],
      rate_limits: { per_minute: { key: 600, organization: 1200, endpoint: 300 } },
      api_version: 'v1',
    });
    assert.equal(res.headers['x-ratelimit-limit'], '600');
    assert.equal(res.headers['x-ratelimit-remaining'], '299', 'smallest remainder: the endpoint bucket');
    assert.match(String(res.headers['x-svc-request-id']), /^req_/);
  });

  test('no Bearer authorization is 401 unauthorized', async () => {
    const t = await createTenant(svc);
    assertError(await me(), 401, 'unauthorized');
    for (const authorization of ['Basic abc', 'Bearer', 'Bearer ', `Token ${t.key}`, t.key, '']) {
      assertError(await me(undefined, { authorization }), 401, 'unauthorized');
    }
  });

  test('a malformed key is 401 invalid_key', async () => {
    const alnum40 = 'a1B2c3D4e5'.repeat(4);
    const malformed = [
      'svc_live_short',
      `svc_live_${alnum40.slice(1)}`, // 39 characters
      `svc_live_${alnum40}x`, // 41 characters
      `svc_live_${alnum40.slice(1)}-`, // a character outside [A-Za-z0-9]
      `svc_live_${alnum40.slice(1)}ñ`,
      `svc_prod_${alnum40}`, // a prefix that is no environment
      `sk_live_${alnum40}`,
      `SVC_LIVE_${alnum40}`,
      alnum40,
    ];
    for (const key of malformed) assertError(await me(key), 401, 'invalid_key');
  });

  test('a well-formed key that was never issued is 401 invalid_key', async () => {
    assertError(await me(`svc_live_${'a'.repeat(40)}`), 401, 'invalid_key');
    const t = await createTenant(svc);
    const other = `${t.key.slice(0, -1)}${t.key.endsWith('A') ? 'B' : 'A'}`;
    assertError(await me(other), 401, 'invalid_key');
  });

  test('an expired key is 401 expired_key from the moment of expires_at', async () => {
    const expiresAt = svc.clock.now() + 3_600_000;
    const t = await createTenant(svc, { expiresAt: new Date(expiresAt).toISOString() });
    await expectOk(await me(t.key));
    svc.clock.advance(expiresAt - 1 - svc.clock.now());
    await expectOk(await me(t.key));
    svc.clock.advance(1);
    assertError(await me(t.key), 401, 'expired_key');
    svc.clock.advance(3_600_000);
    assertError(await me(t.key), 401, 'expired_key');
  });

  test('a revoked key is 401 revoked_key at once in the process that revoked it', async () => {
    const t = await createTenant(svc);
    await expectOk(await me(t.key));
    await expectOk(await svc.op('POST', `/keys/${t.keyId}/revoke`));
    assertError(await me(t.key), 401, 'revoked_key');
  });

  test('a key both revoked and expired is revoked_key', async () => {
    const expiresAt = svc.clock.now() + 60_000;
    const t = await createTenant(svc, { expiresAt: new Date(expiresAt).toISOString() });
    await expectOk(await svc.op('POST', `/keys/${t.keyId}/revoke`));
    svc.clock.advance(120_000);
    assertError(await me(t.key), 401, 'revoked_key');
  });

  test('a test key against the live server is wrong_environment', async () => {
    const t = await createTenant(svc, { environment: 'test' });
    assert.match(t.key, /^svc_test_/);
    assertError(await me(t.key), 401, 'wrong_environment');
  });

  test('a live key against a test server is wrong_environment; a test key works there', async () => {
    const testServer = await startService({ SVC_ENVIRONMENT: 'test' });
    try {
      const live = await createTenant(testServer, { environment: 'live' });
      assertError(
        await testServer.call('GET', '/integrations/me', { key: live.key }),
        401,
        'wrong_environment',
      );
      const own = await createTenant(testServer, { environment: 'test' });
      const res = await testServer.call('GET', '/integrations/me', { key: own.key });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.environment, 'test');
    } finally {
      await testServer.close();
    }
  });

  test('a disabled or revoked integration is 403 integration_disabled', async () => {
    for (const status of ['disabled', 'revoked']) {
      const t = await createTenant(svc);
      await expectOk(await me(t.key));
      await expectOk(await svc.op('PATCH', `/integrations/${t.integration.id}`, { status }));
      assertError(await me(t.key), 403, 'integration_disabled');
      assertError(await call(guarded, 'GET', `${PREFIX}/open`, { key: t.key }), 403, 'integration_disabled');
    }
  });

  test('an integration made active again works at once', async () => {
    const t = await createTenant(svc);
    await expectOk(await svc.op('PATCH', `/integrations/${t.integration.id}`, { status: 'disabled' }));
    assertError(await me(t.key), 403, 'integration_disabled');
    await expectOk(await svc.op('PATCH', `/integrations/${t.integration.id}`, { status: 'active' }));
    await expectOk(await me(t.key));
  });

  test('an organization without the API is 403 api_disabled', async () => {
    const t = await createTenant(svc);
    await expectOk(await me(t.key));
    await expectOk(await svc.op('PATCH', `/organizations/${t.organization.id}`, { api_enabled: false }));
    assertError(await me(t.key), 403, 'api_disabled');
    const u = await createTenant(svc, { flags: { api_enabled: false } });
    assertError(await me(u.key), 403, 'api_disabled');
    await expectOk(await svc.op('PATCH', `/organizations/${u.organization.id}`, { api_enabled: true }));
    await expectOk(await me(u.key));
  });
});

describe('scopes', () => {
  test('effective scopes are those of the key that the integration still has', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read', 'links:read', 'pricing:read'] });
    const key = { key: t.key };
    assert.deepEqual((await me(t.key)).body.scopes, ['bookings:read', 'pricing:read', 'links:read']);
    await expectOk(await call(guarded, 'GET', `${PREFIX}/linked`, key));

    await expectOk(
      await svc.op('PATCH', `/integrations/${t.integration.id}`, {
        scopes: ['bookings:read', 'pricing:read'],
      }),
    );
    assert.deepEqual((await me(t.key)).body.scopes, ['bookings:read', 'pricing:read']);
    const res = await call(guarded, 'GET', `${PREFIX}/linked`, key);
    assertError(res, 403, 'insufficient_scope');
    assert.deepEqual(res.body.error.details, { required_scope: 'links:read' });

    // Giving the scope back to the integration gives it back to the key, which always had it.
    await expectOk(
      await svc.op('PATCH', `/integrations/${t.integration.id}`, { scopes: ['bookings:read', 'links:read'] }),
    );
    assert.deepEqual((await me(t.key)).body.scopes, ['bookings:read', 'links:read']);
    await expectOk(await call(guarded, 'GET', `${PREFIX}/linked`, key));
  });

  test('a route that needs several scopes names the missing one', async () => {
    const onlyLinks = await createTenant(svc, { scopes: ['links:read'] });
    let res = await call(guarded, 'GET', `${PREFIX}/linked`, { key: onlyLinks.key });
    assertError(res, 403, 'insufficient_scope');
    assert.equal(res.body.error.details.required_scope, 'bookings:read');
    const onlyBookings = await createTenant(svc, { scopes: ['bookings:read'] });
    res = await call(guarded, 'GET', `${PREFIX}/linked`, { key: onlyBookings.key });
    assertError(res, 403, 'insufficient_scope');
    assert.equal(res.body.error.details.required_scope, 'links:read');
  });

  test('a key with fewer scopes than its integration gets only its own', async () => {
    const t = await createTenant(svc, {
      scopes: ['bookings:read', 'links:read'],
      keyScopes: ['links:read'],
    });
    assert.deepEqual((await me(t.key)).body.scopes, ['links:read']);
    const res = await call(guarded, 'GET', `${PREFIX}/things/1`, { key: t.key });
    assertError(res, 403, 'insufficient_scope');
    assert.equal(res.body.error.details.required_scope, 'bookings:read');
  });

  test('a key never holds more scopes than its integration: the operator refuses it', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    const res = await svc.op('POST', `/integrations/${t.integration.id}/keys`, {
      scopes: ['bookings:read', 'pricing:read'],
      environment: 'live',
    });
    assertError(res, 400, 'validation_error');
    assert.deepEqual(res.body.error.details, { field: 'scopes', allowed: ['bookings:read'] });
  });
});

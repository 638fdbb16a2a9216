import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { createTenant, expectOk } from '../support/tenants.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

function assertError(res: { status: number; body: any; headers: any }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error.code, code);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(res.body.error.request_id, res.headers['x-svc-request-id']);
}

describe('authentication', () => {
  test('a valid live key reads its identity', async () => {
    const t = await createTenant(svc, {
      scopes: ['bookings:read', 'pricing:read', 'webhooks:read'],
      keyScopes: ['bookings:read', 'pricing:read'],
    });
    const res = await svc.call('GET', '/integrations/me', { key: t.key });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.scopes, ['bookings:read', 'pricing:read']);
    assert.equal(res.body.organization.code, t.organization.code);
    assert.equal(res.body.api_version, 'v1');
    assert.equal(res.body.environment, 'live');
    assert.equal(res.body.key.prefix, t.key.slice(0, 15));
    assert.deepEqual(res.body.rate_limits, { per_minute: { key: 600, organization: 1200, endpoint: 300 } });
    assert.equal(res.headers['x-ratelimit-limit'], '600');
    assert.equal(res.headers['x-ratelimit-remaining'], '299', 'smallest remainder: the endpoint bucket');
    assert.match(String(res.headers['x-svc-request-id']), /^req_/);
  });

  test('missing bearer is unauthorized', async () => {
    assertError(await svc.call('GET', '/integrations/me'), 401, 'unauthorized');
    assertError(
      await svc.call('GET', '/integrations/me', { headers: { authorization: 'Basic abc' } }),
      401,
      'unauthorized',
    );
  });

  test('malformed and unknown keys are invalid_key', async () => {
    assertError(await svc.call('GET', '/integrations/me', { key: 'svc_live_short' }), 401, 'invalid_key');
    assertError(
      await svc.call('GET', '/integrations/me', { key: `svc_live_${'a'.repeat(40)}` }),
      401,
      'invalid_key',
    );
  });

  test('a test key against the live server is wrong_environment', async () => {
    const t = await createTenant(svc, { environment: 'test' });
    assertError(await svc.call('GET', '/integrations/me', { key: t.key }), 401, 'wrong_environment');
  });

  test('revoked key takes effect at once', async () => {
    const t = await createTenant(svc);
    await expectOk(await svc.call('GET', '/integrations/me', { key: t.key }));
    await expectOk(await svc.op('POST', `/keys/${t.keyId}/revoke`));
    assertError(await svc.call('GET', '/integrations/me', { key: t.key }), 401, 'revoked_key');
  });

  test('disabled integration and disabled API are 403', async () => {
    const t = await createTenant(svc);
    await expectOk(await svc.op('PATCH', `/integrations/${t.integration.id}`, { status: 'disabled' }));
    assertError(await svc.call('GET', '/integrations/me', { key: t.key }), 403, 'integration_disabled');
    const u = await createTenant(svc);
    await expectOk(await svc.op('PATCH', `/organizations/${u.organization.id}`, { api_enabled: false }));
    assertError(await svc.call('GET', '/integrations/me', { key: u.key }), 403, 'api_disabled');
  });
});

describe('kit', () => {
  test('405 has Allow, no envelope and no request id', async () => {
    const res = await svc.call('DELETE', '/integrations/me');
    assert.equal(res.status, 405);
    assert.equal(res.headers.allow, 'GET');
    assert.equal(res.headers['x-svc-request-id'], undefined);
    assert.equal(res.body, undefined);
  });
  test('unknown path is 404 not_found', async () => {
    assertError(await svc.call('GET', '/nothing-here'), 404, 'not_found');
  });
});

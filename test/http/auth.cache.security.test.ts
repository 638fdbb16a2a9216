// The identity cache: a known key costs no database round trip, operator writes are seen at once,
// writes from elsewhere within SVC_AUTH_CACHE_TTL_MS, and an unknown key is never remembered.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { buildOperatorApp, OPERATOR_PREFIX } from '../../src/apps/operator.js';
import { buildPublicApp } from '../../src/apps/public.js';
import type { Db } from '../../src/db/db.js';
import { createIdentityCache } from '../../src/http/auth.js';
import type { App } from '../../src/http/kit.js';
import { generateApiKey } from '../../src/security/secrets.js';
import { OPERATOR_TOKEN, startService, type TestService } from '../support/context.js';
import { createTenant, expectOk } from '../support/tenants.js';
import { assertError, call } from './guarded-app.js';

const TTL = 5000;
let svc: TestService;
let api: App;
let operator: App;
let queries = 0;

before(async () => {
  svc = await startService({ SVC_AUTH_CACHE_TTL_MS: String(TTL) });
  // The same service, with a database that counts every query of these two apps.
  const counted: Db = {
    ...svc.db,
    query(sql, params) {
      queries++;
      return svc.db.query(sql, params);
    },
  };
  const deps = { ...svc.deps, db: counted, identities: createIdentityCache(counted, TTL, svc.clock.now) };
  api = await buildPublicApp(deps);
  operator = await buildOperatorApp(deps, OPERATOR_TOKEN);
});
after(async () => {
  await api.close();
  await operator.close();
  await svc.close();
});
beforeEach(() => {
  queries = 0;
});

const me = (key: string) => call(api, 'GET', '/api/v1/integrations/me', { key });
const op = async (method: string, path: string, body: unknown) => {
  const res = await operator.inject({
    method: method as never,
    url: OPERATOR_PREFIX + path,
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    payload: body as object,
  });
  assert.equal(res.statusCode, 200, res.body);
};

describe('identity cache', () => {
  test('a second request with the same key does not query the database', async () => {
    const t = await createTenant(svc);
    await expectOk(await me(t.key));
    assert.equal(queries, 1, 'the first request looks the key up');
    for (let i = 0; i < 5; i++) await expectOk(await me(t.key));
    assert.equal(queries, 1, 'later requests query nothing');
    svc.clock.advance(TTL);
    await expectOk(await me(t.key));
    assert.equal(queries, 2, 'after the TTL the key is looked up again');
  });

  test('changes made through the operator API are seen at once', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read', 'links:read'] });
    await expectOk(await me(t.key));
    await op('PATCH', `/integrations/${t.integration.id}`, { scopes: ['bookings:read'] });
    assert.deepEqual((await me(t.key)).body.scopes, ['bookings:read']);
    await op('PATCH', `/organizations/${t.organization.id}`, { api_enabled: false });
    assertError(await me(t.key), 403, 'api_disabled');
    await op('PATCH', `/organizations/${t.organization.id}`, { api_enabled: true });
    await op('PATCH', `/integrations/${t.integration.id}`, { status: 'disabled' });
    assertError(await me(t.key), 403, 'integration_disabled');
    await op('PATCH', `/integrations/${t.integration.id}`, { status: 'active' });
    await expectOk(await me(t.key));
    await op('POST', `/keys/${t.keyId}/revoke`, undefined);
    assertError(await me(t.key), 401, 'revoked_key');
  });

  test('a change made directly in the database (another process) is seen within the TTL', async () => {
    const t = await createTenant(svc);
    await expectOk(await me(t.key));
    await svc.db.query(`UPDATE integrations SET status = 'disabled' WHERE id = $1`, [t.integration.id]);
    await expectOk(await me(t.key));
    svc.clock.advance(TTL - 1);
    await expectOk(await me(t.key));
    svc.clock.advance(1);
    assertError(await me(t.key), 403, 'integration_disabled');

    const u = await createTenant(svc);
    await expectOk(await me(u.key));
    await svc.db.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [u.keyId]);
    svc.clock.advance(TTL);
    assertError(await me(u.key), 401, 'revoked_key');
  });

  test('an unknown key is not remembered: once issued it works at once', async () => {
    const t = await createTenant(svc);
    const issued = generateApiKey('live');
    assertError(await me(issued.key), 401, 'invalid_key');
    // Issued meanwhile by another process, straight into the database.
    await svc.db.query(
      `INSERT INTO api_keys (integration_id, prefix, secret_hash, scopes, environment)
       VALUES ($1, $2, $3, $4, 'live')`,
      [t.integration.id, issued.prefix, issued.hash, ['bookings:read']],
    );
    const res = await me(issued.key);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.scopes, ['bookings:read']);
  });
});

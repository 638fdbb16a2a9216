// The contract's Limits for requests, with small caps and the manual clock: per key, per
// organization, per key and endpoint, the headers, the 429, the sliding window and the failures
// per IP. The file runs with limits in memory and, under TEST_REDIS_URL, in Redis.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { App } from '../../src/http/kit.js';
import { type Response, startService, type TestService } from '../support/context.js';
import { createTenant, expectOk } from '../support/tenants.js';
import {
  assertError,
  assertNoRateHeaders,
  assertRateHeaders,
  buildGuardedApp,
  call,
  PREFIX,
} from './guarded-app.js';

const PER_KEY = 5;
let svc: TestService;
let app: App;
before(async () => {
  svc = await startService({
    SVC_RATE_PER_KEY: String(PER_KEY),
    SVC_RATE_PER_ORGANIZATION: '8',
    SVC_RATE_PER_ENDPOINT: '3',
    SVC_RATE_AUTH_FAILURES_PER_IP: '4',
  });
  app = await buildGuardedApp(svc.deps);
});
after(async () => {
  await app.close();
  await svc.close();
});

const get = (path: string, key?: string, ip?: string) => call(app, 'GET', PREFIX + path, { key, ip });

/** Admitted, with the smallest remainder of the three buckets in the header. */
async function admitted(res: Promise<Response> | Response, remaining: number): Promise<void> {
  const r = await res;
  assert.equal(r.status, 200, r.text);
  assertRateHeaders(r, PER_KEY, remaining);
}

function assertRateLimited(res: Response, retryAfter: number): void {
  assertError(res, 429, 'rate_limited');
  assert.deepEqual(res.body.error.details, { retry_after: retryAfter });
  assert.equal(res.headers['retry-after'], String(retryAfter));
  assertNoRateHeaders(res);
}

async function newKey(integrationId: string): Promise<string> {
  const res = await svc.op('POST', `/integrations/${integrationId}/keys`, {
    scopes: ['bookings:read'],
    environment: 'live',
  });
  return (await expectOk(res, 201)).key;
}

describe('buckets', () => {
  test('per key: the sixth request within the window is refused, whatever the endpoint', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    await admitted(get('/things/1', t.key), 2); // key 4, organization 7, endpoint 2
    await admitted(get('/things/2', t.key), 1); // endpoint 1
    await admitted(get('/things', t.key), 2); // key 2
    await admitted(get('/open', t.key), 1); // key 1
    // The real application shares the limiter: its routes count against the same key.
    await admitted(svc.call('GET', '/integrations/me', { key: t.key }), 0);
    assertRateLimited(await get('/spare', t.key), 60);
    assertRateLimited(await svc.call('GET', '/integrations/me', { key: t.key }), 60);
  });

  test('per organization: every key of the organization counts against one cap', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    const second = await newKey(t.integration.id);
    await admitted(get('/things/1', t.key), 2);
    await admitted(get('/things', t.key), 2);
    await admitted(get('/open', t.key), 2);
    await admitted(get('/spare', t.key), 1); // key 1, organization 4
    await admitted(get('/things/1', second), 2); // organization 3
    await admitted(get('/things', second), 2); // organization 2
    await admitted(get('/open', second), 1); // organization 1
    await admitted(get('/spare', second), 0); // organization 0
    assertRateLimited(await get('/things/2', second), 60);
    assertRateLimited(await get('/things/2', t.key), 60);
    const other = await createTenant(svc, { scopes: ['bookings:read'] });
    await admitted(get('/things/2', other.key), 2);
  });

  test('per key and endpoint: method and route template make the endpoint, not the path', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    await admitted(get('/things/a', t.key), 2);
    await admitted(get('/things/b', t.key), 1);
    await admitted(get('/things/c', t.key), 0);
    assertRateLimited(await get('/things/d', t.key), 60);
    // Same template, another method; then another template: their own buckets.
    await admitted(call(app, 'DELETE', `${PREFIX}/things/a`, { key: t.key }), 1); // key 1
    await admitted(get('/things', t.key), 0); // key 0: the refusal above took nothing
    // Another key of the organization has its own endpoint buckets.
    const second = await newKey(t.integration.id);
    await admitted(get('/things/e', second), 2); // key 4, organization 2, endpoint 2
  });
});

describe('headers', () => {
  test('a 403 for scope carries the headers and counts like a served request', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    for (const remaining of [2, 1, 0]) {
      const res = await get('/linked', t.key);
      assertError(res, 403, 'insufficient_scope');
      assertRateHeaders(res, PER_KEY, remaining);
    }
    assertRateLimited(await get('/linked', t.key), 60);
    await admitted(get('/open', t.key), 1); // key: three 403s and this one
  });

  test('403s for a disabled integration or API carry the headers too', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    await expectOk(await svc.op('PATCH', `/integrations/${t.integration.id}`, { status: 'disabled' }));
    let res = await get('/open', t.key);
    assertError(res, 403, 'integration_disabled');
    assertRateHeaders(res, PER_KEY, 2);
    const u = await createTenant(svc, { scopes: ['bookings:read'], flags: { api_enabled: false } });
    res = await get('/open', u.key);
    assertError(res, 403, 'api_disabled');
    assertRateHeaders(res, PER_KEY, 2);
  });

  test("a disabled integration's 403s do not take from its organization's cap", async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    const sibling = await createTenant(svc, { scopes: ['bookings:read'], organizationId: t.organization.id });
    await expectOk(await svc.op('PATCH', `/integrations/${t.integration.id}`, { status: 'revoked' }));
    for (const path of ['/open', '/spare', '/things', '/things/1', '/open']) {
      assertError(await get(path, t.key), 403, 'integration_disabled');
    }
    // The organization's 8 are all still there: the sibling uses its whole key cap of 5.
    for (const [path, remaining] of [
      ['/open', 2],
      ['/spare', 2],
      ['/things', 2],
      ['/things/1', 1],
      ['/open', 0],
    ] as const) {
      await admitted(get(path, sibling.key), remaining);
    }
  });

  test("an organization's api_disabled 403s do not take from its cap once it is enabled again", async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'], flags: { api_enabled: false } });
    for (const path of ['/open', '/spare', '/things', '/things/1', '/open']) {
      assertError(await get(path, t.key), 403, 'api_disabled');
    }
    await expectOk(await svc.op('PATCH', `/organizations/${t.organization.id}`, { api_enabled: true }));
    const second = await newKey(t.integration.id);
    for (const path of ['/open', '/spare', '/things', '/things/1'])
      assert.equal((await get(path, second)).status, 200);
    await admitted(get('/open', second), 0); // key 0; the organization would have refused at 4
  });

  test('a 429 from a limit inside a route carries no rate-limit headers either', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    assertRateLimited(await get('/busy', t.key), 7);
  });

  test('responses without a valid key carry no rate-limit headers', async () => {
    const ip = '10.9.0.1';
    for (const res of [
      await get('/open', undefined, ip),
      await get('/open', `svc_live_${'0'.repeat(40)}`, ip),
      await get('/nowhere', undefined, ip),
    ]) {
      assert.ok(res.status === 401 || res.status === 404, res.text);
      assertNoRateHeaders(res);
    }
  });
});

describe('window', () => {
  test('a 429 says in whole seconds, rounded up, when to come back', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    const start = svc.clock.now();
    for (const path of ['/things/1', '/things', '/open', '/spare']) await get(path, t.key);
    await admitted(svc.call('GET', '/integrations/me', { key: t.key }), 0);
    svc.clock.advance(500);
    assertRateLimited(await get('/things/2', t.key), 60); // 59.5 s
    svc.clock.advance(start + 58_500 - svc.clock.now());
    assertRateLimited(await get('/things/2', t.key), 2); // 1.5 s
    svc.clock.advance(start + 59_999 - svc.clock.now());
    assertRateLimited(await get('/things/2', t.key), 1); // 1 ms
    svc.clock.advance(1);
    await admitted(get('/things/2', t.key), 2); // all five left together: endpoint 2 is the least
  });

  test('the window slides: requests spread over it leave one by one', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    for (const path of ['/things/1', '/things', '/open', '/spare', '/things/2']) {
      assert.equal((await get(path, t.key)).status, 200);
      svc.clock.advance(10_000);
    }
    // t = 50 s: the request of t = 0 leaves at 60 s.
    assertRateLimited(await get('/open', t.key), 10);
    svc.clock.advance(10_000);
    // t = 60 s: one place, not five.
    await admitted(get('/spare', t.key), 0);
    assertRateLimited(await get('/things/3', t.key), 10);
    svc.clock.advance(10_000);
    await admitted(get('/things', t.key), 0);
    assertRateLimited(await get('/open', t.key), 10);
  });

  test('refused requests do not count', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    for (const path of ['/things/1', '/things', '/open', '/spare']) await get(path, t.key);
    await admitted(svc.call('GET', '/integrations/me', { key: t.key }), 0);
    svc.clock.advance(30_000);
    for (let i = 0; i < 10; i++) assertRateLimited(await get('/things/2', t.key), 30);
    svc.clock.advance(30_000);
    // Had the ten refusals counted, the key would be full until 90 s.
    await admitted(get('/things/2', t.key), 2);
  });
});

describe('authentication failures per IP', () => {
  test('after 4 failures the IP is refused before authentication, even with a valid key', async () => {
    const ip = '10.1.0.1';
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    const testKey = await createTenant(svc, { environment: 'test' });
    const revoked = await createTenant(svc);
    await expectOk(await svc.op('POST', `/keys/${revoked.keyId}/revoke`));

    assertError(await get('/open', undefined, ip), 401, 'unauthorized');
    assertError(await get('/open', `svc_live_${'0'.repeat(40)}`, ip), 401, 'invalid_key');
    assertError(await get('/open', testKey.key, ip), 401, 'wrong_environment');
    await admitted(get('/open', t.key, ip), 2); // a success is no failure
    assertError(await get('/open', revoked.key, ip), 401, 'revoked_key');

    assertRateLimited(await get('/open', t.key, ip), 60);
    assertRateLimited(await get('/open', undefined, ip), 60);
    await admitted(get('/open', t.key, '10.1.0.2'), 1);
    svc.clock.advance(60_000);
    await admitted(get('/open', t.key, ip), 2);
  });

  test('an expired key is a failure too', async () => {
    const ip = '10.1.0.6';
    const expiring = await createTenant(svc, { expiresAt: new Date(svc.clock.now() + 1000).toISOString() });
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    svc.clock.advance(1000);
    for (let i = 0; i < 4; i++) assertError(await get('/open', expiring.key, ip), 401, 'expired_key');
    assertRateLimited(await get('/open', t.key, ip), 60);
  });

  test('403s, 404s and 405s are not authentication failures', async () => {
    const ip = '10.1.0.3';
    const off = await createTenant(svc, { scopes: ['bookings:read'], flags: { api_enabled: false } });
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    for (const path of ['/open', '/spare', '/things', '/things/1']) {
      assertError(await get(path, off.key, ip), 403, 'api_disabled');
    }
    for (let i = 0; i < 4; i++) assertError(await get('/nowhere', undefined, ip), 404, 'not_found');
    for (let i = 0; i < 4; i++) assert.equal((await call(app, 'PUT', `${PREFIX}/open`, { ip })).status, 405);
    assertError(await get('/open', undefined, ip), 401, 'unauthorized');
    await admitted(get('/open', t.key, ip), 2);
  });

  test('X-Forwarded-For does not change the IP unless a proxy is trusted', async () => {
    const ip = '10.1.0.4';
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    for (let i = 0; i < 4; i++) {
      const res = await call(app, 'GET', `${PREFIX}/open`, {
        ip,
        headers: { 'x-forwarded-for': `192.0.2.${i}` },
      });
      assertError(res, 401, 'unauthorized');
    }
    const res = await call(app, 'GET', `${PREFIX}/open`, {
      ip,
      key: t.key,
      headers: { 'x-forwarded-for': '192.0.2.200' },
    });
    assertRateLimited(res, 60);
  });
});

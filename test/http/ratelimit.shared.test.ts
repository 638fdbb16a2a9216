// Several API processes sharing one limiter state (Redis under one prefix) admit together exactly
// what one process would. Without TEST_REDIS_URL both "processes" share one memory store, the
// state a single process holds, so the file proves the same answers in both runs.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { buildPublicApp } from '../../src/apps/public.js';
import { createIdentityCache } from '../../src/http/auth.js';
import type { App } from '../../src/http/kit.js';
import type { RateLimitStore } from '../../src/ratelimit/store.js';
import { openTestLimiter, startService, type TestService } from '../support/context.js';
import { createTenant } from '../support/tenants.js';
import { assertError, assertRateHeaders, call } from './guarded-app.js';

let svc: TestService;
let stores: RateLimitStore[];
let processes: App[];

before(async () => {
  svc = await startService({ SVC_RATE_PER_KEY: '5', SVC_RATE_AUTH_FAILURES_PER_IP: '3' });
  const prefix = `svc-test:shared:${randomBytes(6).toString('hex')}:`;
  const first = openTestLimiter(svc.clock, prefix);
  stores = process.env.TEST_REDIS_URL ? [first, openTestLimiter(svc.clock, prefix)] : [first];
  processes = [];
  for (const limiter of [first, stores.at(-1) as RateLimitStore]) {
    // Each process has its own identity cache and limiter client, as `svc serve` builds them.
    const identities = createIdentityCache(svc.db, svc.config.authCacheTtlMs, svc.clock.now);
    processes.push(await buildPublicApp({ ...svc.deps, limiter, identities }));
  }
});
after(async () => {
  for (const app of processes) await app.close();
  for (const store of stores) await store.close();
  await svc.close();
});

const me = (n: number, options: { key?: string; ip?: string }) =>
  call(processes[n] as App, 'GET', '/api/v1/integrations/me', options);

describe('limits across API processes', () => {
  test('one key spread over two processes gets the per-key cap once, not twice', async () => {
    const t = await createTenant(svc);
    for (const [n, remaining] of [
      [0, 4],
      [1, 3],
      [0, 2],
      [1, 1],
      [0, 0],
    ] as const) {
      const res = await me(n, { key: t.key });
      assert.equal(res.status, 200, res.text);
      assertRateHeaders(res, 5, remaining);
    }
    for (const n of [1, 0]) {
      const res = await me(n, { key: t.key });
      assertError(res, 429, 'rate_limited');
      assert.equal(res.headers['retry-after'], '60');
    }
    svc.clock.advance(60_000);
    assert.equal((await me(1, { key: t.key })).status, 200);
  });

  test('authentication failures of one IP add up over the processes', async () => {
    const t = await createTenant(svc);
    const ip = '10.2.0.1';
    assertError(await me(0, { ip }), 401, 'unauthorized');
    assertError(await me(1, { ip }), 401, 'unauthorized');
    assertError(await me(0, { ip }), 401, 'unauthorized');
    assertError(await me(1, { ip, key: t.key }), 429, 'rate_limited');
    assertError(await me(0, { ip, key: t.key }), 429, 'rate_limited');
  });
});

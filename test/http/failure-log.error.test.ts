// A database outage must not flood the log: the first failure of a kind is logged with its stack,
// the rest are counted and the count is logged with the next one of that kind.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createIdentityCache } from '../../src/http/auth.js';
import { serviceForFile } from '../support/context.js';
import { assertError, buildGuardedApp, call, closedDatabase, PREFIX } from './guarded-app.js';

const svc = await serviceForFile();

test('200 requests failing on a lost database log one stack trace', async () => {
  const app = await buildGuardedApp({
    ...svc.deps,
    identities: createIdentityCache(await closedDatabase(), 0),
  });
  try {
    const before = svc.logs.length;
    for (let i = 0; i < 200; i++) {
      const key = `svc_live_${String(i).padStart(40, 'x')}`;
      assertError(await call(app, 'GET', `${PREFIX}/open`, { key }), 500, 'internal');
    }
    const lines = svc.logs.slice(before).map((l) => JSON.parse(l));
    const withStack = lines.filter((l) => l.err?.stack);
    console.log(`200 failing requests: ${withStack.length} stack trace(s), ${lines.length} log lines`);
    assert.equal(withStack.length, 1);
  } finally {
    await app.close();
  }
});

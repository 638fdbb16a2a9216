// No secret reaches the log: API keys, the operator token, Authorization values and key hashes,
// across served requests, failed authentication, key issuance and failures.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OPERATOR_PREFIX } from '../../src/apps/operator.js';
import { hashApiKey } from '../../src/security/secrets.js';
import { OPERATOR_TOKEN, startService, type TestService } from '../support/context.js';
import { createTenant, expectOk } from '../support/tenants.js';
import { buildGuardedApp, call, closedDatabase, PREFIX } from './guarded-app.js';

let svc: TestService;
before(async () => {
  svc = await startService({ SVC_LOG_LEVEL: 'trace' });
});
after(() => svc.close());

function assertAbsent(secrets: readonly string[]): void {
  const log = svc.logs.join('');
  for (const secret of secrets)
    assert.equal(log.includes(secret), false, `the log holds ${secret.slice(0, 12)}…`);
}

const hashesOf = (key: string) => [hashApiKey(key).toString('hex'), hashApiKey(key).toString('base64')];

describe('redaction', () => {
  test('a key issued, used, refused and failing never reaches the log', async () => {
    const before = svc.logs.length;
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    const issued = await svc.op('POST', `/integrations/${t.integration.id}/keys`, {
      name: 'second',
      scopes: ['bookings:read'],
      environment: 'live',
    });
    const second = (await expectOk(issued, 201)).key as string;
    assert.match(second, /^svc_live_/, 'the answer holds the key');

    await expectOk(await svc.call('GET', '/integrations/me', { key: t.key }));
    await expectOk(await svc.call('GET', '/integrations/me?key=ignored', { key: second }));
    const unknown = `svc_live_${'Z'.repeat(40)}`;
    assert.equal((await svc.call('GET', '/integrations/me', { key: unknown })).status, 401);
    const garbage = 'Bearer not-a-key-but-a-secret-value-7f3a9c';
    const refused = await svc.call('GET', '/integrations/me', { headers: { authorization: garbage } });
    assert.equal(refused.status, 401);
    await expectOk(await svc.op('POST', `/keys/${t.keyId}/revoke`));
    assert.equal((await svc.call('GET', '/integrations/me', { key: t.key })).status, 401);

    const guarded = await buildGuardedApp(svc.deps);
    try {
      assert.equal((await call(guarded, 'GET', `${PREFIX}/boom`, { key: second })).status, 500);
    } finally {
      await guarded.close();
    }

    const written = svc.logs.slice(before).join('');
    assert.match(written, /incoming request/, 'requests were logged');
    assert.match(written, /unexpected failure/, 'the failure was logged');
    assertAbsent([
      t.key,
      t.key.slice(9),
      second,
      second.slice(9),
      unknown,
      garbage,
      'not-a-key-but-a-secret-value',
      'Bearer ',
      'secret_hash',
      ...hashesOf(t.key),
      ...hashesOf(second),
      'ignored',
    ]);
  });

  test('the operator token, right or wrong, never reaches the log', async () => {
    const wrong = `Bearer ${'w'.repeat(OPERATOR_TOKEN.length)}`;
    const res = await svc.operator.inject({
      method: 'GET',
      url: `${OPERATOR_PREFIX}/healthz`,
      headers: { authorization: wrong },
    });
    assert.equal(res.statusCode, 401);

    const db = svc.deps.db;
    svc.deps.db = await closedDatabase();
    try {
      const failed = await svc.op('POST', '/organizations', { code: '55', name: 'Sin base' });
      assert.equal(failed.status, 500);
      assert.equal((await svc.op('GET', '/readyz')).status, 503);
    } finally {
      svc.deps.db = db;
    }
    assert.match(svc.logs.join(''), /"level":50/);
    assertAbsent([OPERATOR_TOKEN, wrong, 'w'.repeat(OPERATOR_TOKEN.length)]);
  });
});

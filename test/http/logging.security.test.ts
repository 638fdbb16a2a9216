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

describe('request log fields', () => {
  /** The lines of one answer, found by its request id. */
  const linesOf = (res: { headers: Record<string, unknown> }) => {
    const id = res.headers['x-svc-request-id'];
    assert.ok(typeof id === 'string' && id.length > 0);
    return svc.logs
      .flatMap((chunk) => chunk.split('\n').filter(Boolean))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.reqId === id);
  };
  const completed = (res: { headers: Record<string, unknown> }) => {
    const done = linesOf(res).filter((l) => l.msg === 'request completed');
    assert.equal(done.length, 1, 'one line tells how the request ended');
    return done[0] as Record<string, unknown>;
  };

  test('an authenticated answer names its organization and integration; an error envelope its code', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    const ok = await svc.call('GET', '/integrations/me', { key: t.key });
    assert.equal(ok.status, 200);
    const line = completed(ok);
    assert.equal(line.organization_id, t.organization.id);
    assert.equal(line.integration_id, t.integration.id);
    assert.equal('error_code' in line, false, 'no error, no code');

    const missing = await svc.call('GET', '/bookings/424242424242', { key: t.key });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'not_found');
    const notFound = completed(missing);
    assert.equal(notFound.organization_id, t.organization.id);
    assert.equal(notFound.integration_id, t.integration.id);
    assert.equal(notFound.error_code, 'not_found');
    assert.equal(notFound.res && (notFound.res as { statusCode: number }).statusCode, 404);

    const scope = await svc.call('GET', '/events', { key: t.key });
    assert.equal(scope.status, 403);
    assert.equal(completed(scope).error_code, 'insufficient_scope');
    assert.equal(completed(scope).organization_id, t.organization.id, 'authenticated, then refused');

    const lines = JSON.stringify([...linesOf(ok), ...linesOf(missing), ...linesOf(scope)]);
    assert.equal(lines.includes(t.key), false);
    assert.equal(lines.includes(t.key.slice(9)), false);
  });

  test('an unauthenticated 401 logs its code and no tenant, and no part of the key', async () => {
    const unknown = `svc_live_${'Q'.repeat(40)}`;
    for (const key of [null, unknown]) {
      const refused = await svc.call('GET', '/integrations/me', { key });
      assert.equal(refused.status, 401);
      const line = completed(refused);
      assert.equal(line.error_code, refused.body.error.code);
      assert.match(String(line.error_code), /^(unauthorized|invalid_key)$/);
      for (const l of linesOf(refused)) {
        assert.equal('organization_id' in l, false);
        assert.equal('integration_id' in l, false);
      }
    }
    assertAbsent([unknown, unknown.slice(9)]);
  });

  test('an unknown path answers its 404 envelope with the code on the line', async () => {
    const res = await svc.call('GET', '/no-such-thing', { unchecked: 'a path the document does not have' });
    assert.equal(res.status, 404);
    assert.equal(completed(res).error_code, 'not_found');
  });
});

// The contract's Errors section as the kit renders it for both APIs: the envelope, 404, the
// server-level 405, JSON-only bodies, the 256 KiB cap and unforeseen failures.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OPERATOR_PREFIX } from '../../src/apps/operator.js';
import { OPERATOR_TOKEN, type Response, startService, type TestService } from '../support/context.js';
import { createTenant, nextCode } from '../support/tenants.js';
import { assertError, buildGuardedApp, call, closedDatabase, PREFIX } from './guarded-app.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

/** A request to the operator API with the token and exactly the headers and payload given. */
async function opRaw(
  method: string,
  path: string,
  headers: Record<string, string>,
  payload?: string | Buffer,
) {
  const res = await svc.operator.inject({
    method: method as never,
    url: OPERATOR_PREFIX + path,
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, ...headers },
    payload,
  });
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body, text: res.body } as Response;
}

const JSON_TYPE = { 'content-type': 'application/json' };

/** A POST /organizations body of exactly `bytes` UTF-8 bytes, mostly two-byte characters. */
function organizationBodyOf(bytes: number): string {
  const empty = JSON.stringify({ code: nextCode(), name: '' });
  const room = bytes - Buffer.byteLength(empty);
  const name = 'é'.repeat(Math.floor(room / 2)) + 'a'.repeat(room % 2);
  const body = JSON.stringify({ code: JSON.parse(empty).code, name });
  assert.equal(Buffer.byteLength(body), bytes);
  assert.ok(body.length < bytes - 100_000, 'characters are far fewer than bytes');
  return body;
}

function assertMethodNotAllowed(res: Response, allow: string): void {
  assert.equal(res.status, 405, res.text);
  assert.equal(res.headers.allow, allow);
  assert.equal(res.headers['x-svc-request-id'], undefined);
  assert.equal(res.headers['x-ratelimit-limit'], undefined);
  assert.doesNotMatch(res.text, /"error"/);
}

describe('error envelope', () => {
  test('every error has {error:{code,message,request_id,details?}} and the request id header', async () => {
    const t = await createTenant(svc, { scopes: ['links:read'] });
    const guarded = await buildGuardedApp(svc.deps);
    try {
      assertError(await svc.call('GET', '/integrations/me'), 401, 'unauthorized');
      assertError(await svc.call('GET', '/integrations/me', { key: 'svc_live_x' }), 401, 'invalid_key');
      assertError(
        await call(guarded, 'GET', `${PREFIX}/things/1`, { key: t.key }),
        403,
        'insufficient_scope',
      );
      assertError(await svc.call('GET', '/nowhere'), 404, 'not_found');
      assertError(await svc.op('POST', '/organizations', { code: 'x', name: 'A' }), 400, 'validation_error');
      assertError(await opRaw('POST', '/organizations', {}, '{}'), 415, 'unsupported_media_type');
    } finally {
      await guarded.close();
    }
  });

  test('each response has its own request id, also when it succeeds', async () => {
    const t = await createTenant(svc);
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const res = await svc.call('GET', '/integrations/me', { key: t.key });
      assert.equal(res.status, 200);
      ids.add(String(res.headers['x-svc-request-id']));
    }
    assert.equal(ids.size, 3);
  });
});

describe('unknown paths', () => {
  test('an unknown path is 404 not_found; a key sent with it is checked and counted', async () => {
    const t = await createTenant(svc);
    for (const path of ['/nowhere', '/integrations', '/integrations/me/more', '/']) {
      const anonymous = await svc.call('GET', path);
      assertError(anonymous, 404, 'not_found');
      assert.equal(anonymous.headers['x-ratelimit-limit'], undefined, 'no key, nothing to count');
      const withKey = await svc.call('GET', path, { key: t.key });
      assertError(withKey, 404, 'not_found');
      assert.equal(withKey.headers['x-ratelimit-limit'], '600', 'a valid key carries the rate-limit headers');
      assert.match(String(withKey.headers['x-ratelimit-remaining']), /^\d+$/);
      assertError(await svc.call('GET', path, { key: `svc_live_${'z'.repeat(40)}` }), 401, 'invalid_key');
    }
    const outside = await svc.api.inject({ method: 'GET', url: '/api/v2/integrations/me' });
    assert.equal(outside.statusCode, 404);
    const res = await svc.operator.inject({ method: 'GET', url: `${OPERATOR_PREFIX}/nowhere` });
    assert.equal(res.statusCode, 404);
    assert.equal(JSON.parse(res.body).error.code, 'not_found');
  });
});

describe('405', () => {
  test('a wrong method on an existing route: Allow, no envelope, no request id, before authentication', async () => {
    const t = await createTenant(svc);
    for (const method of ['DELETE', 'PUT', 'POST', 'PATCH', 'OPTIONS', 'HEAD']) {
      assertMethodNotAllowed(await svc.call(method, '/integrations/me'), 'GET');
      assertMethodNotAllowed(await svc.call(method, '/integrations/me', { key: t.key }), 'GET');
      assertMethodNotAllowed(await svc.call(method, '/integrations/me', { key: 'svc_live_bad' }), 'GET');
    }
    assertMethodNotAllowed(await svc.call('PUT', '/integrations/me/'), 'GET');
    assertMethodNotAllowed(await svc.call('PUT', '/integrations/me', { body: { a: 1 } }), 'GET');
  });

  test('the operator API answers 405 the same way, without its token', async () => {
    const noToken = async (method: string, path: string) => {
      const res = await svc.operator.inject({ method: method as never, url: OPERATOR_PREFIX + path });
      return { status: res.statusCode, headers: res.headers, body: undefined, text: res.body } as Response;
    };
    assertMethodNotAllowed(await noToken('PUT', '/organizations'), 'POST');
    assertMethodNotAllowed(
      await noToken('DELETE', '/organizations/0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10'),
      'GET, PATCH',
    );
    assertMethodNotAllowed(await noToken('GET', '/keys/0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10/revoke'), 'POST');
    assertMethodNotAllowed(await noToken('OPTIONS', '/healthz'), 'GET');
  });
});

describe('bodies', () => {
  test('a body that is not valid JSON is 400 validation_error on the body', async () => {
    for (const payload of ['{"code":', 'not json', '{"code": "12",}', '[1, 2']) {
      const res = await opRaw('POST', '/organizations', JSON_TYPE, payload);
      assertError(res, 400, 'validation_error');
      assert.deepEqual(res.body.error.details, { field: 'body' });
    }
  });

  test('an empty body with application/json is 400 validation_error', async () => {
    const res = await opRaw('POST', '/organizations', JSON_TYPE, '');
    assertError(res, 400, 'validation_error');
  });

  test('a JSON body that tries to poison prototypes is refused with a 400', async () => {
    const res = await opRaw(
      'POST',
      '/organizations',
      JSON_TYPE,
      '{"code":"12","name":"x","__proto__":{"a":1}}',
    );
    assertError(res, 400, 'validation_error');
  });

  test('262,144 bytes pass the size check; 262,145 bytes are 413, counted in UTF-8 bytes', async () => {
    const atLimit = await opRaw('POST', '/organizations', JSON_TYPE, organizationBodyOf(262_144));
    // Past the size check, the schema answers: the name is far too long.
    assertError(atLimit, 400, 'validation_error');
    assert.equal(atLimit.body.error.details.field, 'name');

    const over = await opRaw('POST', '/organizations', JSON_TYPE, organizationBodyOf(262_145));
    assertError(over, 413, 'payload_too_large');

    const huge = await opRaw('POST', '/organizations', JSON_TYPE, Buffer.alloc(1_000_000, 'a'));
    assertError(huge, 413, 'payload_too_large');
  });

  test('no Content-Type, or one that is not application/json, is 415 on a body route', async () => {
    const body = JSON.stringify({ code: nextCode(), name: 'Sin tipo' });
    assertError(await opRaw('POST', '/organizations', {}, body), 415, 'unsupported_media_type');
    assertError(await opRaw('POST', '/organizations', {}, undefined), 415, 'unsupported_media_type');
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json-patch+json']) {
      const res = await opRaw('POST', '/organizations', { 'content-type': type }, body);
      assertError(res, 415, 'unsupported_media_type');
    }
    const ok = await opRaw(
      'POST',
      '/organizations',
      { 'content-type': 'application/json; charset=utf-8' },
      body,
    );
    assert.equal(ok.status, 201, ok.text);
  });
});

describe('unforeseen failures', () => {
  const FORBIDDEN = [/select/i, /api_keys/, /prefix/, /relation/, /\bat .*\.(ts|js)/, /closed|pool|PGlite/i];

  function assertClean(res: Response): void {
    assertError(res, 500, 'internal');
    assert.equal(res.body.error.message, 'Error interno.');
    assert.equal(res.body.error.details, undefined);
    for (const pattern of FORBIDDEN) assert.doesNotMatch(res.text, pattern);
  }

  test('a failing query in a route is 500 internal with a clean body, and is logged', async () => {
    const t = await createTenant(svc);
    const guarded = await buildGuardedApp(svc.deps);
    try {
      const res = await call(guarded, 'GET', `${PREFIX}/boom`, { key: t.key });
      assertClean(res);
      const logged = svc.logs.find(
        (line) => line.includes(String(res.body.error.request_id)) && line.includes('42P01'),
      );
      assert.ok(logged, 'the failure is in the log with its request id');
      assert.equal(JSON.parse(logged).level, 50);
      assert.match(logged, /relation \\"api_keys\\" does not exist/);
    } finally {
      await guarded.close();
    }
  });

  test('a closed database is 500 internal with a clean body, and is logged', async () => {
    const db = svc.deps.db;
    svc.deps.db = await closedDatabase();
    try {
      const res = await svc.op('POST', '/organizations', { code: nextCode(), name: 'Sin base' });
      assertClean(res);
      assert.ok(
        svc.logs.some((l) => l.includes(String(res.body.error.request_id)) && l.includes('"level":50')),
      );
    } finally {
      svc.deps.db = db;
    }
  });
});

describe('paths the router cannot read', () => {
  test('a badly encoded path or an over-long path id is the same 404 envelope as any unknown id', async () => {
    for (const path of ['/bookings/%zz', `/bookings/${'1'.repeat(600)}`]) {
      const res = await svc.call('GET', path);
      assert.equal(res.status, 404, path);
      assert.equal(res.body.error.code, 'not_found');
      assert.equal(res.body.error.request_id, res.headers['x-svc-request-id']);
    }
  });
});

describe('caching', () => {
  test('answers, successful or not, tell caches to keep nothing', async () => {
    const t = await createTenant(svc);
    for (const res of [
      await svc.call('GET', '/integrations/me', { key: t.key }),
      await svc.call('GET', '/integrations/me'),
      await svc.call('GET', '/nothing-here'),
    ]) {
      assert.equal(res.headers['cache-control'], 'no-store');
    }
  });
});

// Every status the server can give is documented for the operation that gives it: the answers the
// server makes by itself (408, 431), bodies sent where no body is declared (400, 413, 415), and a
// path id that names nothing, NUL included (404, as the contract says for an absent id).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { serviceForFile } from '../support/context.js';
import { assertMatchesContract } from '../support/contract.js';
import { exchange } from '../support/raw-http.js';
import { createTenant } from '../support/tenants.js';

const svc = await serviceForFile({ SVC_REQUEST_TIMEOUT_MS: '1000' });
const t = await createTenant(svc, {
  scopes: [
    'bookings:read',
    'links:read',
    'links:write',
    'webhooks:read',
    'webhooks:write',
    'customers:read',
    'drivers:read',
    'vehicles:read',
  ],
  flags: { webhooks_enabled: true },
});
const doc = JSON.parse((await svc.call('GET', '/openapi.json', { key: null })).text);
await svc.api.listen({ host: '127.0.0.1', port: 0 });
const { port } = svc.api.server.address() as { port: number };
after(() => svc.api.close());
const raw = (head: string, trickle = '') => exchange(port, head, trickle);

const operations = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
  ['get', 'put', 'post', 'patch', 'delete']
    .filter((m) => item[m])
    .map((m) => ({ path, method: m.toUpperCase() })),
);

const concrete = (path: string) => path.replace('{id}', '00000000-0000-4000-8000-000000000000');

describe('the server answers are documented for every operation', () => {
  test('431: headers over 16 KiB, on every operation', async () => {
    for (const { path, method } of operations) {
      const res = await raw(
        `${method} /api/v1${concrete(path)} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      );
      assert.equal(res.status, 431, `${method} ${path}`);
      assert.equal(res.body.error.code, 'headers_too_large');
      assertMatchesContract(method, concrete(path), res);
    }
  });

  test('408: headers not received whole within the request time-out', async () => {
    const res = await raw(
      'GET /api/v1/bookings HTTP/1.1\r\nHost: x\r\n',
      'X-Slow: abcdefghijklmnopqrstuvwxyz',
    );
    assert.equal(res.status, 408);
    assert.equal(res.body.error.code, 'request_timeout');
    assertMatchesContract('GET', '/bookings', res);
  });
});

describe('bodies where the operation declares none', () => {
  const bodyless = operations.filter(
    (o) =>
      ['POST', 'PUT', 'PATCH', 'DELETE'].includes(o.method) &&
      !doc.paths[o.path][o.method.toLowerCase()].requestBody,
  );

  test('the operations that take no body but may be sent one are the DELETEs and the test delivery', () => {
    assert.deepEqual(bodyless.map((o) => `${o.method} ${o.path}`).sort(), [
      'DELETE /bookings/{id}/external-id',
      'DELETE /webhooks/{id}',
      'POST /webhooks/{id}/test',
    ]);
  });

  test('400 for a body that is not JSON, 415 for another media type, 413 over the limit: each documented', async () => {
    for (const { path, method } of bodyless) {
      const url = concrete(path);
      const headers = { 'content-type': 'application/json' };
      const bad = await svc.call(method, url, { key: t.key, payload: '{"a":', headers });
      assert.equal(bad.status, 400, `${method} ${path} ${bad.text}`);
      const text = await svc.call(method, url, {
        key: t.key,
        payload: 'hello',
        headers: { 'content-type': 'text/plain' },
      });
      assert.equal(text.status, 415, `${method} ${path} ${text.text}`);
      const big = await svc.call(method, url, { key: t.key, payload: `"${'x'.repeat(300_000)}"`, headers });
      assert.equal(big.status, 413, `${method} ${path} ${big.text}`);
    }
  });
});

describe('a path id that names nothing is 404, as an absent one', () => {
  test('a NUL character in the id, on every operation with a path id', async () => {
    const withId = operations.filter((o) => o.path.includes('{id}'));
    assert.equal(withId.length, 13);
    for (const { path, method } of withId) {
      for (const id of ['%00', 'abc%00def', '00000000-0000-4000-8000-00000000000%00']) {
        const body =
          method === 'PUT' ? { external_id: 'A-1' } : method === 'PATCH' ? { active: false } : undefined;
        const res = await svc.call(method, path.replace('{id}', id), {
          key: t.key,
          ...(body ? { body } : {}),
          ...(method === 'POST' && path.endsWith('rotate-secret') ? { body: { overlap_minutes: 0 } } : {}),
        });
        assert.equal(res.status, 404, `${method} ${path} with ${id}: ${res.text}`);
        assert.equal(res.body.error.code, 'not_found');
      }
    }
  });
});

test('the operator API follows the same rule: a malformed or NUL path id is 404', async () => {
  for (const path of ['/organizations/not-a-uuid', '/organizations/%00', '/integrations/x%00y/keys']) {
    const res = await svc.op('GET', path);
    assert.equal(res.status, 404, `${path}: ${res.text}`);
    assert.equal(res.body.error.code, 'not_found');
  }
});

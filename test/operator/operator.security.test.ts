// The operator API answers nothing without its token: every registered route, read from the
// application itself so a route added later is covered too.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OPERATOR_PREFIX } from '../../src/apps/operator.js';
import { OPERATOR_TOKEN, type Response, startService, type TestService } from '../support/context.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

/** Method and path of every route, from Fastify's route tree. */
function registeredRoutes(): { method: string; path: string }[] {
  const routes: { method: string; path: string }[] = [];
  const parents: string[] = [];
  for (const line of svc.operator.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)(?:├── |└── )(\S+)(?: \(([^)]*)\))?$/.exec(line);
    if (!m) continue;
    const depth = (m[1] as string).length / 4;
    const path = (depth > 0 ? (parents[depth - 1] ?? '') : '') + (m[2] as string);
    parents[depth] = path;
    for (const method of (m[3] ?? '').split(',').map((s) => s.trim())) {
      if (method) routes.push({ method, path });
    }
  }
  return routes;
}

const ANY_ID = '0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10';

async function send(method: string, path: string, authorization?: string): Promise<Response> {
  const res = await svc.operator.inject({
    method: method as never,
    url: path.replace(/:[a-z_]+/g, ANY_ID),
    headers: authorization === undefined ? {} : { authorization },
    ...(['POST', 'PUT', 'PATCH'].includes(method) ? { payload: {} } : {}),
  });
  return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body), text: res.body };
}

describe('operator token', () => {
  test('the route list is read from the application', () => {
    const routes = registeredRoutes().map((r) => `${r.method} ${r.path}`);
    for (const expected of [
      'GET /operator/v1/healthz',
      'GET /operator/v1/readyz',
      'GET /operator/v1/metrics',
      'POST /operator/v1/organizations',
      'PATCH /operator/v1/organizations/:id',
      'POST /operator/v1/organizations/:id/integrations',
      'PATCH /operator/v1/integrations/:id',
      'POST /operator/v1/integrations/:id/keys',
      'POST /operator/v1/keys/:id/revoke',
    ]) {
      assert.ok(routes.includes(expected), `${expected} in ${routes.join(', ')}`);
    }
  });

  test('every route without the right token is 401 unauthorized', async () => {
    const wrong = [
      undefined,
      '',
      OPERATOR_TOKEN,
      `Bearer ${OPERATOR_TOKEN}x`,
      `Bearer ${OPERATOR_TOKEN.slice(0, -1)}`,
      `Bearer ${'x'.repeat(OPERATOR_TOKEN.length)}`,
      `bearer ${OPERATOR_TOKEN}`,
      `Basic ${OPERATOR_TOKEN}`,
    ];
    const routes = registeredRoutes();
    assert.ok(routes.length >= 10);
    for (const { method, path } of routes) {
      assert.ok(path.startsWith(OPERATOR_PREFIX), path);
      for (const authorization of wrong) {
        const res = await send(method, path, authorization);
        assert.equal(res.status, 401, `${method} ${path} with ${authorization}: ${res.text}`);
        assert.equal(res.body.error.code, 'unauthorized');
        assert.equal(res.body.error.request_id, res.headers['x-svc-request-id']);
      }
    }
  });

  test('the right token opens the routes', async () => {
    const res = await send('GET', `${OPERATOR_PREFIX}/healthz`, `Bearer ${OPERATOR_TOKEN}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'ok' });
  });

  test('an API key is no operator token', async () => {
    const res = await send('GET', `${OPERATOR_PREFIX}/healthz`, `Bearer svc_live_${'a'.repeat(40)}`);
    assert.equal(res.status, 401);
  });
});

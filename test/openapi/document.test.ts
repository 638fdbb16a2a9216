// The published contract: openapi/openapi.json is what the route schemas generate, a running
// server serves it without a key, and every operation states its scopes and its error answers.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { generatedDocument } from '../../src/apps/openapi-document.js';
import { compilePending } from '../../src/http/validation.js';
import { serviceForFile } from '../support/context.js';

const committed = readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8');
const svc = await serviceForFile();

test('the committed openapi/openapi.json is what the routes generate (run `npm run openapi`)', async () => {
  assert.equal(committed, await generatedDocument());
});

test('every request schema of both APIs compiles (each is compiled at its first use)', () => {
  assert.ok(compilePending() > 50, 'the routes of both APIs, not compiled yet');
  assert.equal(compilePending(), 0);
});

test('GET /openapi.json needs no key and serves the committed document, its server url filled for itself', async () => {
  const res = await svc.call('GET', '/openapi.json', { key: null, headers: { host: 'api.example.com' } });
  assert.equal(res.status, 200);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const expected = JSON.parse(committed);
  expected.servers[0].variables.host.default = 'api.example.com';
  assert.deepEqual(res.body, expected);
  assert.equal(res.headers['x-ratelimit-limit'], undefined);
});

test('the server url is an absolute template that resolves to /api/v1 on the serving host', async () => {
  const [server, ...others] = JSON.parse(committed).servers;
  assert.equal(others.length, 0);
  assert.equal(server.url, '{scheme}://{host}/api/v1');
  assert.deepEqual(server.variables.scheme.enum, ['https', 'http']);
  assert.deepEqual(
    [server.variables.scheme.default, server.variables.host.default],
    ['http', 'localhost:8080'],
  );
  const served = async (host: string) =>
    (await svc.call('GET', '/openapi.json', { key: null, headers: { host } })).body.servers[0].variables;
  assert.equal((await served('127.0.0.1:39999')).host.default, '127.0.0.1:39999');
  assert.equal((await served('[::1]:8080')).host.default, '[::1]:8080');
  // A Host that is not a host name stays out of the document.
  for (const bad of ['evil.example/"x', 'a b', 'x\\y', '@attacker']) {
    assert.equal((await served(bad)).host.default, 'localhost', bad);
  }
});

test('a bad key on GET /openapi.json is not checked', async () => {
  const res = await svc.call('GET', '/openapi.json', { key: 'svc_live_nope' });
  assert.equal(res.status, 200);
});

test('every authenticated operation states its scopes and the common error answers', () => {
  const doc = JSON.parse(committed);
  const methods = ['get', 'put', 'post', 'patch', 'delete'];
  let operations = 0;
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const method of methods) {
      const op = item[method];
      if (!op) continue;
      operations += 1;
      const name = `${method.toUpperCase()} ${path}`;
      if (path === '/openapi.json') {
        assert.deepEqual(op.security, [], name);
        continue;
      }
      assert.ok(Array.isArray(op['x-required-scopes']), name);
      assert.deepEqual(op.security, [{ bearerAuth: op['x-required-scopes'] }], name);
      for (const status of ['401', '403', '429', '500']) assert.ok(op.responses[status], `${name} ${status}`);
      if (path.includes('{id}')) assert.ok(op.responses['404'], `${name} 404`);
      if (op.requestBody) {
        for (const status of ['400', '413', '415']) assert.ok(op.responses[status], `${name} ${status}`);
      }
    }
  }
  assert.equal(operations, 22);
  assert.ok(doc.paths['/webhooks'].post.parameters.some((p: any) => p.name === 'Idempotency-Key'));
  assert.ok(
    doc.paths['/bookings/{id}/external-id'].put.parameters.some((p: any) => p.name === 'Idempotency-Key'),
  );
  assert.deepEqual(doc.paths['/bookings/{id}/external-id'].get['x-required-scopes'], [
    'bookings:read',
    'links:read',
  ]);
  assert.equal(Object.keys(doc.webhooks).length, 9);
});

test('pricing is published as one of the two shapes by role', () => {
  const doc = JSON.parse(committed);
  const pricing = doc.components.schemas.Booking.properties.pricing;
  assert.deepEqual(
    pricing.oneOf.map((s: any) => s.$ref ?? s.type),
    ['#/components/schemas/OriginatorPricing', '#/components/schemas/ExecutorPricing'],
  );
  assert.deepEqual(Object.keys(doc.components.schemas.ExecutorPricing.properties), [
    'currency',
    'net_executor',
  ]);
  assert.ok(!doc.components.schemas.Booking.required.includes('passenger'));
  assert.ok(!doc.components.schemas.Booking.required.includes('pricing'));
});

test('GET /docs and its assets are served by the service, without a key, under a same-origin policy', async () => {
  const html = await svc.api.inject({ method: 'GET', url: '/docs' });
  assert.equal(html.statusCode, 200);
  assert.match(String(html.headers['content-type']), /^text\/html/);
  assert.match(String(html.headers['content-security-policy']), /default-src 'self'/);
  const sources = [...html.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
  // The renderer's bundle and the page's own start-up script, both served by the service.
  assert.deepEqual(sources.sort(), ['/docs/init.js', '/docs/scalar.js']);
  for (const source of sources) {
    assert.ok(source.startsWith('/docs/'), source);
    const asset = await svc.api.inject({ method: 'GET', url: source });
    assert.equal(asset.statusCode, 200, source);
  }
  const missing = await svc.api.inject({ method: 'GET', url: '/docs/index.html' });
  assert.equal(missing.statusCode, 404);
  assert.equal(JSON.parse(missing.body).error.code, 'not_found');
});

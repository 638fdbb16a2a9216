import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createTenant, type Tenant } from '../support/tenants.js';
import { probeService, SECRET, send } from './idempotency.fixture.js';

const { svc, app, probe, tenant } = await probeService();

const rows = (t: Tenant) =>
  svc.db.query<any>('SELECT * FROM idempotency_keys WHERE integration_id = $1 ORDER BY claimed_at', [
    t.integration.id,
  ]);

describe('Idempotency-Key: replay', () => {
  test('the first request runs; the same request again replays the stored answer once marked', async () => {
    const t = await tenant();
    const first = await send(app, t.key, '/probe/replay', { reject: false }, 'key-1');
    assert.equal(first.status, 201);
    assert.deepEqual(first.body, { name: 'replay', run: 1 });
    assert.equal(first.headers['idempotent-replayed'], undefined);

    const again = await send(app, t.key, '/probe/replay', { reject: false }, 'key-1');
    assert.equal(again.status, 201);
    assert.equal(again.text, first.text, 'byte for byte the first answer');
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.match(String(again.headers['content-type']), /^application\/json/);
    assert.match(String(again.headers['x-svc-request-id']), /^req_/);
    assert.notEqual(again.headers['x-svc-request-id'], first.headers['x-svc-request-id']);
    assert.equal(probe.runs.get('replay'), 1, 'the handler ran once');
  });

  test('the body fingerprint is canonical: the same data in another key order replays', async () => {
    const t = await tenant();
    const res1 = await app.inject({
      method: 'POST',
      url: '/probe/order',
      headers: {
        authorization: `Bearer ${t.key}`,
        'content-type': 'application/json',
        'idempotency-key': 'o',
      },
      payload: '{"reject":false,"extra":{"b":1,"a":2}}',
    });
    const res2 = await app.inject({
      method: 'POST',
      url: '/probe/order',
      headers: {
        authorization: `Bearer ${t.key}`,
        'content-type': 'application/json',
        'idempotency-key': 'o',
      },
      payload: '{ "extra": {"a":2, "b":1}, "reject": false }',
    });
    assert.equal(res1.statusCode, 201);
    assert.equal(res2.statusCode, 201);
    assert.equal(res2.headers['idempotent-replayed'], 'true');
    assert.equal(probe.runs.get('order'), 1);
  });

  test('without the header the route runs every time', async () => {
    const t = await tenant();
    const a = await send(app, t.key, '/probe/nokey', {});
    const b = await send(app, t.key, '/probe/nokey', {});
    assert.deepEqual([a.status, b.status], [201, 201]);
    assert.deepEqual([a.body.run, b.body.run], [1, 2]);
    assert.equal(b.headers['idempotent-replayed'], undefined);
    assert.equal((await rows(t)).length, 0, 'nothing recorded');
  });

  test('a route that does not opt in ignores the header, even a malformed one', async () => {
    const t = await tenant();
    const a = await send(app, t.key, '/plain', {}, ' bad key ');
    const b = await send(app, t.key, '/plain', {}, ' bad key ');
    assert.deepEqual([a.status, b.status], [201, 201]);
    assert.deepEqual([a.body.run, b.body.run], [1, 2]);
  });

  test('a 4xx answer of the handler is stored and replayed with the current request id', async () => {
    const t = await tenant();
    const first = await send(app, t.key, '/probe/reject', { reject: true }, 'k4');
    assert.equal(first.status, 409);
    assert.equal(first.body.error.code, 'conflict');
    const again = await send(app, t.key, '/probe/reject', { reject: true }, 'k4');
    assert.equal(again.status, 409);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.error.code, 'conflict');
    assert.deepEqual(again.body.error.details, { field: 'reject' });
    assert.equal(again.body.error.request_id, again.headers['x-svc-request-id']);
    assert.equal(probe.runs.get('reject'), 1);
    const [row] = await rows(t);
    assert.equal(row.response_status, 409);
  });
});

describe('Idempotency-Key: what is stored', () => {
  test('the replay transform runs before storage: the secret never reaches the table', async () => {
    const t = await tenant();
    const first = await send(app, t.key, '/secret', {}, 'create-1');
    assert.equal(first.status, 201);
    assert.deepEqual(first.body, { id: 'w1', secret: SECRET, secret_shown_once: false });

    const [row] = await rows(t);
    assert.equal(row.response_status, 201);
    assert.ok(!row.response_body.includes('whsec_'), row.response_body);
    assert.deepEqual(JSON.parse(row.response_body), { id: 'w1', secret: null, secret_shown_once: true });
    assert.ok(!JSON.stringify(row).includes(SECRET));
    assert.deepEqual(Object.keys(row.response_headers).sort(), ['content-type', 'location']);
    assert.equal(row.response_headers.location, '/secret/1');

    const again = await send(app, t.key, '/secret', {}, 'create-1');
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.body, { id: 'w1', secret: null, secret_shown_once: true });
    assert.equal(again.headers.location, '/secret/1', 'a header the route marks is replayed');
    assert.equal(again.headers['x-not-replayed'], undefined, 'an unmarked header is not');
    assert.equal(probe.runs.get('secret'), 1);
  });

  test('the record holds scope, fingerprint, status and completion', async () => {
    const t = await tenant();
    await send(app, t.key, '/probe/record', {}, 'rec');
    const [row] = await rows(t);
    assert.equal(row.method, 'POST');
    assert.equal(row.route, '/probe/:name');
    assert.equal(row.key, 'rec');
    assert.match(row.fingerprint, /^[0-9a-f]{64}$/);
    assert.ok(row.completed_at instanceof Date);
    assert.equal(row.response_status, 201);
    assert.deepEqual(JSON.parse(row.response_body), { name: 'record', run: 1 });
  });
});

describe('Idempotency-Key: scope', () => {
  test('the same key in two integrations of one organization runs twice', async () => {
    const a = await tenant();
    const b = await createTenant(svc, { scopes: ['bookings:read'], organizationId: a.organization.id });
    const ra = await send(app, a.key, '/probe/scoped', {}, 'shared');
    const rb = await send(app, b.key, '/probe/scoped', {}, 'shared');
    assert.deepEqual([ra.status, rb.status], [201, 201]);
    assert.deepEqual([ra.body.run, rb.body.run], [1, 2]);
    assert.equal(rb.headers['idempotent-replayed'], undefined);
  });

  test('the same key on two routes runs on each', async () => {
    const t = await tenant();
    const p = await send(app, t.key, '/probe/route-scope', {}, 'same');
    const s = await send(app, t.key, '/secret', {}, 'same');
    assert.deepEqual([p.status, s.status], [201, 201]);
    assert.equal(s.headers['idempotent-replayed'], undefined);
    assert.equal((await rows(t)).length, 2);
  });
});

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Tenant } from '../support/tenants.js';
import { gate, probeService, send, started } from './idempotency.fixture.js';

const { svc, app, probe, tenant } = await probeService();

const count = async (t: Tenant) =>
  (
    await svc.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM idempotency_keys WHERE integration_id = $1',
      [t.integration.id],
    )
  )[0]!.n;

function assertError(res: { status: number; body: any; headers: any }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error.code, code);
  assert.equal(res.body.error.request_id, res.headers['x-svc-request-id']);
  assert.equal(res.headers['idempotent-replayed'], undefined);
}

describe('Idempotency-Key: format', () => {
  const bad = [
    '',
    ' ',
    ' lead',
    'trail ',
    'k'.repeat(256),
    'tab\there',
    'ñandú',
    '🔑',
    'nul\u0000',
    'del\u007f',
  ];
  for (const key of bad) {
    test(`refuses ${JSON.stringify(key.length > 20 ? `${key.slice(0, 10)}…(${key.length})` : key)}`, async () => {
      const t = await tenant();
      const res = await send(app, t.key, '/probe/format', {}, key);
      assertError(res, 400, 'validation_error');
      assert.deepEqual(res.body.error.details, { param: 'Idempotency-Key' });
      assert.equal(await count(t), 0);
    });
  }

  test('accepts 1 and 255 characters, inner spaces and every printable ASCII character', async () => {
    const t = await tenant();
    for (const key of ['x', 'k'.repeat(255), 'a b  c', '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~']) {
      const res = await send(app, t.key, '/probe/format-ok', {}, key);
      assert.equal(res.status, 201, `${key}: ${res.text}`);
    }
  });

  test('a malformed key runs nothing', async () => {
    const t = await tenant();
    const before = probe.runs.get('format-none') ?? 0;
    await send(app, t.key, '/probe/format-none', {}, ' x');
    assert.equal(probe.runs.get('format-none') ?? 0, before);
  });
});

describe('Idempotency-Key: conflicts', () => {
  test('same key, different body: 409 idempotency_conflict and no execution', async () => {
    const t = await tenant();
    assert.equal((await send(app, t.key, '/probe/diff', { reject: false }, 'k')).status, 201);
    const res = await send(app, t.key, '/probe/diff', { reject: true }, 'k');
    assertError(res, 409, 'idempotency_conflict');
    assert.equal(probe.runs.get('diff'), 1);
  });

  test('same key and route template, different concrete path: 409 idempotency_conflict', async () => {
    const t = await tenant();
    assert.equal((await send(app, t.key, '/probe/path-a', {}, 'k')).status, 201);
    assertError(await send(app, t.key, '/probe/path-b', {}, 'k'), 409, 'idempotency_conflict');
    assert.equal(probe.runs.get('path-b'), undefined);
  });

  test('same key while the first is still running: 409 idempotency_in_progress', async () => {
    const t = await tenant();
    const open = gate(probe);
    const first = send(app, t.key, '/probe/slow', {}, 'k');
    await started(probe, 'slow', 1);
    assertError(await send(app, t.key, '/probe/slow', {}, 'k'), 409, 'idempotency_in_progress');
    open();
    assert.equal((await first).status, 201);
    const replay = await send(app, t.key, '/probe/slow', {}, 'k');
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(probe.runs.get('slow'), 1);
  });

  test('a different body while the first is running is a conflict, not in progress', async () => {
    const t = await tenant();
    const open = gate(probe);
    const first = send(app, t.key, '/probe/slow-diff', {}, 'k');
    await started(probe, 'slow-diff', 1);
    assertError(
      await send(app, t.key, '/probe/slow-diff', { reject: true }, 'k'),
      409,
      'idempotency_conflict',
    );
    open();
    assert.equal((await first).status, 201);
  });
});

describe('Idempotency-Key: server errors', () => {
  test('a 5xx is not stored: the claim is released and the retry runs', async () => {
    const t = await tenant();
    probe.failNext = true;
    const failed = await send(app, t.key, '/probe/flaky', {}, 'k');
    assertError(failed, 500, 'internal');
    assert.equal(await count(t), 0, 'claim released');

    const retry = await send(app, t.key, '/probe/flaky', {}, 'k');
    assert.equal(retry.status, 201);
    assert.deepEqual(retry.body, { name: 'flaky', run: 2 });
    assert.equal(retry.headers['idempotent-replayed'], undefined);

    const replay = await send(app, t.key, '/probe/flaky', {}, 'k');
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body, { name: 'flaky', run: 2 });
    assert.equal(probe.runs.get('flaky'), 2);
  });

  test('requests refused before the handler (schema) record nothing', async () => {
    const t = await tenant();
    const res = await send(app, t.key, '/probe/schema', { reject: 'yes' }, 'k');
    assertError(res, 400, 'validation_error');
    assert.equal(await count(t), 0);
    assert.equal((await send(app, t.key, '/probe/schema', { reject: false }, 'k')).status, 201);
  });
});

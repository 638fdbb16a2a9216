// Records are kept idempotencyRetentionHours (24 h) and then pruned by the maintenance task.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAINTENANCE_TASKS } from '../../src/maintenance.js';
import type { Tenant } from '../support/tenants.js';
import { probeService, send } from './idempotency.fixture.js';

const { svc, app, probe, tenant } = await probeService();

/** Ages one record by `minutes`, as if it had been made that long ago. */
const age = (t: Tenant, key: string, minutes: number) =>
  svc.db.query(
    `UPDATE idempotency_keys
     SET claimed_at = claimed_at - make_interval(mins => $3), completed_at = completed_at - make_interval(mins => $3)
     WHERE integration_id = $1 AND key = $2`,
    [t.integration.id, key, minutes],
  );

const keysOf = async (t: Tenant) =>
  (
    await svc.db.query<{ key: string }>(
      'SELECT key FROM idempotency_keys WHERE integration_id = $1 ORDER BY key',
      [t.integration.id],
    )
  ).map((r) => r.key);

const pruneTask = () => {
  const task = MAINTENANCE_TASKS.find((x) => x.name === 'idempotency-keys');
  assert.ok(task, 'the pruning task is registered');
  return task;
};

describe('Idempotency-Key: retention', () => {
  test('the maintenance task deletes records older than 24 hours and keeps the younger ones', async () => {
    const t = await tenant();
    for (const key of ['fresh', 'almost', 'old', 'ancient'])
      await send(app, t.key, `/probe/prune-${key}`, {}, key);
    await age(t, 'almost', 24 * 60 - 1);
    await age(t, 'old', 24 * 60 + 1);
    await age(t, 'ancient', 30 * 24 * 60);

    const removed = await pruneTask().run(svc.deps);
    assert.ok(removed >= 2, `removed ${removed}`);
    assert.deepEqual(await keysOf(t), ['almost', 'fresh']);
    assert.equal(await pruneTask().run(svc.deps), 0, 'nothing left to prune: idempotent');

    const replay = await send(app, t.key, '/probe/prune-almost', {}, 'almost');
    assert.equal(replay.headers['idempotent-replayed'], 'true', 'a 23:59 old record still replays');
  });

  test('a pruned key is free again: the same request runs anew', async () => {
    const t = await tenant();
    await send(app, t.key, '/probe/pruned', {}, 'k');
    await age(t, 'k', 25 * 60);
    await pruneTask().run(svc.deps);
    const res = await send(app, t.key, '/probe/pruned', {}, 'k');
    assert.equal(res.status, 201);
    assert.equal(res.headers['idempotent-replayed'], undefined);
    assert.equal(probe.runs.get('pruned'), 2);
  });

  test('a record past the retention counts as gone even before the task runs', async () => {
    const t = await tenant();
    await send(app, t.key, '/probe/expired', {}, 'k');
    await age(t, 'k', 25 * 60);
    const res = await send(app, t.key, '/probe/expired', { reject: false }, 'k');
    assert.equal(res.status, 201, 'a different body is no conflict with an expired record');
    assert.equal(res.headers['idempotent-replayed'], undefined);
    assert.equal(probe.runs.get('expired'), 2);
    assert.deepEqual(await keysOf(t), ['k']);
  });

  test('the retention follows SVC_IDEMPOTENCY_RETENTION_HOURS', async () => {
    const t = await tenant();
    await send(app, t.key, '/probe/config', {}, 'k');
    await age(t, 'k', 90);
    const withRetention = (hours: number) =>
      pruneTask().run({ ...svc.deps, config: { ...svc.config, idempotencyRetentionHours: hours } });
    await withRetention(2);
    assert.deepEqual(await keysOf(t), ['k'], '90 minutes old, kept under 2 hours');
    assert.ok((await withRetention(1)) >= 1);
    assert.deepEqual(await keysOf(t), [], 'pruned under 1 hour');
  });
});

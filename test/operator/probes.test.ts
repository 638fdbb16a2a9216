// The probes a kubelet or a load balancer calls: /livez and /readyz on their own listener, without
// a credential, saying up or ready and nothing else. Readiness is false while the database does not
// answer, while a migration of this release is not applied, or while any check added to the list
// fails; behind the operator token /readyz says which.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { defaultReadinessChecks, type HealthListener, startHealthListener } from '../../src/health.js';
import { closedDatabase } from '../http/guarded-app.js';
import { serviceForFile } from '../support/context.js';

const svc = await serviceForFile();
const checks = defaultReadinessChecks(svc.db);
svc.deps.readinessChecks = checks;
const listener: HealthListener = await startHealthListener(
  { logger: svc.deps.logger, readinessChecks: checks },
  '127.0.0.1',
  0,
);
after(() => listener.close());

async function probe(path: string, method = 'GET') {
  const res = await fetch(`http://127.0.0.1:${listener.port}${path}`, { method });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

test('livez and readyz answer without a credential and say nothing else', async () => {
  const live = await probe('/livez');
  assert.deepEqual([live.status, live.text], [200, '{"status":"ok"}']);
  const ready = await probe('/readyz');
  assert.deepEqual([ready.status, ready.text], [200, '{"status":"ready"}']);
  assert.equal(ready.headers.get('cache-control'), 'no-store');
  assert.equal((await probe('/readyz', 'HEAD')).status, 200);
  for (const [path, method] of [
    ['/metrics', 'GET'],
    ['/operator/v1/readyz', 'GET'],
    ['/readyz', 'POST'],
    ['/', 'GET'],
  ] as const) {
    assert.equal((await probe(path, method)).status, 404, `${method} ${path}`);
  }
});

test('a migration of this release not applied: not ready; the operator sees which', async () => {
  const [last] = await svc.db.query<{ name: string; checksum: string }>(
    // The last migration file (engine.sql's row, `~engine.sql`, is not one).
    "SELECT name, checksum FROM schema_migrations WHERE name <> '~engine.sql' ORDER BY name DESC LIMIT 1",
  );
  assert.ok(last);
  await svc.db.query('DELETE FROM schema_migrations WHERE name = $1', [last.name]);
  try {
    const ready = await probe('/readyz');
    assert.deepEqual([ready.status, ready.text], [503, '{"status":"unavailable"}']);
    const detail = await svc.op('GET', '/readyz');
    assert.equal(detail.status, 503);
    assert.deepEqual(detail.body, {
      status: 'unavailable',
      failed: [{ name: 'migrations', reason: `migrations pending: ${last.name}` }],
    });
    assert.equal((await probe('/livez')).status, 200, 'alive all the same');
  } finally {
    await svc.db.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [
      last.name,
      last.checksum,
    ]);
  }
  assert.equal((await probe('/readyz')).status, 200);
});

test('a check added to the list counts for the probe and the operator alike', async () => {
  checks.push({
    name: 'master key',
    check: () => Promise.reject(new Error('the master key does not open stored secrets')),
  });
  try {
    assert.equal((await probe('/readyz')).text, '{"status":"unavailable"}');
    const detail = await svc.op('GET', '/readyz');
    assert.deepEqual(detail.body.failed, [
      { name: 'master key', reason: 'the master key does not open stored secrets' },
    ]);
  } finally {
    checks.pop();
  }
  assert.equal((await probe('/readyz')).status, 200);
});

test('a database that does not answer: not ready', async () => {
  const dead = await startHealthListener(
    { logger: svc.deps.logger, readinessChecks: defaultReadinessChecks(await closedDatabase()) },
    '127.0.0.1',
    0,
  );
  try {
    const res = await fetch(`http://127.0.0.1:${dead.port}/readyz`);
    assert.deepEqual([res.status, await res.text()], [503, '{"status":"unavailable"}']);
  } finally {
    await dead.close();
  }
});

// Db.leadership: of the processes asking under one role on one database and schema, one leads; the
// lead passes on when its holder gives it up or its connection ends. How one `svc worker` of
// several comes to answer the notifications (src/delivery/standby.ts).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Db } from '../../src/db/db.js';
import { type Cleanups, emptyDatabase } from '../support/empty-database.js';
import { until } from '../support/wait.js';

const cleanups: Cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

test('one leads among those asking under a role; the lead passes on when given up or when its session ends', async () => {
  const [one, two] = (await emptyDatabase(2, cleanups)) as [Db, Db];
  const a = one.leadership('svc worker');
  const b = two.leadership('svc worker');
  cleanups.push(
    () => a.close(),
    () => b.close(),
  );
  assert.equal(await a.check(), true, 'the first to ask leads');
  if (one.kind === 'pglite') {
    // One process holds the embedded database: it always leads.
    assert.equal(await b.check(), true);
    return;
  }
  assert.equal(await b.check(), false, 'a second one does not while the first holds the lead');
  assert.equal(await a.check(), true, 'the leader keeps it');
  const other = two.leadership('another role');
  cleanups.push(() => other.close());
  assert.equal(await other.check(), true, 'another role leads on its own');
  const [elsewhere] = (await emptyDatabase(1, cleanups)) as [Db];
  const inOtherSchema = elsewhere.leadership('svc worker');
  cleanups.push(() => inOtherSchema.close());
  assert.equal(await inOtherSchema.check(), true, 'a deployment in another schema leads on its own');

  await a.close();
  assert.equal(await b.check(), true, 'given up, the lead is taken at the next check');

  // The leader's session ends (its process died, its connection was cut): the server frees the lock.
  const [holder] = await one.query<{ pid: number }>(
    `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.classid = 734110904 AND l.granted
        AND s.datname = current_database() AND l.objid = (hashtext($1))::oid`,
    [`svc worker ${(await one.query<{ s: string }>('SELECT current_schema() AS s'))[0]?.s}`],
  );
  assert.ok(holder, 'the lead is a lock held by a session');
  const c = one.leadership('svc worker');
  cleanups.push(() => c.close());
  assert.equal(await c.check(), false);
  await one.query('SELECT pg_terminate_backend($1)', [holder.pid]);
  await until('the lead taken by another once its holder is gone', () => c.check());
  // The one whose session ended learns it from its connection and no longer claims the lead.
  await until('the old leader knows it lost the lead', async () => !(await b.check()));
});

// The PostgreSQL pool when a connection breaks: a connection whose ROLLBACK failed is destroyed,
// not handed to the next request inside a broken transaction, and an idle connection that breaks
// is logged; a pool of plans kept (the delivery engine's) plans each statement once. Server
// database only: the embedded one has no pool.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import { createPostgresDb } from '../../src/db/db.js';

const url = process.env.TEST_DATABASE_URL;
const skip = url ? false : 'needs TEST_DATABASE_URL: the embedded database has no connection pool';

test('a connection whose ROLLBACK failed never serves another query', { skip }, async () => {
  const db = createPostgresDb({ url: url as string, max: 1 });
  const original = pg.Client.prototype.query;
  let failRollback = true;
  // What a connection lost in the middle of a ROLLBACK looks like to the pool's user.
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (args[0] === 'ROLLBACK' && failRollback) {
      failRollback = false;
      return Promise.reject(new Error('Connection terminated during ROLLBACK'));
    }
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as never;
  try {
    await assert.rejects(
      db.tx(async (q) => {
        await q.query('SELECT 1 / 0');
      }),
      /division by zero/,
    );
    // The only connection of the pool must be a fresh one, not the one left in the failed transaction.
    assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }]);
  } finally {
    pg.Client.prototype.query = original;
    await db.close();
  }
});

test('an idle connection that breaks is reported', { skip }, async () => {
  const errors: Error[] = [];
  const name = `svc-idle-${randomBytes(4).toString('hex')}`;
  const db = createPostgresDb({
    url: `${url}${url?.includes('?') ? '&' : '?'}application_name=${name}`,
    max: 1,
    onIdleError: (error) => errors.push(error),
  });
  const admin = createPostgresDb({ url: url as string, max: 1 });
  try {
    await db.query('SELECT 1');
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
      name,
    ]);
    for (let i = 0; i < 50 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(errors.length, 1);
    assert.match(String(errors[0]?.message), /terminat/i);
    assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }], 'the pool opens a new connection');
  } finally {
    await db.close();
    await admin.close();
  }
});

test('a pool with plans kept plans each statement once per connection, in the same schema', {
  skip,
}, async () => {
  const schema = `plans_${randomBytes(4).toString('hex')}`;
  const admin = createPostgresDb({ url: url as string, max: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  const db = createPostgresDb({ url: url as string, schema, max: 1 });
  const kept = db.withPlansKept(1);
  try {
    const text = 'SELECT current_schema() AS schema, count(*)::int AS n FROM generate_series(1, $1::int)';
    for (let n = 1; n <= 7; n++) assert.deepEqual(await kept.query(text, [n]), [{ schema, n }]);
    await db.query(text, [1]);
    const plans = 'SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1';
    assert.deepEqual(await kept.query(plans, [text]), [{ generic_plans: 7, custom_plans: 0 }]);
    assert.deepEqual(
      await db.query(plans, [text]),
      [{ generic_plans: 0, custom_plans: 1 }],
      'the pool it came from plans as PostgreSQL chooses',
    );
  } finally {
    await kept.close();
    await db.close();
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
  }
});

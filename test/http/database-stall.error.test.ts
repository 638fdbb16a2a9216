// A database that stops answering: on PostgreSQL a table locked by another connection, on the
// embedded database a transaction that stays open. Requests answer 500 with the envelope within
// SVC_REQUEST_TIMEOUT_MS, waiting for a pooled connection is bounded, /readyz answers 503 at once.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { OPERATOR_PREFIX } from '../../src/apps/operator.js';
import { createPostgresDb, type Db } from '../../src/db/db.js';
import { serviceForFile, usingServer } from '../support/context.js';
import { createTenant, expectOk } from '../support/tenants.js';
import { assertError } from './guarded-app.js';

const REQUEST_TIMEOUT_MS = 1000;
const svc = await serviceForFile({
  SVC_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
  SVC_DB_POOL_WAIT_MS: '300',
});
const t = await createTenant(svc, { scopes: ['bookings:read'] });
const locker: Db | null = usingServer
  ? createPostgresDb({
      url: process.env.TEST_DATABASE_URL as string,
      schema: (await svc.db.query<{ s: string }>('SELECT current_schema() AS s'))[0]?.s,
      max: 1,
    })
  : null;
after(() => locker?.close());

/** Holds the bookings table (the whole embedded database) until the returned function is called. */
async function stallDatabase(): Promise<() => Promise<void>> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const done = (locker ?? svc.db).tx(async (q) => {
    if (locker) await q.query('LOCK TABLE bookings IN ACCESS EXCLUSIVE MODE');
    locked();
    await held;
  });
  await isLocked;
  return async () => {
    release();
    await done;
  };
}

/** The answer, or a failure when it takes longer than `ms`: a stalled request must not hang the suite. */
async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

test('30 requests against a stalled database all answer 500 with the envelope within the request time-out', async () => {
  await expectOk(await svc.call('GET', '/bookings', { key: t.key }));
  const unseen = await expectOk<{ key: string }>(
    await svc.op('POST', `/integrations/${t.integration.id}/keys`, {
      scopes: ['bookings:read'],
      environment: 'live',
    }),
    201,
  );
  const release = await stallDatabase();
  try {
    const started = Date.now();
    const answers = await within(
      5_000,
      Promise.all(
        Array.from({ length: 30 }, async () => {
          const res = await svc.call('GET', '/bookings', { key: t.key });
          return { res, ms: Date.now() - started };
        }),
      ),
    );
    for (const { res, ms } of answers) {
      assertError(res, 500, 'internal');
      assert.ok(ms < REQUEST_TIMEOUT_MS + 700, `answered after ${ms} ms`);
    }
    const slowest = Math.max(...answers.map((a) => a.ms));
    console.log(`30 requests against a stalled database: the slowest answered in ${slowest} ms`);

    // A key never seen before needs the database to authenticate: bounded the same way.
    const me = await within(5_000, svc.call('GET', '/integrations/me', { key: unseen.key }));
    assertError(me, 500, 'internal');

    // Readiness says the truth quickly.
    const readyStarted = Date.now();
    const ready = await within(
      5_000,
      svc.operator.inject({
        method: 'GET',
        url: `${OPERATOR_PREFIX}/readyz`,
        headers: { authorization: 'Bearer test-operator-token-0123456789abcdef' },
      }),
    );
    assert.equal(ready.statusCode, 503, ready.body);
    assert.ok(Date.now() - readyStarted < 1_500, `readyz took ${Date.now() - readyStarted} ms`);
  } finally {
    await release();
  }
  // Once the database answers again, so does the service.
  await expectOk(await svc.call('GET', '/bookings', { key: t.key }));
  const ready = await svc.operator.inject({
    method: 'GET',
    url: `${OPERATOR_PREFIX}/readyz`,
    headers: { authorization: 'Bearer test-operator-token-0123456789abcdef' },
  });
  assert.equal(ready.statusCode, 200);
});

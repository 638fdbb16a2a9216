// A worker's outcomes while the database refuses them: kept, in order, for as long as their leases
// allow, tried again with back-off, and never counted. The database here is a real connection to a
// port where nothing listens (a database that is down), so every statement fails as it would.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import pino from 'pino';
import { Registry } from 'prom-client';
import { claimRequest, succeededOutcome } from '../../test/support/webhooks.js';
import { createPostgresDb } from '../db/db.js';
import { createDeliveryMetrics } from './metrics.js';
import { type Ended, LEASE_MARGIN_MS, outcomes } from './outcomes.js';

const down = createPostgresDb({
  url: 'postgres://postgres@127.0.0.1:1/none',
  max: 1,
  connectionTimeoutMs: 1000,
});
test.after(() => down.close());

function harness() {
  const logged: string[] = [];
  const reported: string[] = [];
  const metrics = createDeliveryMetrics(new Registry(), down);
  const toWrite = outcomes({
    engine: down,
    logger: pino({ level: 'warn' }, { write: (line: string) => logged.push(line) }),
    metrics,
    report: (_error, what) => reported.push(what),
  });
  const counted = async () => (await metrics.attempts.get()).values.reduce((n, v) => n + v.value, 0);
  return { toWrite, logged, reported, counted };
}

const ended = (leaseEndsAt: number): Ended => ({
  ...succeededOutcome({ id: randomUUID(), lease_token: randomUUID() }),
  leaseEndsAt,
});

test('a write that fails keeps its outcomes ahead of later ones, backs off doubling, counts nothing', async () => {
  const { toWrite, reported, counted } = harness();
  const first = [ended(Date.now() + 60_000), ended(Date.now() + 60_000)];
  for (const o of first) toWrite.add(o);
  assert.equal(toWrite.writeInMs(), 0, 'nothing failed yet: a write may be made now');
  const batch = toWrite.take();
  assert.equal(batch.length, 2);
  assert.equal(toWrite.count, 0, 'taken for the write');

  assert.equal(await toWrite.exchange(batch, claimRequest()), null, 'no claim from a database that is down');
  const later = ended(Date.now() + 60_000);
  toWrite.add(later);
  assert.deepEqual(
    toWrite.unwritten().map((c) => c.id),
    [...first, later].map((o) => o.claimed.id),
    'the failed batch comes back ahead of what ended since',
  );
  const firstWait = toWrite.writeInMs();
  assert.ok(firstWait > 0 && firstWait <= 25, `first back-off ${firstWait} ms`);
  assert.deepEqual(toWrite.take(), [], 'nothing is taken while the back-off runs');

  await new Promise((resolve) => setTimeout(resolve, firstWait + 1));
  const again = toWrite.take();
  assert.equal(again.length, 3);
  await toWrite.exchange(again, claimRequest(undefined, { take: 0 }));
  const secondWait = toWrite.writeInMs();
  assert.ok(secondWait > 25 && secondWait <= 50, `second back-off ${secondWait} ms, twice the first`);
  assert.equal(toWrite.count, 3, 'all still kept: their leases have time');
  assert.equal(await counted(), 0, 'an outcome is counted only once written');
  assert.ok(reported.length >= 2, 'each failure is reported');
});

test('outcomes whose lease ends within the margin are let go: the lease returns them to the queue', async () => {
  const { toWrite, logged } = harness();
  const kept = ended(Date.now() + 60_000);
  const lapsing = ended(Date.now() + LEASE_MARGIN_MS - 1);
  toWrite.add(kept);
  toWrite.add(lapsing);
  await toWrite.flush();
  assert.deepEqual(
    toWrite.unwritten().map((c) => c.id),
    [kept.claimed.id],
  );
  assert.ok(
    logged.some(
      (line) => line.includes('not written before their lease ends') && line.includes('"deliveries":1'),
    ),
    'the outcomes let go are logged',
  );
  assert.equal(toWrite.takeRetryDue(), Number.POSITIVE_INFINITY, 'no retry was written');
});

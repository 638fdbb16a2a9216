// A worker's batch of outcomes, on a clock the test moves: what a failed write keeps, in what order,
// and when it may be tried again.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { succeededOutcome } from '../../test/support/webhooks.js';
import { type Ended, LEASE_MARGIN_MS, outcomeBatch } from './outcomes.js';

const ended = (leaseEndsAt: number): Ended => ({
  ...succeededOutcome({ id: randomUUID(), lease_token: randomUUID() }),
  leaseEndsAt,
  class: '2xx',
});

test('a write that fails keeps its outcomes ahead of later ones and backs off, doubling up to a second', () => {
  const batch = outcomeBatch();
  let now = 1_000_000;
  const first = [ended(now + 60_000), ended(now + 60_000)];
  for (const o of first) batch.add(o);
  assert.equal(batch.writeInMs(now), 0, 'nothing failed yet: a write may be made now');
  const taken = batch.take(now);
  assert.equal(taken.length, 2);
  assert.equal(batch.count, 0, 'taken for the write');

  assert.equal(batch.failed(taken, now), 0, 'none let go: their leases run long');
  const later = ended(now + 60_000);
  batch.add(later);
  assert.equal(batch.writeInMs(now), 25, 'the first back-off');
  assert.deepEqual(batch.take(now + 24), [], 'nothing is taken while the back-off runs');
  const again = batch.take(now + 25);
  assert.deepEqual(
    again.map((o) => o.claimed.id),
    [...first, later].map((o) => o.claimed.id),
    'the failed batch comes back ahead of what ended since',
  );
  const waits: number[] = [];
  let pending = again;
  for (let i = 0; i < 8; i++) {
    now += 1;
    batch.failed(pending, now);
    waits.push(batch.writeInMs(now));
    now += 10_000;
    pending = batch.take(now);
  }
  assert.deepEqual(waits.slice(0, 6), [50, 100, 200, 400, 800, 1000], 'doubling, capped at 1 s');
  batch.written();
  batch.failed([], now);
  assert.equal(batch.writeInMs(now), Number.POSITIVE_INFINITY, 'an empty batch waits for nothing');
  batch.add(ended(now + 60_000));
  assert.equal(batch.writeInMs(now), 25, 'a write that succeeded starts the back-off over');
});

test('an outcome whose lease ends within the margin is let go: the lease decides', () => {
  const batch = outcomeBatch();
  const now = 5_000;
  const keep = ended(now + LEASE_MARGIN_MS + 1);
  const lose = ended(now + LEASE_MARGIN_MS);
  assert.equal(batch.failed([keep, lose], now), 1);
  assert.deepEqual(
    batch.unwritten().map((o) => o.claimed.id),
    [keep.claimed.id],
  );
  assert.equal(batch.count, 0, 'unwritten() hands them over');
});

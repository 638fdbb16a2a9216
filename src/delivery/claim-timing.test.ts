// When a worker claims and where it looks, on a clock the test moves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimTiming } from './claim-timing.js';

const OWNED = [1, 2, 3, 4];
const timing = () => claimTiming({ pollMs: 1000, idleGapMs: 50 });

test('the first round and the poll look everywhere; then only where work is known', () => {
  const t = timing();
  assert.equal(t.due(0), true, 'the first round');
  assert.deepEqual(t.begin(0, OWNED, []), OWNED);
  t.end(0, 0, []);
  assert.equal(t.due(999), false);
  assert.equal(t.waitMs(400), 600);
  t.announced([3, 9]);
  assert.equal(t.due(500), true, 'deliveries announced in its partitions');
  assert.deepEqual(
    t.begin(500, OWNED, [1]),
    [1, 3],
    'the announced one it owns, and one with attempts in flight',
  );
  t.end(500, 2, [3]);
  t.roomFreed(2);
  assert.equal(t.due(501), true, 'an attempt ended');
  assert.deepEqual(t.begin(501, OWNED, []), [2, 3], 'where room freed, and where deliveries were left due');
  t.end(501, 1, []);
  assert.equal(t.due(1000), true, 'the poll');
  assert.deepEqual(t.begin(1000, OWNED, []), OWNED);
});

test('an announcement without partitions, or partitions that changed, look everywhere', () => {
  const t = timing();
  t.begin(0, OWNED, []);
  t.end(0, 0, []);
  t.announced();
  assert.deepEqual(t.begin(10, OWNED, []), OWNED);
  t.end(10, 0, []);
  t.roomFreed();
  assert.deepEqual(t.begin(20, OWNED, []), OWNED);
});

test('blocked: announcements wait for the gap, an attempt that ends does not', () => {
  const t = timing();
  t.begin(0, OWNED, []);
  t.end(0, 0, [2]);
  assert.equal(t.waitMs(0), 1000, 'nothing announced: it sleeps until the poll');
  t.announced([2]);
  assert.equal(t.due(10), false, 'announced within the gap');
  assert.equal(t.waitMs(10), 40, 'it claims once the gap has passed');
  assert.equal(t.due(50), true);
  t.begin(50, OWNED, []);
  t.end(50, 0, [2]);
  t.announced([2]);
  assert.equal(t.due(51), false);
  t.roomFreed(2);
  assert.equal(t.due(51), true, 'room freed: at once');
});

test('what comes while a claim runs calls for the next one', () => {
  const t = timing();
  t.begin(0, OWNED, []);
  t.announced([1]);
  t.end(5, 0, [2]);
  assert.equal(t.waitMs(5), 50, 'blocked, the announcement waits for the gap');
  t.begin(55, OWNED, []);
  t.roomFreed(4);
  t.end(60, 0, [2]);
  assert.equal(t.due(60), true, 'an attempt that ended during the claim: claimed for at once');
  assert.deepEqual(t.begin(60, OWNED, []), [2, 4]);
});

test('a retry it wrote falls due: a look everywhere, once', () => {
  const t = timing();
  t.begin(0, OWNED, []);
  t.end(0, 0, []);
  t.retryAt(300);
  t.retryAt(500);
  assert.equal(t.waitMs(100), 200);
  assert.equal(t.due(299), false);
  assert.equal(t.due(300), true);
  assert.deepEqual(t.begin(300, OWNED, []), OWNED);
  t.end(300, 1, []);
  assert.equal(t.due(600), false, 'the later retry was covered by that look');
  assert.equal(t.waitMs(600), 700);
});

// When a worker claims, on a clock the test moves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claimTiming } from './claim-timing.js';

const timing = () => claimTiming({ pollMs: 1000, idleGapMs: 50 });

test('the first round claims; then only what calls for one does, or the poll', () => {
  const t = timing();
  assert.equal(t.due(0), true, 'the first round');
  t.begin(0);
  t.end(0, false);
  assert.equal(t.due(999), false);
  assert.equal(t.waitMs(400), 600);
  assert.equal(t.due(1000), true, 'the poll');
  t.begin(1000);
  t.end(1000, false);
  t.announced();
  assert.equal(t.due(1001), true, 'deliveries announced in its partitions');
  t.begin(1001);
  t.end(1001, false);
  t.roomFreed();
  assert.equal(t.due(1002), true, 'an attempt ended');
});

test('blocked: announcements wait for the gap, an attempt that ends does not', () => {
  const t = timing();
  t.begin(0);
  t.end(0, true);
  assert.equal(t.waitMs(0), 1000, 'nothing announced: it sleeps until the poll');
  t.announced();
  assert.equal(t.due(10), false, 'announced within the gap');
  assert.equal(t.waitMs(10), 40, 'it claims once the gap has passed');
  assert.equal(t.due(50), true);
  t.begin(50);
  t.end(50, true);
  t.announced();
  assert.equal(t.due(51), false);
  t.roomFreed();
  assert.equal(t.due(51), true, 'room freed: at once');
});

test('a retry it wrote calls for a claim when it falls due, once', () => {
  const t = timing();
  t.begin(0);
  t.end(0, false);
  t.retryAt(300);
  t.retryAt(500);
  assert.equal(t.waitMs(100), 200);
  assert.equal(t.due(299), false);
  assert.equal(t.due(300), true);
  t.begin(300);
  t.end(300, false);
  assert.equal(t.due(600), false, 'the later retry was covered by that claim');
  assert.equal(t.waitMs(600), 700);
});

test('what comes while a claim runs calls for the next one', () => {
  const t = timing();
  t.begin(0);
  t.announced();
  t.end(5, true);
  assert.equal(t.waitMs(5), 50, 'blocked, the announcement waits for the gap');
  t.begin(55);
  t.roomFreed();
  t.end(60, true);
  assert.equal(t.due(60), true, 'an attempt that ended during the claim: claimed for at once');
});

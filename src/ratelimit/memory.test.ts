import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createMemoryStore } from './memory.js';
import { manualClock, openMemoryFixture, runStoreCases } from './store.cases.js';

const W = 60_000;

runStoreCases('memory store', openMemoryFixture);

describe('memory store upkeep', () => {
  test('idle buckets are swept once per window; active ones keep their state', async () => {
    const clock = manualClock();
    const store = createMemoryStore(clock.now);
    const take = (key: string) => store.hit([{ key, limit: 5 }], W, 'take');
    await take('a');
    await take('b');
    clock.advance(W / 2);
    await take('b');
    clock.advance(W / 2);
    await take('c');
    assert.equal(store.size(), 2, 'a, idle for a whole window, is gone; b and c stay');
    assert.equal((await store.hit([{ key: 'b', limit: 5 }], W, 'peek')).remaining, 4, 'b kept its entry');
    clock.advance(W - 1);
    await take('d');
    assert.equal(store.size(), 3, 'no second sweep within the same window');
    clock.advance(1);
    await take('e');
    assert.deepEqual(store.size(), 2, 'b and c idle for a window are gone; d and e stay');
  });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withFallback } from './fallback.js';
import { createMemoryStore } from './memory.js';
import { createRedisStore } from './redis.js';
import type { Decision, RateLimitStore } from './store.js';

const W = 60_000;
const bucket = [{ key: 'key:k', limit: 2 }];

test('with Redis unreachable, limits hold per process and the outage is reported once', async () => {
  let t = 1_000_000;
  const now = () => t;
  const reports: unknown[] = [];
  // Nothing listens on port 1: the connection is refused at once.
  const store = withFallback({
    primary: createRedisStore({ url: 'redis://127.0.0.1:1', now }),
    fallback: createMemoryStore(now),
    onFallback: (error) => reports.push(error),
    now,
  });
  try {
    const started = Date.now();
    const answers: Decision[] = [];
    for (let i = 0; i < 3; i++) answers.push(await store.hit(bucket, W, 'take'));
    assert.deepEqual(
      answers.map((a) => a.allowed),
      [true, true, false],
    );
    assert.ok(Date.now() - started < 5_000, 'a lost store does not hold requests for long');
    assert.equal(reports.length, 1, 'reported once, not per request');
    t += 31_000;
    await store.hit(bucket, W, 'peek');
    assert.equal(reports.length, 2, 'reported again after 30 s');
  } finally {
    await store.close();
  }
});

test('a failing primary answers from the fallback; a healthy one is used as is', async () => {
  let failing = true;
  let primaryCalls = 0;
  const primary: RateLimitStore & { available(): boolean } = {
    available: () => true,
    async hit() {
      primaryCalls++;
      if (failing) throw new Error('timeout');
      return { allowed: true, remaining: 41, retryAfterMs: 0 };
    },
    async close() {},
  };
  const reports: unknown[] = [];
  const store = withFallback({ primary, fallback: createMemoryStore(), onFallback: (e) => reports.push(e) });
  const fromFallback = await store.hit(bucket, W, 'take');
  assert.equal(fromFallback.remaining, 1);
  assert.equal(reports.length, 1);
  failing = false;
  assert.equal((await store.hit(bucket, W, 'take')).remaining, 41);
  assert.equal(primaryCalls, 2);
});

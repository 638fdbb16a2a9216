import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { test } from 'node:test';
import { FAILURES_TO_OPEN, withFallback } from './fallback.js';
import { createMirror } from './mirror.js';
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
    local: createMirror(now),
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
  const store = withFallback({
    primary,
    local: createMirror(),
    onFallback: (e) => reports.push(e),
    probeEveryMs: 10,
    failuresToOpen: 1,
  });
  try {
    const fromFallback = await store.hit(bucket, W, 'take');
    assert.equal(fromFallback.remaining, 1);
    assert.equal(reports.length, 1);
    failing = false;
    // The breaker's probe (a peek on no bucket) finds the store healthy again.
    for (let i = 0; i < 50 && primaryCalls < 2; i++) await new Promise((r) => setTimeout(r, 10));
    const callsBefore = primaryCalls;
    assert.equal((await store.hit(bucket, W, 'take')).remaining, 41);
    assert.equal(primaryCalls, callsBefore + 1);
  } finally {
    await store.close();
  }
});

/** A Redis that accepts connections, reads every command and never answers. */
async function frozenRedis(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

test('a Redis that never answers costs three command time-outs, then the copy answers at once', async () => {
  const frozen = await frozenRedis();
  const reports: unknown[] = [];
  const store = withFallback({
    primary: createRedisStore({ url: frozen.url }),
    local: createMirror(),
    onFallback: (error) => reports.push(error),
    probeEveryMs: 60_000,
  });
  try {
    const first = Date.now();
    for (let i = 0; i < FAILURES_TO_OPEN; i++)
      assert.equal((await store.hit(bucket, W, 'take')).allowed, i < 2);
    const firstMs = Date.now() - first;
    assert.ok(firstMs < 4_500, `the first requests waited ${firstMs} ms`);
    const started = Date.now();
    for (let i = 0; i < 20; i++) await store.hit([{ key: `key:${i}`, limit: 5 }], W, 'take');
    const ms = Date.now() - started;
    console.log(`frozen Redis: first request ${firstMs} ms, the next 20 in ${ms} ms`);
    assert.ok(ms < 200, `20 requests took ${ms} ms`);
    assert.equal(reports.length, 1);
  } finally {
    await store.close();
    await frozen.close();
  }
});

test('while open, the breaker probes the store in the background and closes when it answers', async () => {
  let healthy = false;
  let hits = 0;
  let probes = 0;
  const primary = {
    available: () => true,
    async hit() {
      hits++;
      if (!healthy) throw new Error('timeout');
      return { allowed: true, remaining: 41, retryAfterMs: 0 };
    },
    async ping() {
      probes++;
      if (!healthy) throw new Error('timeout');
    },
    async close() {},
  };
  const recoveries: number[] = [];
  const store = withFallback({
    primary,
    local: createMirror(),
    onFallback: () => {},
    onRecovery: (downMs) => recoveries.push(downMs),
    probeEveryMs: 20,
    failuresToOpen: 1,
  });
  try {
    assert.equal((await store.hit(bucket, W, 'take')).remaining, 1, 'from memory');
    for (let i = 0; i < 5; i++) await store.hit(bucket, W, 'peek');
    assert.equal(hits, 1, 'an open breaker sends no request to the store');
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(probes >= 2, `probed ${probes} times`);
    healthy = true;
    for (let i = 0; i < 50 && recoveries.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(recoveries.length, 1, 'the return is reported once');
    assert.equal((await store.hit(bucket, W, 'take')).remaining, 41, 'shared limits again');
  } finally {
    await store.close();
  }
});

/** A primary that answers with counts as Redis does, or fails while `failing` is set. */
function scriptedPrimary() {
  const state = { failing: false, hits: 0, count: 0 };
  const primary = {
    available: () => true,
    async hit(): Promise<never> {
      throw new Error('the fallback asks hitCounted');
    },
    async hitCounted(buckets: readonly { limit: number }[]) {
      state.hits++;
      if (state.failing) throw new Error('Command timed out');
      const limit = buckets[0]?.limit ?? 0;
      const allowed = state.count < limit;
      if (allowed) state.count++;
      return {
        allowed,
        remaining: Math.max(0, limit - state.count),
        retryAfterMs: allowed ? 0 : 30_000,
        counts: buckets.map(() => state.count),
      };
    },
    async close() {},
  };
  return { state, primary };
}

test('one slow reply does not open the breaker: the next request asks Redis again', async () => {
  const { state, primary } = scriptedPrimary();
  const opened: unknown[] = [];
  const stalls: unknown[] = [];
  const store = withFallback({
    primary,
    local: createMirror(),
    onFallback: (e) => opened.push(e),
    onStall: (e) => stalls.push(e),
  });
  try {
    state.failing = true;
    await store.hit(bucket, W, 'take');
    await store.hit(bucket, W, 'take');
    state.failing = false;
    await store.hit(bucket, W, 'take');
    assert.equal(state.hits, 3, 'two failures in a row leave Redis in charge');
    assert.deepEqual([opened.length, stalls.length], [0, 1]);
    state.failing = true;
    await store.hit(bucket, W, 'take');
    assert.equal(opened.length, 1, 'the third failure within the window opens it');
    await store.hit(bucket, W, 'take');
    assert.equal(state.hits, 4, 'open: the copy answers without asking');
  } finally {
    await store.close();
  }
});

test('during a stall a bucket at its limit stays refused: the copy holds the shared count', async () => {
  let t = 5_000_000;
  const now = () => t;
  const { state, primary } = scriptedPrimary();
  const store = withFallback({ primary, local: createMirror(now), onFallback: () => {}, now });
  const ten = [{ key: 'endpoint', limit: 10 }];
  try {
    // Other processes admitted 9; this one the tenth, then it is refused by Redis.
    state.count = 9;
    assert.equal((await store.hit(ten, W, 'take')).allowed, true);
    assert.equal((await store.hit(ten, W, 'take')).allowed, false);
    state.failing = true;
    for (let i = 0; i < 10; i++) {
      const decision = await store.hit(ten, W, 'take');
      assert.equal(decision.allowed, false, `request ${i} during the stall`);
      assert.ok(decision.retryAfterMs > 0 && decision.retryAfterMs <= W);
    }
    // Past one window the held count has left it; the copy counts this process's admissions.
    t += W;
    const after = await store.hit(ten, W, 'take');
    assert.deepEqual([after.allowed, after.remaining], [true, 9]);
  } finally {
    await store.close();
  }
});

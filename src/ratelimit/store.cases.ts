// What every RateLimitStore must do, as one table run against the memory store
// (memory.test.ts) and against Redis (redis.test.ts, or the memory store when no Redis is given),
// so both stores are held to the same answers.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createMemoryStore } from './memory.js';
import type { Bucket, RateLimitStore } from './store.js';

export interface StoreFixture {
  store: RateLimitStore;
  /** Another client on the same state, as a second API process would hold. */
  twin(): RateLimitStore;
  advance(ms: number): void;
  /** Fails unless these buckets, once idle for a window, are no longer held. */
  assertForgetsIdle(keys: readonly string[], windowMs: number): Promise<void>;
  close(): Promise<void>;
}

const W = 60_000;
const bucket = (key: string, limit: number): Bucket => ({ key, limit });

interface Case {
  name: string;
  run(f: StoreFixture): Promise<void>;
}

export const STORE_CASES: Case[] = [
  {
    name: 'take admits up to the limit, counting remaining down, then refuses',
    async run({ store }) {
      const b = [bucket('k', 3)];
      for (const left of [2, 1, 0]) {
        assert.deepEqual(await store.hit(b, W, 'take'), { allowed: true, remaining: left, retryAfterMs: 0 });
      }
      assert.deepEqual(await store.hit(b, W, 'take'), { allowed: false, remaining: 0, retryAfterMs: W });
    },
  },
  {
    name: 'a refused take is not recorded',
    async run({ store, advance }) {
      const b = [bucket('k', 2)];
      await store.hit(b, W, 'take');
      await store.hit(b, W, 'take');
      advance(1000);
      for (let i = 0; i < 5; i++) assert.equal((await store.hit(b, W, 'take')).allowed, false);
      advance(W - 1000);
      // Had the five refusals counted, the bucket would still be full.
      assert.deepEqual(await store.hit(b, W, 'take'), { allowed: true, remaining: 1, retryAfterMs: 0 });
    },
  },
  {
    name: 'the window slides: entries leave one by one, exactly one window after they came',
    async run({ store, advance }) {
      const b = [bucket('k', 3)];
      for (let i = 0; i < 3; i++) {
        assert.equal((await store.hit(b, W, 'take')).allowed, true);
        advance(10_000);
      }
      // t = 30 s: full; the entry of t = 0 leaves at 60 s.
      assert.deepEqual(await store.hit(b, W, 'take'), { allowed: false, remaining: 0, retryAfterMs: 30_000 });
      advance(29_999);
      assert.equal((await store.hit(b, W, 'take')).retryAfterMs, 1);
      advance(1);
      assert.deepEqual(await store.hit(b, W, 'take'), { allowed: true, remaining: 0, retryAfterMs: 0 });
      // Only one place freed: the next one waits for the entry of t = 10 s.
      assert.deepEqual(await store.hit(b, W, 'take'), { allowed: false, remaining: 0, retryAfterMs: 10_000 });
      advance(10_000);
      assert.equal((await store.hit(b, W, 'take')).allowed, true);
    },
  },
  {
    name: 'a take is all or nothing over its buckets',
    async run({ store }) {
      const small = bucket('small', 1);
      const large = bucket('large', 5);
      assert.equal((await store.hit([small, large], W, 'take')).allowed, true);
      assert.equal((await store.hit([small, large], W, 'take')).allowed, false);
      assert.equal((await store.hit([large], W, 'peek')).remaining, 4, 'the refusal added nothing to large');
    },
  },
  {
    name: 'remaining is the smallest remainder over the buckets',
    async run({ store }) {
      const a = bucket('a', 10);
      const b = bucket('b', 4);
      assert.equal((await store.hit([a, b], W, 'take')).remaining, 3);
      await store.hit([a], W, 'take');
      await store.hit([a], W, 'take');
      assert.equal((await store.hit([a, b], W, 'take')).remaining, 2);
      for (let i = 0; i < 5; i++) await store.hit([a], W, 'take');
      // a holds 9 of 10, b 2 of 4.
      assert.equal((await store.hit([a, b], W, 'peek')).remaining, 1);
    },
  },
  {
    name: 'a refusal waits for the slowest of the full buckets',
    async run({ store, advance }) {
      await store.hit([bucket('a', 1)], W, 'take');
      advance(20_000);
      await store.hit([bucket('b', 1)], W, 'take');
      advance(10_000);
      const d = await store.hit([bucket('a', 1), bucket('b', 1), bucket('c', 1)], W, 'take');
      assert.deepEqual(d, { allowed: false, remaining: 0, retryAfterMs: 50_000 });
      assert.equal((await store.hit([bucket('c', 1)], W, 'peek')).remaining, 1);
    },
  },
  {
    name: 'peek tells how the buckets stand and records nothing',
    async run({ store }) {
      const b = [bucket('k', 2)];
      for (let i = 0; i < 5; i++) {
        assert.deepEqual(await store.hit(b, W, 'peek'), { allowed: true, remaining: 2, retryAfterMs: 0 });
      }
      await store.hit(b, W, 'take');
      await store.hit(b, W, 'take');
      assert.deepEqual(await store.hit(b, W, 'peek'), { allowed: false, remaining: 0, retryAfterMs: W });
    },
  },
  {
    name: 'record keeps counting when the bucket is full',
    async run({ store, advance }) {
      const b = [bucket('ip', 2)];
      for (const allowed of [true, true, false]) {
        assert.equal((await store.hit(b, W, 'record')).allowed, allowed);
        advance(10_000);
      }
      // Entries at 0, 10 and 20 s; room again when only one is left, at 70 s.
      assert.deepEqual(await store.hit(b, W, 'peek'), { allowed: false, remaining: 0, retryAfterMs: 40_000 });
    },
  },
  {
    name: 'buckets are kept apart by key',
    async run({ store }) {
      await store.hit([bucket('one', 1)], W, 'take');
      assert.equal((await store.hit([bucket('one', 1)], W, 'take')).allowed, false);
      assert.equal((await store.hit([bucket('two', 1)], W, 'take')).allowed, true);
    },
  },
  {
    name: 'two clients on the same state share every bucket',
    async run({ store, twin }) {
      const other = twin();
      const b = [bucket('shared', 3)];
      assert.equal((await store.hit(b, W, 'take')).remaining, 2);
      assert.equal((await other.hit(b, W, 'take')).remaining, 1);
      assert.equal((await store.hit(b, W, 'take')).remaining, 0);
      assert.equal((await other.hit(b, W, 'take')).allowed, false);
      assert.equal((await store.hit(b, W, 'take')).allowed, false);
    },
  },
  {
    name: 'buckets of different windows are decided together, each over its own window',
    async run({ store, advance }) {
      const HOUR = 60 * W;
      const minute = { key: 'per-minute', limit: 2 };
      const hour = { key: 'per-hour', limit: 3, windowMs: HOUR };
      assert.equal((await store.hit([minute, hour], W, 'take')).remaining, 1);
      assert.equal((await store.hit([minute, hour], W, 'take')).remaining, 0);
      assert.deepEqual(await store.hit([minute, hour], W, 'take'), {
        allowed: false,
        remaining: 0,
        retryAfterMs: W,
      });
      advance(W);
      // Calls of a one-minute window in between must not wipe the hour's bucket.
      await store.hit([{ key: 'other', limit: 1 }], W, 'take');
      advance(W);
      await store.hit([{ key: 'other', limit: 1 }], W, 'take');
      assert.equal((await store.hit([minute, hour], W, 'take')).remaining, 0, 'third of the hour');
      const refused = await store.hit([minute, hour], W, 'take');
      assert.equal(refused.allowed, false, 'the hour holds three');
      assert.equal(refused.retryAfterMs, HOUR - 2 * W, 'until the first entry leaves the hour');
    },
  },
  {
    name: 'idle buckets are forgotten',
    async run({ store, assertForgetsIdle }) {
      const keys = ['idle-1', 'idle-2', 'idle-3'];
      for (const key of keys) await store.hit([bucket(key, 5)], W, 'take');
      await store.hit([bucket('idle-1', 5)], W, 'record');
      await assertForgetsIdle(keys, W);
    },
  },
];

export function runStoreCases(label: string, open: () => Promise<StoreFixture>): void {
  describe(label, () => {
    for (const c of STORE_CASES) {
      test(c.name, async () => {
        const fixture = await open();
        try {
          await c.run(fixture);
        } finally {
          await fixture.close();
        }
      });
    }
  });
}

/** A clock the cases move by hand. */
export function manualClock() {
  let t = 1_700_000_000_000;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

/** The memory store as a fixture of the shared cases. */
export async function openMemoryFixture(): Promise<StoreFixture> {
  const clock = manualClock();
  const store = createMemoryStore(clock.now);
  return {
    store,
    twin: () => store,
    advance: clock.advance,
    async assertForgetsIdle(_keys, windowMs) {
      clock.advance(windowMs);
      await store.hit([{ key: 'probe', limit: 1 }], windowMs, 'peek');
      assert.equal(store.size(), 0);
    },
    close: () => store.close(),
  };
}

// The store table against Redis when TEST_REDIS_URL is set; against the memory store otherwise,
// so the file always proves the same answers and never reports a skipped test.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createRedisStore } from './redis.js';
import { manualClock, openMemoryFixture, runStoreCases, type StoreFixture } from './store.cases.js';
import type { RateLimitStore } from './store.js';

const url = process.env.TEST_REDIS_URL;

async function openRedis(redisUrl: string): Promise<StoreFixture> {
  const clock = manualClock();
  const prefix = `svc-test:rl-unit:${randomBytes(6).toString('hex')}:`;
  const open = () => createRedisStore({ url: redisUrl, prefix, now: clock.now });
  const clients: RateLimitStore[] = [open()];
  const raw = new Redis(redisUrl);
  return {
    store: clients[0] as RateLimitStore,
    twin() {
      const other = open();
      clients.push(other);
      return other;
    },
    advance: clock.advance,
    async assertForgetsIdle(keys, windowMs) {
      // Redis forgets a bucket by itself: each write sets its expiry to one window.
      for (const key of keys) {
        const ttl = await raw.pttl(prefix + key);
        assert.ok(ttl > 0 && ttl <= windowMs, `${key}: expires in ${ttl} ms`);
      }
    },
    async close() {
      for (const client of clients) await client.close();
      const keys = await raw.keys(`${prefix}*`);
      if (keys.length) await raw.del(...keys);
      await raw.quit();
    },
  };
}

runStoreCases(
  url ? 'Redis store' : 'Redis store table on the memory store (TEST_REDIS_URL not set)',
  url ? () => openRedis(url) : openMemoryFixture,
);

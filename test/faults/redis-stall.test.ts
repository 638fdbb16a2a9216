// A Redis that stalls (CLIENT PAUSE 1500 ALL, on a private redis-server this file starts) while a
// bucket is at its limit: requests wait at most the command time-out, then each process decides
// from its copy of the shared window, which holds the bucket full, so nothing more is admitted, by
// one process or by two. Before, one slow reply opened the breaker and every process decided from
// an empty window: the next 10 requests were admitted.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { withFallback } from '../../src/ratelimit/fallback.js';
import { createMirror } from '../../src/ratelimit/mirror.js';
import { createRedisStore } from '../../src/ratelimit/redis.js';
import type { RateLimitStore } from '../../src/ratelimit/store.js';
import { needsRedisServer, privateRedis } from '../support/cluster.js';

const LIMIT = 10;
const W = 60_000;

describe('Redis paused for 1.5 s with a bucket at its limit', { skip: needsRedisServer }, async () => {
  const redis = needsRedisServer ? null : await privateRedis();
  const admin = redis ? new Redis(redis.url) : null;
  const stores: RateLimitStore[] = [];
  after(async () => {
    for (const store of stores) await store.close();
    await admin?.quit();
  });

  /** `n` API processes' limiters on one prefix, as `svc serve` builds them (src/runtime.ts). */
  const processes = (n: number) => {
    const prefix = `stall:${randomBytes(4).toString('hex')}:`;
    const made = Array.from({ length: n }, () =>
      withFallback({
        primary: createRedisStore({ url: redis?.url as string, prefix }),
        local: createMirror(),
        onFallback: () => {},
        probeEveryMs: 200,
      }),
    );
    stores.push(...made);
    return { made, prefix };
  };

  const bucket = [{ key: 'endpoint', limit: LIMIT }];

  /** `count` requests spread over the processes in turn; how many were admitted. */
  async function admitted(made: RateLimitStore[], count: number): Promise<number> {
    let yes = 0;
    for (let i = 0; i < count; i++) {
      if ((await (made[i % made.length] as RateLimitStore).hit(bucket, W, 'take')).allowed) yes++;
    }
    return yes;
  }

  async function stalled(made: RateLimitStore[], prefix: string) {
    assert.equal(await admitted(made, LIMIT), LIMIT, 'the limit, once over all processes');
    // Every process has met the 429 once, as it would in traffic at the limit.
    assert.equal(await admitted(made, made.length), 0);
    assert.equal(await admin?.call('CLIENT', 'PAUSE', '1500', 'ALL'), 'OK');
    const during = await admitted(made, 2 * LIMIT);
    // Paused too, this command is answered once the pause is over.
    const stored = await admin?.zcard(`${prefix}endpoint`);
    return { during, stored };
  }

  test('one process: nothing more is admitted during the stall', async () => {
    const { made, prefix } = processes(1);
    const { during, stored } = await stalled(made, prefix);
    assert.equal(during, 0, 'admitted during the stall');
    assert.equal(stored, LIMIT);
    assert.equal(await admitted(made, 1), 0, 'after the stall, the bucket still full');
  });

  test('two processes: nothing more is admitted during the stall', async () => {
    const { made, prefix } = processes(2);
    const { during, stored } = await stalled(made, prefix);
    assert.equal(during, 0, 'admitted during the stall');
    assert.equal(stored, LIMIT);
  });
});

import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  type Bucket,
  type Clock,
  type Decision,
  type HitMode,
  type RateLimitStore,
  windowOf,
} from './store.js';

// One script decides for all buckets of a request atomically, so API processes that share Redis
// admit exactly what one process would. Each bucket is a sorted set of request timestamps, judged
// over its own window (ARGV: now, mode, member, the limits, then the windows). Besides the
// decision it returns each bucket's count after the request, which keeps this process's copy of
// the windows in step (mirror.ts).
const SCRIPT = `
local now = tonumber(ARGV[1])
local mode = ARGV[2]
local member = ARGV[3]
local n = #KEYS
local counts = {}
local retry = 0
for i, key in ipairs(KEYS) do
  local window = tonumber(ARGV[3 + n + i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local count = redis.call('ZCARD', key)
  local limit = tonumber(ARGV[3 + i])
  counts[i] = count
  if count >= limit then
    local freeing = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
    local wait = tonumber(freeing[2]) + window - now
    if wait > retry then retry = wait end
  end
end
local adds = mode == 'record' or (mode == 'take' and retry == 0)
local remaining = -1
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[3 + i])
  if adds then
    redis.call('ZADD', key, now, member)
    redis.call('PEXPIRE', key, tonumber(ARGV[3 + n + i]))
    counts[i] = counts[i] + 1
  end
  local left = limit - counts[i]
  if left < 0 then left = 0 end
  if remaining < 0 or left < remaining then remaining = left end
end
if remaining < 0 then remaining = 0 end
local answer = {retry == 0 and 1 or 0, remaining, retry}
for i = 1, n do answer[3 + i] = counts[i] end
return answer
`;

export interface RedisStoreOptions {
  url: string;
  /** Namespaces keys, so tests (or several deployments) can share one Redis. */
  prefix?: string;
  now?: Clock;
}

/** A decision of Redis, with each bucket's count after the request (in the order of the buckets). */
export type SharedDecision = Decision & { counts: number[] };

export interface RedisStore extends RateLimitStore {
  /** `hit`, with each bucket's count after the request: what keeps a copy in step (fallback.ts). */
  hitCounted(buckets: readonly Bucket[], windowMs: number, mode: HitMode): Promise<SharedDecision>;
  /** False while the connection is lost: callers need not wait for a command to time out. */
  available(): boolean;
  /** One round trip, bounded by the command time-out: the circuit breaker's probe. */
  ping(): Promise<void>;
}

const COMMAND_TIMEOUT_MS = 500;

export function createRedisStore(options: RedisStoreOptions): RedisStore {
  const redis = new Redis(options.url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    commandTimeout: COMMAND_TIMEOUT_MS,
    lazyConnect: false,
  });
  redis.on('error', () => {});
  redis.defineCommand('svcRateHit', { lua: SCRIPT });
  const prefix = options.prefix ?? 'svc:rl:';
  const now = options.now ?? Date.now;
  let sequence = 0;
  const node = randomBytes(4).toString('hex');
  const hitCounted = async (
    buckets: readonly Bucket[],
    windowMs: number,
    mode: HitMode,
  ): Promise<SharedDecision> => {
    const keys = buckets.map((b) => prefix + b.key);
    const t = now();
    const member = `${t}:${node}:${sequence++}`;
    const args = [
      t,
      mode,
      member,
      ...buckets.map((b) => b.limit),
      ...buckets.map((b) => windowOf(b, windowMs)),
    ];
    const [allowed, remaining, retry, ...counts] = (await (
      redis as unknown as { svcRateHit(n: number, ...a: unknown[]): Promise<number[]> }
    ).svcRateHit(keys.length, ...keys, ...args)) as [number, number, number, ...number[]];
    return { allowed: allowed === 1, remaining, retryAfterMs: retry, counts };
  };
  return {
    available: () => redis.status !== 'reconnecting' && redis.status !== 'close' && redis.status !== 'end',
    async ping() {
      await redis.ping();
    },
    async hit(buckets: readonly Bucket[], windowMs: number, mode: HitMode): Promise<Decision> {
      const { allowed, remaining, retryAfterMs } = await hitCounted(buckets, windowMs, mode);
      return { allowed, remaining, retryAfterMs };
    },
    hitCounted,
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

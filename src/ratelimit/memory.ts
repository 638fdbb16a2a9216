import {
  type Bucket,
  type Clock,
  type Decision,
  type HitMode,
  type RateLimitStore,
  windowOf,
} from './store.js';

/**
 * The timestamps of one bucket, oldest first. Entries before `head` have left the window: moving
 * `head` forgets them in O(1), and the array is compacted only once the dead part is at least half
 * of it, so a full bucket of 1200 entries costs the same per request as a nearly empty one.
 */
interface Log {
  times: number[];
  head: number;
  /** The window of the bucket, so the sweep forgets it only once it is idle for its own window. */
  windowMs: number;
}

const COMPACT_AFTER = 32;

const size = (log: Log) => log.times.length - log.head;

function prune(log: Log, since: number): void {
  const { times } = log;
  while (log.head < times.length && (times[log.head] as number) <= since) log.head++;
  if (log.head >= COMPACT_AFTER && log.head * 2 >= times.length) {
    times.splice(0, log.head);
    log.head = 0;
  }
}

export interface MemoryStore extends RateLimitStore {
  /** Buckets currently held: lets tests see that idle ones are forgotten. */
  size(): number;
}

/** State of one process. Right for a single API process and for tests; several share Redis. */
export function createMemoryStore(now: Clock = Date.now): MemoryStore {
  const logs = new Map<string, Log>();

  // Forget idle buckets so memory follows active keys only; one pass per window of the call at
  // most. Each bucket is judged by its own window, so an hour's bucket outlives a minute's sweep.
  let lastSweep = Number.NEGATIVE_INFINITY;
  const sweep = (t: number, windowMs: number) => {
    if (t - lastSweep < windowMs) return;
    lastSweep = t;
    for (const [key, log] of logs) {
      if (size(log) === 0 || (log.times.at(-1) as number) <= t - log.windowMs) logs.delete(key);
    }
  };

  /** The bucket's log with what left its window forgotten, or undefined while it holds nothing. */
  const current = (key: string, windowMs: number, t: number): Log | undefined => {
    const log = logs.get(key);
    if (log) {
      log.windowMs = windowMs;
      prune(log, t - windowMs);
    }
    return log;
  };

  return {
    // Written for the path every API request takes twice: no object per bucket, and a bucket that
    // holds nothing (an IP without failures, peeked) costs a map lookup and no log of its own.
    async hit(buckets: readonly Bucket[], windowMs: number, mode: HitMode): Promise<Decision> {
      const t = now();
      sweep(t, windowMs);
      const found: (Log | undefined)[] = new Array(buckets.length);
      let retryAfterMs = 0;
      for (let i = 0; i < buckets.length; i++) {
        const b = buckets[i] as Bucket;
        const w = windowOf(b, windowMs);
        const log = current(b.key, w, t);
        found[i] = log;
        const count = log ? size(log) : 0;
        if (log && count >= b.limit) {
          // The bucket has room again when the entry `limit` places from the newest leaves.
          const freeing = log.times[log.head + count - b.limit] as number;
          retryAfterMs = Math.max(retryAfterMs, freeing + w - t);
        }
      }
      const allowed = retryAfterMs === 0;
      const adds = mode === 'record' || (mode === 'take' && allowed);
      let remaining = Number.POSITIVE_INFINITY;
      for (let i = 0; i < buckets.length; i++) {
        const b = buckets[i] as Bucket;
        let log = found[i];
        if (adds) {
          if (!log) {
            log = { times: [], head: 0, windowMs: windowOf(b, windowMs) };
            logs.set(b.key, log);
          }
          log.times.push(t);
        }
        remaining = Math.min(remaining, Math.max(0, b.limit - (log ? size(log) : 0)));
      }
      return { allowed, remaining: Number.isFinite(remaining) ? remaining : 0, retryAfterMs };
    },
    size: () => logs.size,
    async close() {
      logs.clear();
    },
  };
}

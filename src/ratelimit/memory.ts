import type { Bucket, Clock, Decision, HitMode, RateLimitStore } from './store.js';

/** State of one process. Right for a single API process and for tests; several share Redis. */
export function createMemoryStore(now: Clock = Date.now): RateLimitStore {
  const logs = new Map<string, number[]>();

  const prune = (key: string, since: number): number[] => {
    const log = logs.get(key) ?? [];
    let drop = 0;
    while (drop < log.length && (log[drop] as number) <= since) drop++;
    if (drop > 0) log.splice(0, drop);
    return log;
  };

  // Forget idle buckets so memory follows active keys only.
  let lastSweep = 0;
  const sweep = (t: number, windowMs: number) => {
    if (t - lastSweep < windowMs) return;
    lastSweep = t;
    for (const [key, log] of logs)
      if (log.length === 0 || (log.at(-1) as number) <= t - windowMs) logs.delete(key);
  };

  return {
    async hit(buckets: readonly Bucket[], windowMs: number, mode: HitMode): Promise<Decision> {
      const t = now();
      sweep(t, windowMs);
      const current = buckets.map((b) => ({ b, log: prune(b.key, t - windowMs) }));
      let retryAfterMs = 0;
      for (const { b, log } of current) {
        if (log.length >= b.limit) {
          const freeing = log[log.length - b.limit] as number;
          retryAfterMs = Math.max(retryAfterMs, freeing + windowMs - t);
        }
      }
      const allowed = retryAfterMs === 0;
      const adds = mode === 'record' || (mode === 'take' && allowed);
      let remaining = Number.POSITIVE_INFINITY;
      for (const { b, log } of current) {
        if (adds) {
          log.push(t);
          logs.set(b.key, log);
        }
        remaining = Math.min(remaining, Math.max(0, b.limit - log.length));
      }
      return { allowed, remaining: Number.isFinite(remaining) ? remaining : 0, retryAfterMs };
    },
    async close() {
      logs.clear();
    },
  };
}

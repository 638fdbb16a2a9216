// Limits shared through Redis, and what happens when Redis cannot answer: this process's own
// memory takes over, so an outage of the limiter's store makes limits per-process for a while
// instead of refusing every request with a 500. It is logged, at most once every 30 seconds.
import type { Bucket, Decision, HitMode, RateLimitStore } from './store.js';

export interface FallbackOptions {
  primary: RateLimitStore & { available(): boolean };
  fallback: RateLimitStore;
  onFallback: (error: unknown) => void;
  now?: () => number;
}

const REPORT_EVERY_MS = 30_000;

export function withFallback(options: FallbackOptions): RateLimitStore {
  const { primary, fallback, onFallback } = options;
  const now = options.now ?? Date.now;
  let lastReport = Number.NEGATIVE_INFINITY;
  const report = (error: unknown) => {
    if (now() - lastReport < REPORT_EVERY_MS) return;
    lastReport = now();
    onFallback(error);
  };
  return {
    async hit(buckets: readonly Bucket[], windowMs: number, mode: HitMode): Promise<Decision> {
      if (primary.available()) {
        try {
          return await primary.hit(buckets, windowMs, mode);
        } catch (error) {
          report(error);
        }
      } else {
        report(new Error('rate-limit store unreachable'));
      }
      return fallback.hit(buckets, windowMs, mode);
    },
    async close() {
      await Promise.all([primary.close(), fallback.close()]);
    },
  };
}

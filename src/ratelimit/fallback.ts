// Limits shared through Redis, and what happens when Redis cannot answer: this process's own
// memory takes over, so an outage of the limiter's store makes limits per-process for a while
// instead of refusing every request with a 500.
//
// A circuit breaker decides which store answers. The first failure (a refused connection, or a
// command time-out of a Redis that accepts connections and never answers) opens it: from then on
// every request is decided in memory at once, and a background probe asks Redis every
// `probeEveryMs` until it answers, which closes the breaker. Without it a frozen Redis would cost
// every request a command time-out. The outage is logged when it starts (and again every 30 s
// while it lasts); the return is logged once.
import type { Bucket, Decision, HitMode, RateLimitStore } from './store.js';

export interface FallbackOptions {
  primary: RateLimitStore & {
    available(): boolean;
    /** A cheap round trip; without it the breaker probes with a `peek` on no bucket. */
    ping?(): Promise<void>;
  };
  fallback: RateLimitStore;
  onFallback: (error: unknown) => void;
  /** Told when the primary answers again, with how long the breaker was open (ms). */
  onRecovery?: (downMs: number) => void;
  probeEveryMs?: number;
  now?: () => number;
}

const REPORT_EVERY_MS = 30_000;
const PROBE_EVERY_MS = 1000;

export function withFallback(options: FallbackOptions): RateLimitStore {
  const { primary, fallback, onFallback } = options;
  const now = options.now ?? Date.now;
  const probeEveryMs = options.probeEveryMs ?? PROBE_EVERY_MS;
  let lastReport = Number.NEGATIVE_INFINITY;
  let openedAt: number | null = null;
  let probe: NodeJS.Timeout | null = null;
  let closed = false;

  const report = (error: unknown) => {
    if (now() - lastReport < REPORT_EVERY_MS) return;
    lastReport = now();
    onFallback(error);
  };

  const ping = () => (primary.ping ? primary.ping() : primary.hit([], 1000, 'peek').then(() => undefined));

  const close = () => {
    if (probe) clearInterval(probe);
    probe = null;
    const downMs = openedAt === null ? 0 : Date.now() - openedAt;
    openedAt = null;
    lastReport = Number.NEGATIVE_INFINITY;
    options.onRecovery?.(downMs);
  };

  const open = (error: unknown) => {
    report(error);
    if (openedAt !== null || closed) return;
    openedAt = Date.now();
    let probing = false;
    probe = setInterval(() => {
      if (probing) return;
      probing = true;
      ping()
        .then(() => {
          if (openedAt !== null && !closed) close();
        })
        .catch(() => {})
        .finally(() => {
          probing = false;
        });
    }, probeEveryMs);
    probe.unref();
  };

  return {
    async hit(buckets: readonly Bucket[], windowMs: number, mode: HitMode): Promise<Decision> {
      if (openedAt === null) {
        if (primary.available()) {
          try {
            return await primary.hit(buckets, windowMs, mode);
          } catch (error) {
            open(error);
          }
        } else {
          open(new Error('rate-limit store unreachable'));
        }
      } else {
        report(new Error('rate-limit store unreachable'));
      }
      return fallback.hit(buckets, windowMs, mode);
    },
    async close() {
      closed = true;
      if (probe) clearInterval(probe);
      await Promise.all([primary.close(), fallback.close()]);
    },
  };
}

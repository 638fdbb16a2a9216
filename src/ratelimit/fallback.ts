// Limits shared through Redis, and what happens when Redis cannot answer in time: this process's
// copy of the shared windows (mirror.ts), kept in step with every answer of Redis, decides
// instead, so a slow or lost Redis never refuses requests with a 500, and a short stall does not
// admit a full limit again from an empty window.
//
// A request waits for Redis at most the command time-out (500 ms), then is decided from the copy.
// One slow reply is a stall, not an outage: a circuit breaker opens only after `failuresToOpen`
// failures (time-outs or errors) within `failureWindowMs`, or at once when the connection is lost.
// While it is open every request is decided from the copy at once, and a background probe asks
// Redis every `probeEveryMs` until it answers, which closes the breaker. The outage is logged
// when it starts (and again every 30 s while it lasts), a stall at most every 30 s, the return once.
import type { Mirror } from './mirror.js';
import type { Bucket, Decision, HitMode, RateLimitStore } from './store.js';

export interface FallbackOptions {
  primary: RateLimitStore & {
    available(): boolean;
    /** A cheap round trip; without it the breaker probes with a `peek` on no bucket. */
    ping?(): Promise<void>;
    /** `hit` with each bucket's count after the request, which keeps the copy in step. */
    hitCounted?(
      buckets: readonly Bucket[],
      windowMs: number,
      mode: HitMode,
    ): Promise<Decision & { counts: number[] }>;
  };
  /** This process's copy of the shared windows. */
  local: Mirror;
  /** Told when the breaker opens (and every 30 s while it stays open). */
  onFallback: (error: unknown) => void;
  /** Told of a failure that did not open the breaker (at most every 30 s). */
  onStall?: (error: unknown) => void;
  /** Told when the primary answers again, with how long the breaker was open (ms). */
  onRecovery?: (downMs: number) => void;
  probeEveryMs?: number;
  failuresToOpen?: number;
  failureWindowMs?: number;
  now?: () => number;
}

const REPORT_EVERY_MS = 30_000;
const PROBE_EVERY_MS = 1000;
export const FAILURES_TO_OPEN = 3;
const FAILURE_WINDOW_MS = 10_000;

export function withFallback(options: FallbackOptions): RateLimitStore {
  const { primary, local, onFallback } = options;
  const now = options.now ?? Date.now;
  const probeEveryMs = options.probeEveryMs ?? PROBE_EVERY_MS;
  const failuresToOpen = options.failuresToOpen ?? FAILURES_TO_OPEN;
  const failureWindowMs = options.failureWindowMs ?? FAILURE_WINDOW_MS;
  let lastReport = Number.NEGATIVE_INFINITY;
  let lastStall = Number.NEGATIVE_INFINITY;
  let failures: number[] = [];
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
    failures = [];
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

  /** A time-out or error: a stall until enough of them fall within the failure window. */
  const failed = (error: unknown) => {
    const t = now();
    failures = failures.filter((at) => at > t - failureWindowMs);
    failures.push(t);
    if (failures.length >= failuresToOpen) {
      open(error);
    } else if (t - lastStall >= REPORT_EVERY_MS) {
      lastStall = t;
      options.onStall?.(error);
    }
  };

  return {
    async hit(buckets: readonly Bucket[], windowMs: number, mode: HitMode): Promise<Decision> {
      if (openedAt === null) {
        if (primary.available()) {
          try {
            if (!primary.hitCounted) return await primary.hit(buckets, windowMs, mode);
            const { counts, ...decision } = await primary.hitCounted(buckets, windowMs, mode);
            local.observe(buckets, windowMs, counts);
            return decision;
          } catch (error) {
            failed(error);
          }
        } else {
          open(new Error('rate-limit store unreachable'));
        }
      } else {
        report(new Error('rate-limit store unreachable'));
      }
      return local.hit(buckets, windowMs, mode);
    },
    async close() {
      closed = true;
      if (probe) clearInterval(probe);
      await primary.close();
    },
  };
}

// This process's copy of the shared windows, kept in step with every answer Redis gives, so a
// request that Redis cannot decide in time is decided from what the windows held a moment ago
// rather than from an empty window that would admit a full limit again.
//
// Per bucket it keeps the count Redis last reported (admissions of every process) and when, plus
// the admissions this process made on its own since. The reported count is held until one window
// after the report (every entry it counted has left the window by then: it may refuse a little
// longer than Redis would, never admit more); from then on, in an outage longer than a window,
// the bucket counts this process's own admissions only, as a per-process limiter does.
import { type Bucket, type Clock, type Decision, type HitMode, windowOf } from './store.js';

interface Copy {
  /** Admissions Redis counted at `at`, this process's and the others'. */
  shared: number;
  at: number;
  windowMs: number;
  /** Times of the admissions decided here since, oldest first. */
  local: number[];
}

export interface Mirror {
  /** Records the counts Redis reported for the buckets, after the request it decided. */
  observe(buckets: readonly Bucket[], windowMs: number, counts: readonly number[]): void;
  /** Decides as Redis would from the copy: the shared count held, plus what was admitted here since. */
  hit(buckets: readonly Bucket[], windowMs: number, mode: HitMode): Decision;
  /** Buckets held: lets tests see that idle ones are forgotten. */
  size(): number;
}

export function createMirror(now: Clock = Date.now): Mirror {
  const copies = new Map<string, Copy>();
  let lastSweep = Number.NEGATIVE_INFINITY;

  const sweep = (t: number, windowMs: number) => {
    if (t - lastSweep < windowMs) return;
    lastSweep = t;
    for (const [key, c] of copies) {
      if (t - c.at >= c.windowMs && (c.local.at(-1) ?? Number.NEGATIVE_INFINITY) <= t - c.windowMs) {
        copies.delete(key);
      }
    }
  };

  /** The shared count still held at t, and the local admissions still in the window. */
  const standing = (c: Copy | undefined, w: number, t: number) => {
    if (!c) return { shared: 0, local: [] as number[] };
    while (c.local.length > 0 && (c.local[0] as number) <= t - w) c.local.shift();
    return { shared: t - c.at < w ? c.shared : 0, local: c.local };
  };

  return {
    observe(buckets, windowMs, counts) {
      const t = now();
      sweep(t, windowMs);
      buckets.forEach((b, i) => {
        const copy = copies.get(b.key);
        const shared = counts[i] ?? 0;
        if (copy) {
          copy.shared = shared;
          copy.at = t;
          copy.windowMs = windowOf(b, windowMs);
          copy.local.length = 0;
        } else {
          copies.set(b.key, { shared, at: t, windowMs: windowOf(b, windowMs), local: [] });
        }
      });
    },

    hit(buckets, windowMs, mode) {
      const t = now();
      sweep(t, windowMs);
      let retryAfterMs = 0;
      const counts = buckets.map((b) => {
        const w = windowOf(b, windowMs);
        const copy = copies.get(b.key);
        const { shared, local } = standing(copy, w, t);
        const count = shared + local.length;
        if (count >= b.limit) {
          // Room comes when the held count lapses, or, if this process alone fills the bucket,
          // when its own admission `limit` places from the newest leaves.
          const freeing =
            local.length >= b.limit ? (local[local.length - b.limit] as number) + w : (copy as Copy).at + w;
          retryAfterMs = Math.max(retryAfterMs, freeing - t);
        }
        return count;
      });
      const allowed = retryAfterMs === 0;
      const adds = mode === 'record' || (mode === 'take' && allowed);
      let remaining = Number.POSITIVE_INFINITY;
      buckets.forEach((b, i) => {
        let count = counts[i] as number;
        if (adds) {
          let copy = copies.get(b.key);
          if (!copy) {
            copy = { shared: 0, at: t, windowMs: windowOf(b, windowMs), local: [] };
            copies.set(b.key, copy);
          }
          copy.local.push(t);
          count++;
        }
        remaining = Math.min(remaining, Math.max(0, b.limit - count));
      });
      return { allowed, remaining: Number.isFinite(remaining) ? remaining : 0, retryAfterMs };
    },

    size: () => copies.size,
  };
}

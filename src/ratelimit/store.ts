// Sliding-window rate limiting: every admitted request is a timestamp in each of its buckets, and
// a bucket is full while it holds `limit` timestamps younger than the window. Exact, not an
// approximation by fixed slots, and the same decision with state in memory or in Redis.

export interface Bucket {
  key: string;
  limit: number;
  /**
   * The bucket's own window (ms), when it differs from the one the call names: one call can then
   * decide, in one atomic step, buckets of a minute and of an hour (webhook tests).
   */
  windowMs?: number;
}

/** The window a bucket is judged over. */
export const windowOf = (bucket: Bucket, windowMs: number): number => bucket.windowMs ?? windowMs;

export interface Decision {
  allowed: boolean;
  /** Smallest remainder over the buckets, after this request when it was admitted. */
  remaining: number;
  /** When refused: how long until every full bucket has room again. */
  retryAfterMs: number;
}

/**
 * - `take`: admit into every bucket, or into none when one is full (API requests);
 * - `peek`: only tell how the buckets stand (checking an IP before authentication);
 * - `record`: add even when full (authentication failures keep counting).
 */
export type HitMode = 'take' | 'peek' | 'record';

export interface RateLimitStore {
  hit(buckets: readonly Bucket[], windowMs: number, mode: HitMode): Promise<Decision>;
  close(): Promise<void>;
}

export type Clock = () => number;

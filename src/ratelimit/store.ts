// Sliding-window rate limiting: every admitted request is a timestamp in each of its buckets, and
// a bucket is full while it holds `limit` timestamps younger than the window. Exact, not an
// approximation by fixed slots, and the same decision with state in memory or in Redis.

export interface Bucket {
  key: string;
  limit: number;
}

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

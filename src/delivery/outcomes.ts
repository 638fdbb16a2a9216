// A worker's batch of outcomes: attempts that ended wait here for the next exchange, which writes
// them all in one statement beside the next claim. A write that fails is tried again with back-off,
// each outcome only until shortly before its lease ends: after that the delivery may be claimed
// again, and the lease, not this worker, decides what happened to it.
import type { Outcome } from './engine.js';
import type { AttemptClass } from './metrics.js';

/** A failed write is tried again after this, doubling up to WRITE_RETRY_MAX_MS. */
const WRITE_RETRY_MS = 25;
const WRITE_RETRY_MAX_MS = 1000;
/** An outcome is written until this long before its lease ends. */
export const LEASE_MARGIN_MS = 500;

/** An attempt that ended, what it came to, and when its lease ends (by the worker's clock). */
export type Ended = Outcome & { leaseEndsAt: number; class: AttemptClass };

export interface OutcomeBatch {
  add(ended: Ended): void;
  readonly count: number;
  /** The outcomes to write now: all of them, or none while a failed write waits for its retry. */
  take(now: number): Ended[];
  /** Milliseconds until a write may be made. */
  writeInMs(now: number): number;
  /** The batch was written. */
  written(): void;
  /** The batch was not written: kept ahead of newer outcomes while its leases allow. Answers how many were let go. */
  failed(batch: Ended[], now: number): number;
  /** What was never written (a worker stopping gives those leases back). */
  unwritten(): Ended[];
}

export function outcomeBatch(): OutcomeBatch {
  let ended: Ended[] = [];
  let backoffMs = WRITE_RETRY_MS;
  let retryWriteAt = 0;
  return {
    add: (e) => ended.push(e),
    get count() {
      return ended.length;
    },
    take: (now) => (now >= retryWriteAt ? ended.splice(0) : []),
    writeInMs: (now) => (ended.length === 0 ? Number.POSITIVE_INFINITY : Math.max(0, retryWriteAt - now)),
    written() {
      backoffMs = WRITE_RETRY_MS;
    },
    failed(batch, now) {
      const kept = batch.filter((e) => e.leaseEndsAt - LEASE_MARGIN_MS > now);
      ended = kept.concat(ended);
      retryWriteAt = now + backoffMs;
      backoffMs = Math.min(backoffMs * 2, WRITE_RETRY_MAX_MS);
      return batch.length - kept.length;
    },
    unwritten: () => ended.splice(0),
  };
}

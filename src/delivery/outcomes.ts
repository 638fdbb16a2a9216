// The outcomes of a worker's attempts on their way to the database. Attempts that end are kept here
// until the worker's next round writes them, alone or in one statement with its next claim. A batch
// whose write fails is kept and tried again with back-off until shortly before its leases end: once
// a lease has ended the delivery may be claimed again, and the lease, not this worker, decides. Only
// outcomes the database took count in the metrics.
import type { FastifyBaseLogger } from 'fastify';
import type { Queryable } from '../db/db.js';
import type { DeliveryMetrics } from './metrics.js';
import {
  type ClaimRequest,
  type ClaimResult,
  claimDeliveries,
  type Outcome,
  recordAndClaim,
  recordOutcomes,
  type Written,
} from './store.js';

/** An outcome write that failed is tried again after this, doubling, up to WRITE_RETRY_MAX_MS. */
const WRITE_RETRY_MS = 25;
const WRITE_RETRY_MAX_MS = 1000;
/** Outcomes are written until this long before their lease ends; after that the lease decides. */
export const LEASE_MARGIN_MS = 500;

/** An attempt that ended, its outcome not yet written; with when its lease ends, by our clock. */
export type Ended = Outcome & { leaseEndsAt: number };

export interface OutcomeDeps {
  engine: Queryable;
  logger: FastifyBaseLogger;
  metrics?: DeliveryMetrics;
  /** Logs a failure of the service's own (the worker's, rate-limited). */
  report(error: unknown, what: string): void;
}

export interface Outcomes {
  /** An attempt ended: its outcome waits for the next write. */
  add(ended: Ended): void;
  /** Outcomes waiting to be written. */
  readonly count: number;
  /** Milliseconds until a failed write may be tried again; 0 when a write may be made now. */
  writeInMs(): number;
  /** The outcomes to write in this round: all of them, none while a failed write waits. */
  take(): Ended[];
  /** Writes every outcome waiting, back-off or not (a worker stopping). */
  flush(): Promise<void>;
  /**
   * Writes `batch` and claims up to `request.take` more: one statement when there are both (the
   * batch's slots count as free in the claim), else whichever there is. The claim, or null when
   * none was made (or the statement failed: the batch is then kept for the next round).
   */
  exchange(batch: Ended[], request: Omit<ClaimRequest, 'ending'>): Promise<ClaimResult | null>;
  /**
   * When the earliest retry written since the last call falls due (by our clock), or Infinity; a
   * claim running beside the write may have missed it.
   */
  takeRetryDue(): number;
  /** The deliveries whose outcome was not written (a worker stopping hands them back). */
  unwritten(): Outcome['claimed'][];
}

export function outcomes(deps: OutcomeDeps): Outcomes {
  const { engine, logger, metrics, report } = deps;
  let ended: Ended[] = [];
  let retryMs = WRITE_RETRY_MS;
  let retryAt = 0;
  let retryDueAt = Number.POSITIVE_INFINITY;

  /** A batch written: only written outcomes are counted; the retries it set are remembered. */
  function written(batch: Ended[], { written, disabled }: Written) {
    retryMs = WRITE_RETRY_MS;
    const done = new Set(written);
    for (const o of batch) {
      if (!done.has(o.claimed.id)) continue;
      metrics?.attempts.inc({ outcome: o.recorded.counts ? o.recorded.status : 'not_sent' });
      if (o.recorded.nextRetryInMs !== null)
        retryDueAt = Math.min(retryDueAt, Date.now() + o.recorded.nextRetryInMs);
    }
    for (const webhook of disabled) {
      metrics?.disabled.inc();
      logger.warn({ webhook }, 'webhook deactivated after 100 dead deliveries in a row');
    }
  }

  /** A batch not written is kept, ahead of what ended since, for as long as its leases allow. */
  function failed(batch: Ended[], error: unknown) {
    report(error, 'webhook outcomes not written yet; trying again');
    const now = Date.now();
    const keep = batch.filter((o) => o.leaseEndsAt - LEASE_MARGIN_MS > now);
    if (keep.length < batch.length) {
      logger.warn(
        { deliveries: batch.length - keep.length },
        'webhook outcomes not written before their lease ends; the lease returns them to the queue',
      );
    }
    ended = keep.concat(ended);
    retryAt = now + retryMs;
    retryMs = Math.min(retryMs * 2, WRITE_RETRY_MAX_MS);
  }

  async function write(batch: Ended[]): Promise<void> {
    if (batch.length === 0) return;
    await recordOutcomes(engine, batch).then(
      (result) => written(batch, result),
      (error) => failed(batch, error),
    );
  }

  return {
    add: (o) => ended.push(o),
    get count() {
      return ended.length;
    },
    writeInMs: () => Math.max(retryAt - Date.now(), 0),
    take: () => (Date.now() >= retryAt ? ended.splice(0) : []),
    flush: () => write(ended.splice(0)),
    async exchange(batch, request) {
      if (request.take <= 0) {
        await write(batch);
        return null;
      }
      if (batch.length === 0) return claimDeliveries(engine, request);
      let result: Awaited<ReturnType<typeof recordAndClaim>>;
      try {
        result = await recordAndClaim(engine, batch, request);
      } catch (error) {
        failed(batch, error);
        return null;
      }
      written(batch, result);
      return result.claim;
    },
    takeRetryDue() {
      const due = retryDueAt;
      retryDueAt = Number.POSITIVE_INFINITY;
      return due;
    },
    unwritten: () => ended.map((o) => o.claimed),
  };
}

// A worker's assignment: the partitions of the webhooks it owns (src/db/engine.sql,
// delivery_worker_beat). It beats on its own, beside the delivery loop (a beat is a write, and a
// slow commit must not hold up attempts): every SVC_WEBHOOK_POLL_MS, and at once when another
// worker joins or leaves (their beat notifies `svc_workers`), so a new worker has its share within
// a beat or two and a stopping one's share is taken at once. A worker whose beat stops for
// SVC_WEBHOOK_WORKER_LEASE_MS is dead: the next beat of any other frees its partitions and gives
// its leases back.
import type { Queryable } from '../db/db.js';
import { beat, leave, type WorkerIdentity } from './engine.js';

export interface Assignment {
  readonly worker: WorkerIdentity;
  /** The partitions owned since the last beat. */
  readonly partitions: readonly number[];
  owns(partition: number): boolean;
  /** Beats once, then every `beatMs`; `changed` is told when the partitions owned change. */
  start(changed: () => void, failed: (error: unknown) => void): Promise<void>;
  /** Another worker joined or left: beat now. */
  soon(): void;
  /** Stops beating and frees every partition at once (a worker stopping). */
  leave(): Promise<void>;
}

export function assignment(
  engine: Queryable,
  worker: WorkerIdentity,
  timing: { beatMs: number; leaseMs: number },
): Assignment {
  let partitions: readonly number[] = [];
  let owned = new Set<number>();
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<void> = Promise.resolve();
  let left = false;
  let again = false;
  let onChange = () => {};
  let onFailure = (_: unknown) => {};

  async function once() {
    const had = partitions.join();
    try {
      partitions = await beat(engine, worker, timing.leaseMs);
    } catch (error) {
      onFailure(error);
    }
    owned = new Set(partitions);
    if (partitions.join() !== had) onChange();
  }

  /** One beat at a time: a call during a beat runs one more after it. */
  function next() {
    clearTimeout(timer);
    if (left) return;
    again = true;
    beating = beating.then(async () => {
      if (!again || left) return;
      again = false;
      await once();
      // A call during the beat chained this one after a beat that set its timer: one timer only,
      // or leave() clears the last and the other holds the process up for a beat.
      clearTimeout(timer);
      if (!left) timer = setTimeout(next, timing.beatMs);
    });
  }

  return {
    worker,
    get partitions() {
      return partitions;
    },
    owns: (partition) => owned.has(partition),
    async start(changed, failed) {
      onChange = changed;
      onFailure = failed;
      next();
      await beating;
    },
    soon: next,
    async leave() {
      left = true;
      clearTimeout(timer);
      await beating;
      partitions = [];
      owned = new Set();
      await leave(engine, worker.id);
    },
  };
}

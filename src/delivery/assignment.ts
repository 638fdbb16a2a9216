// A worker's assignment: the partitions of the webhooks it owns (src/db/engine.sql,
// delivery_worker_beat). It beats every SVC_WEBHOOK_POLL_MS, and at once when another worker joins
// or leaves (their beat notifies `svc_workers`), so a new worker has its share within a beat or two
// and a stopping one's share is taken at once. A worker whose beat stops for
// SVC_WEBHOOK_WORKER_LEASE_MS is dead: the next beat of any other frees its partitions and gives
// its leases back.
import type { Queryable } from '../db/db.js';
import { beat, leave, type WorkerIdentity } from './engine.js';

export interface Assignment {
  readonly worker: WorkerIdentity;
  /** The partitions owned since the last beat. */
  readonly partitions: readonly number[];
  owns(partition: number): boolean;
  /** Milliseconds until the next beat is due (0: now). */
  beatInMs(now: number): number;
  /** Another worker joined or left: beat at the next round. */
  soon(): void;
  beat(now: number): Promise<void>;
  /** Frees every partition at once (a worker stopping). */
  leave(): Promise<void>;
}

export function assignment(
  engine: Queryable,
  worker: WorkerIdentity,
  timing: { beatMs: number; leaseMs: number },
): Assignment {
  let partitions: readonly number[] = [];
  let owned = new Set<number>();
  let nextBeatAt = 0;
  return {
    worker,
    get partitions() {
      return partitions;
    },
    owns: (partition) => owned.has(partition),
    beatInMs: (now) => Math.max(0, nextBeatAt - now),
    soon() {
      nextBeatAt = 0;
    },
    async beat(now) {
      partitions = await beat(engine, worker, timing.leaseMs);
      owned = new Set(partitions);
      nextBeatAt = now + timing.beatMs;
    },
    async leave() {
      partitions = [];
      owned = new Set();
      await leave(engine, worker.id);
    },
  };
}

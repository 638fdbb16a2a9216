// The standby of an embedded worker (in `svc serve`, beside the platform's writers): while a `svc
// worker` process is at work on its database, it takes no webhook of its own, only a share of a
// webhook whose holder is not keeping up (worker.ts: its deliveries waited SHARE_AFTER_MS), and
// after a claim that found none asks again that long later at the earliest. The process that
// answers the API then leaves deliveries to the processes deployed for them: taking webhooks at
// every commit, `serve` (which hears of its own writes first) held all of them and the `svc worker`
// idled (at 200 events/s on 2 cores: `serve` at 1.2 ms of CPU per delivery, the worker at 0.04, p99
// commit to arrival 743 ms against 20 ms for `serve` alone).
//
// A `svc worker` is known by the sessions of its engine's pool, which carry its name and schema
// (Db.sessionsOf). Looked for with the worker's housekeeping (every 5 s at most), so a `svc worker`
// that stops is missed for that long at most (the leases it held return its deliveries), and at
// most every SVC_WEBHOOK_POLL_MS besides, so one that starts is known before it has shared much of
// the work.
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/db.js';

/**
 * What `svc worker` processes call the sessions of their engine's pool (Db.sessionsOf): how an
 * embedded worker knows one is at work on its database.
 */
export const DEDICATED_WORKERS = 'svc worker';

export interface Standby {
  /** A `svc worker` was at work at the last look. */
  readonly standingBy: boolean;
  /** Looks again when `everyMs` has passed since the last look, or at once with `atOnce`. */
  look(atOnce: boolean): Promise<void>;
}

export function standby(db: Db, logger: FastifyBaseLogger, everyMs: number): Standby {
  let standingBy = false;
  let lastLookAt = 0;
  return {
    get standingBy() {
      return standingBy;
    },
    async look(atOnce) {
      if (!atOnce && Date.now() - lastLookAt < everyMs) return;
      lastLookAt = Date.now();
      const dedicated = (await db.sessionsOf(DEDICATED_WORKERS)) > 0;
      if (dedicated === standingBy) return;
      standingBy = dedicated;
      logger.info(
        dedicated
          ? 'a svc worker delivers on this database: the embedded worker stands by'
          : 'no svc worker delivers on this database: the embedded worker delivers',
      );
    },
  };
}

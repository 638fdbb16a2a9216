// Which delivering processes stand by. A worker standing by holds nothing ahead and takes only
// what waits: a share of a webhook whose holder is not keeping up, or a webhook no one holds, once
// its oldest due delivery has waited SVC_WEBHOOK_SHARE_AFTER_MS (claim_slots, migration 016); after
// a claim that found none it asks again that long later, or SVC_WEBHOOK_POLL_MS if shorter.
//
// - The embedded worker (in `svc serve`, beside the platform's writers) stands by while a `svc
//   worker` process is at work on its database: the process that answers the API leaves deliveries
//   to the processes deployed for them. Taking webhooks at every commit, `serve` (which hears of its
//   own writes first) held all of them and the `svc worker` idled (at 200 events/s on 2 cores:
//   `serve` at 1.2 ms of CPU per delivery, the worker at 0.04, p99 commit to arrival 743 ms against
//   20 ms for `serve` alone). A `svc worker` is known by the sessions of its engine's pool, which
//   carry its name and schema (Db.sessionsOf).
// - Of several `svc worker` processes, one leads (Db.leadership: a lock its session holds) and the
//   others stand by. With every worker answering every notification, the claims of one event ran
//   side by side and split its deliveries between them: at 200 events/s on 2 cores, two workers
//   spent 0.68 to 0.78 ms of CPU per delivery against 0.47 to 0.49 for one, and a worker taking
//   over webhooks the other had warmed made its first attempts in 100 to 190 ms (p99 commit to
//   arrival above 150 ms in 18 short runs of 20, against 20 ms or less for one worker in 7 of 8).
//   A leader that stops gives up the lead at once; one that dies or loses its connection frees it
//   as its session ends. Either way the next worker takes it at its next look.
//
// Looked for with the worker's housekeeping (every 5 s at most) and at most every
// SVC_WEBHOOK_POLL_MS besides, so a `svc worker` that starts is known before it has shared much of
// the work, and a lead that is free is taken within SVC_WEBHOOK_POLL_MS (the leases of a worker
// that died return its deliveries).
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/db.js';

/**
 * What `svc worker` processes call the sessions of their engine's pool (Db.sessionsOf), and their
 * lead (Db.leadership): how an embedded worker knows one is at work on its database.
 */
export const DEDICATED_WORKERS = 'svc worker';

export interface Standby {
  /** Another process was at work at the last look: this worker stands by. */
  readonly standingBy: boolean;
  /** When this worker last began to stand by (Date.now()); 0 while it does not. */
  readonly since: number;
  /** Looks again when `everyMs` has passed since the last look, or at once with `atOnce`. */
  look(atOnce: boolean): Promise<void>;
  /** Gives up what this worker holds (a `svc worker`'s lead). */
  close(): Promise<void>;
}

/**
 * The standby of an embedded worker (`dedicated` false: it stands by while a `svc worker` is at
 * work) or of a `svc worker` (it stands by while another one leads).
 */
export function standby(db: Db, logger: FastifyBaseLogger, everyMs: number, dedicated: boolean): Standby {
  let standingBy = false;
  let since = 0;
  let lastLookAt = 0;
  /** A `svc worker` says at its first look whether it leads; an embedded worker only when it stands by. */
  let told = !dedicated;
  const lead = dedicated ? db.leadership(DEDICATED_WORKERS) : null;
  const messages = dedicated
    ? {
        on: 'another svc worker leads on this database: this one stands by',
        off: 'this svc worker leads on this database: it answers the notifications',
      }
    : {
        on: 'a svc worker delivers on this database: the embedded worker stands by',
        off: 'no svc worker delivers on this database: the embedded worker delivers',
      };
  return {
    get standingBy() {
      return standingBy;
    },
    get since() {
      return since;
    },
    async look(atOnce) {
      if (!atOnce && Date.now() - lastLookAt < everyMs) return;
      lastLookAt = Date.now();
      const other = lead ? !(await lead.check()) : (await db.sessionsOf(DEDICATED_WORKERS)) > 0;
      if (other === standingBy && told) return;
      told = true;
      if (other !== standingBy) since = other ? Date.now() : 0;
      standingBy = other;
      logger.info(other ? messages.on : messages.off);
    },
    async close() {
      await lead?.close();
    },
  };
}

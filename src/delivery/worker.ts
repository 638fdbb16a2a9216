// The delivery worker, the same in `svc serve` (on the embedded database or a server) and in every
// `svc worker`: peers, no leader. Its state is four named parts:
//   - its assignment (assignment.ts): the partitions of the webhooks it owns, kept by a beat;
//   - its attempts in flight (in-flight.ts): its budget, and what each organization holds of it;
//   - its batch of outcomes (outcomes.ts): attempts that ended, waiting for the next exchange;
//   - its claim timing (claim-timing.ts): when the next claim is called for, and where to look.
// One loop of rounds. A round beats when a beat is due, gives back ended leases every few seconds,
// publishes what writers left in the outbox when that is due, then exchanges: writes the batch of outcomes and claims deliveries of the
// webhooks it owns for its free budget, in one statement (delivery_exchange in src/db/engine.sql).
// Each claimed delivery is attempted at once, with no transaction open (attempt.ts); nothing is
// claimed ahead, so a lease always stands for an attempt that was sent.
//
// Rounds come when something calls for one: a notification (deliveries queued, an event left in
// the outbox, a worker joining or leaving), an attempt that ended (after SVC_WEBHOOK_BATCH_MS, so
// the outcomes of attempts ending together share a statement), a retry falling due, a beat due, and
// at the latest every SVC_WEBHOOK_POLL_MS, which covers a notification lost with its connection.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { WebhookConfig } from '../config.js';
import type { Db, Queryable } from '../db/db.js';
import type { SecretBox } from '../security/secrets.js';
import { assignment } from './assignment.js';
import { attempter } from './attempt.js';
import { claimTiming } from './claim-timing.js';
import {
  type Claimed,
  type Exchanged,
  exchange,
  giveBack,
  partitionOf,
  releaseExpiredLeases,
} from './engine.js';
import { inFlight } from './in-flight.js';
import type { DeliveryMetrics } from './metrics.js';
import { countWritten, noticeAttempt, noticeTallies, type WebhookNotice } from './notices.js';
import { type Ended, outcomeBatch } from './outcomes.js';
import { publishEvents } from './publish.js';
import type { Sender } from './send.js';

/**
 * An event waits this long in the outbox before a worker publishes it: its writer publishes it
 * within milliseconds of its commit, and a worker racing it would take the publisher's lock from
 * the writers (whose answers wait for their publish) for nothing.
 */
export const LEFT_BEHIND_MS = 200;

/**
 * How often a worker gives back the leases that ended unrecorded and drops the booking snapshots
 * no delivery needs (delivery_housekeeping): a lease lasts a minute, and a worker that died is
 * handled by the beat within its own lease.
 */
const HOUSEKEEPING_MS = 5000;

export interface WorkerDeps {
  /** Notifications and the publisher. */
  db: Db;
  /** The engine's statements, on connections of their own. */
  engine: Queryable;
  logger: FastifyBaseLogger;
  config: WebhookConfig;
  secrets: SecretBox;
  sender: Sender;
  metrics?: DeliveryMetrics;
  /** The last migration this code knows (the worker's `build` in delivery_workers). */
  build: string;
  /** Told of each webhook deactivated, and of each one nearing it. */
  notify?: (notice: WebhookNotice) => void;
  /** The worker's clock, in ms (tests may move it). */
  now?: () => number;
}

export interface Worker {
  /** Look for work now (tests, and whoever just queued some). */
  wake(): void;
  /**
   * Hands its partitions back at once, stops claiming, lets attempts in flight finish for up to
   * `graceMs`, writes their outcomes, then gives back the leases of those still unfinished.
   */
  stop(graceMs: number): Promise<void>;
}

export async function startWorker(deps: WorkerDeps): Promise<Worker> {
  const { db, engine, config, logger, metrics } = deps;
  const now = deps.now ?? Date.now;
  const assigned = assignment(
    engine,
    { id: randomUUID(), host: hostname(), pid: process.pid, build: deps.build },
    { beatMs: config.pollMs, leaseMs: config.workerLeaseMs },
  );
  const running = inFlight(config.concurrency);
  const batch = outcomeBatch();
  const attempt = attempter(deps);
  const wakeup = bell();
  let stopping = false;
  let publishAt = 0;
  let housekeepingAt = 0;
  let gathering: NodeJS.Timeout | null = null;
  const claims = claimTiming(config);

  const unlisten = await Promise.all([
    // Deliveries queued: the notification names their partitions (none: look anyway).
    db.listen('svc_deliveries', (partitions) => {
      const named = partitions?.split(',').map(Number);
      if (named === undefined || named.some((p) => assigned.owns(p))) {
        claims.announced(named);
        wakeup.ring();
      }
    }),
    db.listen('svc_workers', () => {
      assigned.soon();
      wakeup.ring();
    }),
    // An event committed: looked for once it may have been left behind. One wake-up covers every
    // commit until then (at 200 events/s, one timer instead of 200 a second).
    db.listen('svc_outbox', () => {
      if (publishAt <= now() + LEFT_BEHIND_MS) return;
      publishAt = now() + LEFT_BEHIND_MS;
      setTimeout(wakeup.ring, LEFT_BEHIND_MS).unref();
    }),
  ]);

  const report = rateLimited(logger);

  /** An attempt ended: its outcome joins the batch, written after SVC_WEBHOOK_BATCH_MS. */
  function ended(claimed: Claimed, outcome: Ended) {
    batch.add(outcome);
    running.end(claimed);
    claims.roomFreed(partitionOf(claimed.webhook_id));
    if (config.batchMs === 0) return wakeup.ring();
    gathering ??= setTimeout(() => {
      gathering = null;
      wakeup.ring();
    }, config.batchMs);
  }

  function start(claimed: Claimed, leaseEndsAt: number) {
    const done = attempt(claimed).then(
      (a) => {
        noticeAttempt(logger, claimed, a);
        ended(claimed, { claimed, recorded: a.recorded, leaseEndsAt, class: a.class });
      },
      (error: unknown) => {
        // attempt() answers every failure itself; this is a bug, and the lease returns the delivery.
        report(error, 'webhook attempt broke; its lease will return the delivery to the queue');
        running.end(claimed);
      },
    );
    running.add(claimed, done);
  }

  /** One round; answers how long to wait for the next when nothing calls for one sooner. */
  async function round(): Promise<number> {
    if (assigned.beatInMs(now()) === 0) {
      const had = assigned.partitions.join();
      await assigned.beat(now());
      if (assigned.partitions.join() !== had) claims.roomFreed();
      metrics?.partitions.set(assigned.partitions.length);
    }
    if (now() >= housekeepingAt) {
      housekeepingAt = now() + HOUSEKEEPING_MS;
      await releaseExpiredLeases(engine);
    }
    if (now() >= publishAt) {
      publishAt = now() + config.pollMs;
      const published = await publishEvents(db, { wait: false, olderThanMs: LEFT_BEHIND_MS });
      if (published.busy) publishAt = now() + LEFT_BEHIND_MS;
    }
    const outcomes = batch.take(now());
    // With its budget full it claims nothing now: an attempt that ends calls for the next claim.
    const wanted = !stopping && claims.due(now());
    const walk = wanted ? claims.begin(now(), assigned.partitions, inFlightPartitions()) : [];
    const take = walk.length > 0 ? running.free() : 0;
    if (outcomes.length > 0 || take > 0) await exchangeNow(outcomes, take, walk);
    metrics?.inFlight.set(running.size);
    return Math.max(
      1,
      Math.min(claims.waitMs(now()), assigned.beatInMs(now()), publishAt - now(), batch.writeInMs(now())),
    );
  }

  /** The partitions of the webhooks with attempts in flight: room frees there. */
  function* inFlightPartitions() {
    for (const webhook of running.webhooks()) yield partitionOf(webhook);
  }

  async function exchangeNow(outcomes: Ended[], take: number, walk: readonly number[]) {
    const claimedAt = now();
    let result: Exchanged;
    try {
      result = await exchange(engine, outcomes, {
        worker: assigned.worker.id,
        leaseMs: config.leaseMs,
        partitions: walk,
        take,
        bound: config.concurrencyPerWebhook,
        budget: config.concurrency,
        busy: running.byOrganization(),
      });
    } catch (error) {
      // The database refused: claims wait for the poll, outcomes for their back-off.
      const lost = batch.failed(outcomes, now());
      report(error, 'webhook outcomes not written and nothing claimed; trying again');
      if (lost > 0) logger.warn({ deliveries: lost }, 'outcomes not written before their leases ended');
      return;
    }
    batch.written();
    if (take > 0) metrics?.claims.inc();
    const written = outcomes.filter((o) => result.written.has(o.claimed.id));
    countWritten(metrics, written);
    for (const o of written) {
      if (o.recorded.nextRetryInMs !== null) claims.retryAt(now() + o.recorded.nextRetryInMs);
    }
    if (take > 0) claims.end(now(), result.claimed.length, result.backlog);
    noticeTallies(logger, metrics, result.tallies, deps.notify);
    for (const claimed of result.claimed) start(claimed, claimedAt + config.leaseMs);
  }

  const loop = (async () => {
    while (!stopping) {
      let waitMs = config.pollMs;
      try {
        waitMs = await round();
      } catch (error) {
        report(error, 'webhook worker round failed');
      }
      if (!stopping) await wakeup.wait(waitMs);
    }
  })();

  return {
    wake: wakeup.ring,
    async stop(graceMs) {
      stopping = true;
      wakeup.ring();
      await loop;
      await Promise.all(unlisten.map((u) => u().catch(() => {})));
      await assigned
        .leave()
        .catch((error) => report(error, 'partitions not handed back; they free at the lease'));
      await running.settle(graceMs);
      if (gathering) clearTimeout(gathering);
      const left = batch.unwritten();
      if (left.length > 0) await exchangeNow(left, 0, []);
      const unfinished = running.ids();
      if (unfinished.length > 0) {
        await giveBack(engine, assigned.worker.id, unfinished, 'el proceso se detuvo').catch((error) =>
          report(error, 'in-flight deliveries not handed back; their leases will return them'),
        );
        logger.warn({ deliveries: unfinished.length }, 'in-flight deliveries handed back at shutdown');
      }
    },
  };
}

/** A wake-up the loop waits on: a ring before the wait ends it at once. */
function bell() {
  let rung = false;
  let wake: (() => void) | null = null;
  return {
    ring() {
      rung = true;
      wake?.();
    },
    wait(ms: number): Promise<void> {
      return new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          wake = null;
          rung = false;
          resolve();
        };
        const timer = setTimeout(done, ms);
        wake = done;
        if (rung) done();
      });
    },
  };
}

/** One line with its stack per 30 s at most for the worker's own failures: an outage must not flood the log. */
function rateLimited(logger: FastifyBaseLogger) {
  let last = 0;
  return (error: unknown, what: string) => {
    if (Date.now() - last < 30_000) return;
    last = Date.now();
    logger.error({ err: error }, what);
  };
}

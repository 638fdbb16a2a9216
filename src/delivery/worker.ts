// The delivery worker, the same in `svc serve` (on the embedded database or a server) and in every
// `svc worker`: peers, no leader. Its state is four named parts:
//   - its assignment (assignment.ts): the partitions of the webhooks it owns, kept by a beat;
//   - its local queue (local-queue.ts): the deliveries it claimed, queued per webhook, and the
//     attempts in flight, started within its budget, each webhook's bound and each organization's share;
//   - its batch of outcomes (outcomes.ts): attempts that ended, waiting for the next exchange;
//   - its claim timing (claim-timing.ts): when the next claim is called for, and where to look.
// One loop of rounds. A round beats when a beat is due, gives back ended leases every few seconds,
// publishes what writers left in the outbox when that is due, then exchanges: tells the database
// which leases it sends next (arms them) or let go, writes the batch of outcomes and claims
// deliveries of the webhooks it owns, ahead of its attempts, in one statement (delivery_exchange in
// src/db/engine.sql). An attempt starts as soon as its slot frees, with no transaction open
// (attempt.ts); a lease given back counts as an attempt only if it was armed.
//
// Rounds come when something calls for one: a notification (deliveries queued, an event left in
// the outbox, a worker joining or leaving), an attempt that ended, a retry falling due, a beat due,
// and at the latest every SVC_WEBHOOK_POLL_MS, which covers a notification lost with its
// connection. While armed deliveries wait to start, exchanges come at most every
// SVC_WEBHOOK_BATCH_MS: the worker is busy without the database meanwhile.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { WebhookConfig } from '../config.js';
import type { Db, Queryable } from '../db/db.js';
import type { Sender } from '../outbound/send.js';
import type { SecretBox } from '../security/secrets.js';
import { type Assignment, assignment } from './assignment.js';
import { attempter } from './attempt.js';
import { type ClaimTiming, claimTiming } from './claim-timing.js';
import {
  type Claimed,
  type Exchanged,
  exchange,
  giveBack,
  partitionOf,
  releaseExpiredLeases,
} from './engine.js';
import { HOLD, type LocalQueue, localQueue } from './local-queue.js';
import type { DeliveryMetrics } from './metrics.js';
import { countWritten, noticeAttempt, noticeTallies, type WebhookNotice } from './notices.js';
import { type Ended, LEASE_MARGIN_MS, outcomeBatch } from './outcomes.js';
import { publishEvents } from './publish.js';

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
   * `graceMs`, writing each outcome as it ends, then gives back the leases of those still unfinished.
   */
  stop(graceMs: number): Promise<void>;
}

export async function startWorker(deps: WorkerDeps): Promise<Worker> {
  const worker = new DeliveryWorker(deps);
  await worker.start();
  return { wake: worker.wakeup.ring, stop: (graceMs) => worker.stop(graceMs) };
}

/** The loop and its four parts (see the top of this file). */
class DeliveryWorker {
  readonly wakeup = bell();
  private readonly now: () => number;
  private readonly assigned: Assignment;
  private readonly held: LocalQueue;
  private readonly batch = outcomeBatch();
  private readonly claims: ClaimTiming;
  private readonly attempt: ReturnType<typeof attempter>;
  private readonly report: (error: unknown, what: string) => void;
  private stopping = false;
  /** Partitions it took since its last claim, and those it owned before. */
  private gained = new Set<number>();
  private owned = new Set<number>();
  private publishAt = 0;
  private housekeepingAt = 0;
  private exchangedAt = Number.NEGATIVE_INFINITY;
  private unlisten: (() => Promise<void>)[] = [];
  private loop: Promise<void> = Promise.resolve();

  constructor(private readonly deps: WorkerDeps) {
    const { config } = deps;
    this.now = deps.now ?? Date.now;
    this.assigned = assignment(
      deps.engine,
      { id: randomUUID(), host: hostname(), pid: process.pid, build: deps.build },
      { beatMs: config.pollMs, leaseMs: config.workerLeaseMs },
    );
    this.held = localQueue({
      budget: config.concurrency,
      bound: config.concurrencyPerWebhook,
      startWithinMs: config.timeoutMs + LEASE_MARGIN_MS,
    });
    this.claims = claimTiming(config);
    this.attempt = attempter(deps);
    this.report = rateLimited(deps.logger);
  }

  async start() {
    const { db } = this.deps;
    this.unlisten = await Promise.all([
      // Deliveries queued: the notification names their partitions (none: look anyway).
      db.listen('svc_deliveries', (partitions) => {
        const named = partitions?.split(',').map(Number);
        if (named === undefined || named.some((p) => this.assigned.owns(p))) {
          this.claims.announced(named);
          this.wakeup.ring();
        }
      }),
      db.listen('svc_workers', () => this.assigned.soon()),
      // An event committed: looked for once it may have been left behind. One wake-up covers every
      // commit until then (at 200 events/s, one timer instead of 200 a second).
      db.listen('svc_outbox', () => {
        if (this.publishAt <= this.now() + LEFT_BEHIND_MS) return;
        this.publishAt = this.now() + LEFT_BEHIND_MS;
        setTimeout(this.wakeup.ring, LEFT_BEHIND_MS).unref();
      }),
    ]);
    await this.assigned.start(
      () => {
        // Its partitions changed: what it holds of others' goes back, and it looks at its own anew.
        for (const p of this.assigned.partitions) if (!this.owned.has(p)) this.gained.add(p);
        this.owned = new Set(this.assigned.partitions);
        this.keepOwned();
        this.claims.roomFreed();
        this.deps.metrics?.partitions.set(this.assigned.partitions.length);
        this.wakeup.ring();
      },
      (error) => this.report(error, 'worker beat failed; trying again at the next'),
    );
    this.loop = this.run();
  }

  private async run() {
    while (!this.stopping) {
      let waitMs = this.deps.config.pollMs;
      try {
        waitMs = await this.round();
      } catch (error) {
        this.report(error, 'webhook worker round failed');
      }
      if (!this.stopping) await this.wakeup.wait(waitMs);
    }
  }

  /** Starts every held delivery that may start now. */
  private startReady() {
    const { held, batch, deps } = this;
    for (let next = held.take(this.now()); next !== null; next = held.take(this.now())) {
      const { claimed, leaseEndsAt } = next;
      void this.attempt(claimed).then(
        (a) => {
          noticeAttempt(deps.logger, claimed, a);
          batch.add({ claimed, recorded: a.recorded, leaseEndsAt, class: a.class });
          this.ended(claimed);
        },
        (error: unknown) => {
          // attempt() answers every failure itself; this is a bug, and the lease returns the delivery.
          this.report(error, 'webhook attempt broke; its lease will return the delivery to the queue');
          this.ended(claimed);
        },
      );
    }
  }

  private ended(claimed: Claimed) {
    this.held.end(claimed);
    // Room freed calls for a claim once the local queue is shorter than the budget: a claim walks
    // every webhook with deliveries due in its partitions, so fewer and larger claims cost less.
    if (this.held.queued < this.deps.config.concurrency) {
      this.claims.roomFreed(partitionOf(claimed.webhook_id));
    }
    this.startReady();
    this.wakeup.ring();
  }

  /** Lets go of what it holds of webhooks it no longer owns. */
  private keepOwned() {
    this.held.drop((c) => this.assigned.owns(partitionOf(c.webhook_id)));
  }

  /** One round; answers how long to wait for the next when nothing calls for one sooner. */
  private async round(): Promise<number> {
    const { deps, held, claims, batch } = this;
    const now = this.now;
    if (now() >= this.housekeepingAt) {
      this.housekeepingAt = now() + HOUSEKEEPING_MS;
      await releaseExpiredLeases(deps.engine);
    }
    if (now() >= this.publishAt) {
      this.publishAt = now() + deps.config.pollMs;
      const published = await publishEvents(deps.db, { wait: false, olderThanMs: LEFT_BEHIND_MS });
      if (published.busy) this.publishAt = now() + LEFT_BEHIND_MS;
    }
    // While armed deliveries wait to start, the worker is busy without the database: it exchanges
    // at most every SVC_WEBHOOK_BATCH_MS, so that outcomes and claims gather into one statement.
    const gap = held.armedWaiting > 0 && !this.stopping ? this.exchangedAt + deps.config.batchMs - now() : 0;
    if (gap > 0) return Math.max(1, Math.min(gap, this.publishAt - now()));
    const outcomes = batch.take(now());
    // Holding all it may, it claims nothing now: an attempt that ends calls for the next claim.
    // Partitions it just took are claimed from first and alone, up to its budget beyond what it
    // holds, their organizations' shares counted without what it holds of its own webhooks: theirs
    // (a dead or stopping worker's) must not wait behind its own backlog.
    const gained = this.stopping ? [] : this.assigned.partitions.filter((p) => this.gained.has(p));
    this.gained.clear();
    if (gained.length > 0) {
      await this.exchangeNow(outcomes, Math.max(held.room(), deps.config.concurrency), gained, new Map());
      return 1;
    }
    const wanted = !this.stopping && held.room() > 0 && claims.due(now());
    const walk = wanted ? claims.begin(now(), this.assigned.partitions, this.heldPartitions()) : [];
    await this.exchangeNow(outcomes, walk.length > 0 ? held.room() : 0, walk);
    deps.metrics?.inFlight.set(held.running);
    return Math.max(1, Math.min(claims.waitMs(now()), this.publishAt - now(), batch.writeInMs(now())));
  }

  /** The partitions of the webhooks it holds deliveries of: room frees there. */
  private *heldPartitions() {
    for (const webhook of this.held.webhooks()) yield partitionOf(webhook);
  }

  /**
   * One exchange (delivery_exchange): what it let go and arms, the outcomes, then a claim of `take`,
   * each organization's fair share less what it holds of it (`busy`).
   */
  private async exchangeNow(
    outcomes: Ended[],
    take: number,
    walk: readonly number[],
    busy = this.held.byOrganization(),
  ) {
    const { deps, held, batch } = this;
    const { config } = deps;
    const released = held.released();
    const arming = held.toArm();
    const nothing = [outcomes, released, arming.ids, arming.shared].every((list) => list.length === 0);
    if (nothing && take === 0) return;
    const claimedAt = this.now();
    let result: Exchanged;
    try {
      result = await exchange(deps.engine, outcomes, {
        worker: this.assigned.worker.id,
        leaseMs: config.leaseMs,
        armed: arming.ids,
        released,
        partitions: walk,
        take,
        hold: HOLD * config.concurrencyPerWebhook,
        bound: config.concurrencyPerWebhook,
        answering: arming.answering,
        shared: arming.shared,
        budget: HOLD * config.concurrency,
        busy,
      });
    } catch (error) {
      // The database refused: claims wait for the poll, the rest for the write's back-off.
      held.untold(released);
      const lost = batch.failed(outcomes, this.now());
      this.report(error, 'webhook outcomes not written and nothing claimed; trying again');
      if (lost > 0) deps.logger.warn({ deliveries: lost }, 'outcomes not written before their leases ended');
      return;
    }
    batch.written();
    this.exchangedAt = this.now();
    held.armed(arming.ids.filter((id) => !result.unarmed.has(id)));
    if (result.unarmed.size > 0) {
      // Their partition changed hands before its beat told this worker: let go, and beat now.
      held.drop((c) => !result.unarmed.has(c.id));
      this.assigned.soon();
    }
    // A previous owner's attempts ended: the next round arms what waited for their slots.
    if (held.othersInFlight(result.shared)) this.wakeup.ring();
    this.recorded(outcomes, result, take);
    for (const claimed of result.claimed) held.hold(claimed, claimedAt + config.leaseMs);
    // A beat during the exchange may have moved partitions it claimed in.
    if (result.claimed.length > 0) this.keepOwned();
    this.startReady();
  }

  /** What an exchange wrote and found: metrics, logs, retries to wake for, webhooks gone inactive. */
  private recorded(outcomes: Ended[], result: Exchanged, take: number) {
    const { deps, claims, now } = this;
    if (take > 0) deps.metrics?.claims.inc();
    const written = outcomes.filter((o) => result.written.has(o.claimed.id));
    countWritten(deps.metrics, written);
    for (const o of written) {
      if (o.recorded.nextRetryInMs !== null) claims.retryAt(now() + o.recorded.nextRetryInMs);
    }
    if (take > 0) claims.end(now(), result.claimed.length, result.backlog);
    noticeTallies(deps.logger, deps.metrics, result.tallies, deps.notify);
    const inactive = new Set(result.tallies.filter((t) => !t.active).map((t) => t.webhookId));
    if (inactive.size > 0) this.held.drop((c) => !inactive.has(c.webhook_id));
  }

  async stop(graceMs: number) {
    const { deps, held } = this;
    this.stopping = true;
    this.wakeup.ring();
    await this.loop;
    // What it holds unsent goes back now, uncounted, before its partitions do: their next owners
    // find those deliveries due at once, in their order. Nothing more starts.
    held.drop(() => false);
    await this.exchangeNow(this.batch.unwritten(), 0, []);
    await Promise.all(this.unlisten.map((u) => u().catch(() => {})));
    await this.assigned
      .leave()
      .catch((error) => this.report(error, 'partitions not handed back; they free at the lease'));
    // Its attempts in flight finish within the grace period, each outcome written as it comes: the
    // slot it frees is the webhook's next owner's at once, not once the slowest attempt has ended.
    const until = performance.now() + graceMs;
    while (held.running > 0 && performance.now() < until) {
      await this.wakeup.wait(until - performance.now());
      await this.exchangeNow(this.batch.unwritten(), 0, []);
    }
    await this.exchangeNow(this.batch.unwritten(), 0, []);
    const unfinished = held.runningIds();
    if (unfinished.length === 0) return;
    // Cut first: a receiver must not still hold them when the webhook's next owner takes the slots
    // they free. Their outcomes are not written: the leases go back, counted.
    await deps.sender.close().catch(() => {});
    await giveBack(deps.engine, this.assigned.worker.id, unfinished, 'el proceso se detuvo').catch((error) =>
      this.report(error, 'in-flight deliveries not handed back; their leases will return them'),
    );
    deps.logger.warn({ deliveries: unfinished.length }, 'in-flight deliveries handed back at shutdown');
  }
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

// The delivery worker: publishes committed events, claims due deliveries in batches, makes each
// attempt (attempt.ts) with no transaction open, and writes the outcomes in batches. Any number of workers
// (processes, or one inside `svc serve`) share one database; the claim decides who attempts what.
//
// One loop does the database work, in rounds: publish what the outbox holds, write the outcomes of
// the attempts that ended (gathered for SVC_WEBHOOK_BATCH_MS; outcomes.ts keeps them and tries
// again while the database refuses them), and, side by side with that write, claim deliveries. So
// a busy worker spends two short statements on a whole batch of deliveries, not two transactions
// on each. While it works through a backlog (every webhook it sends to has its bound queued behind
// its attempts), its rounds come at most every SVC_WEBHOOK_BACKLOG_ROUND_MS.
//
// The worker claims ahead: for each webhook it alone holds, it holds up to four times its bound on
// attempts in flight (eight times for a receiver that answers fast; twice its own concurrency in
// all, four times while all its receivers answer within 50 ms), the rest waiting in a local queue,
// so an attempt that ends is followed at once by the next one of its webhook instead of after a
// round trip to the database. A webhook another worker holds is left to it while it keeps up; once
// its due deliveries wait (receivers slower than its attempts in flight), it is shared within its
// bound: a sharer holds nothing ahead, and the worker holding most of it keeps its queue with its
// attempts in flight capped (the claim's `in_flight_cap`, kept in webhook-slots.ts). The claim counts every case, so the bound on a webhook's attempts in flight
// stays global.
//
// It wakes on NOTIFY (an event committed, a delivery queued, within milliseconds), when its
// attempts end, when the earliest retry falls due, and at the latest every SVC_WEBHOOK_POLL_MS (up
// to five times that while it is idle: IDLE_POLL_FACTOR), so a lost notification costs at most
// that. When nothing it could claim is due (every due delivery waits for a slot of its webhook), it
// sleeps: it does not ask again until one of those wakes it.
// Inside `svc serve`, it stands by while a `svc worker` is at work; of several `svc worker`
// processes, all but the one that leads stand by (standby.ts).
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { WebhookConfig } from '../config.js';
import type { Db, Queryable } from '../db/db.js';
import type { SecretBox } from '../security/secrets.js';
import { attempter } from './attempt.js';
import type { DeliveryMetrics } from './metrics.js';
import { LEASE_MARGIN_MS, outcomes } from './outcomes.js';
import { publishEvents, publishingForWriters } from './publish.js';
import type { Sender } from './send.js';
import { standby } from './standby.js';
import {
  type Claimed,
  dropFinishedPayloads,
  releaseExpiredLeases,
  releaseLeases,
  returnUnsent,
} from './store.js';
import { webhookSlots } from './webhook-slots.js';

const PUBLISH_RETRY_MS = 20;
/**
 * A claim that left a webhook to another claim running at that moment, in a round that ended
 * deliveries, looks again after this.
 */
const SKIPPED_RETRY_MS = 10;
/** A worker holds up to this many times its concurrency: attempts in flight and a local queue. */
export const HOLD = 2;
/**
 * A worker all of whose receivers answered their last attempt in under QUICK_ANSWER_MS holds up to
 * this many times its concurrency. With HOLD, a drain's rounds came about 10 ms apart at 3,000
 * deliveries/s (the queue behind 16 attempts ran low, so the rounds were not spaced) and wrote about
 * 30 outcomes each; with four times they are spaced (backlogRoundMs) and write about 100:
 * PostgreSQL's CPU per delivery 0.08 to 0.10 ms against 0.11 to 0.13, the drain 3,957 against 3,355
 * deliveries/s (medians of five alternated runs). Not for slower receivers: what a worker holds of a
 * webhook counts against the webhook's bound for every other worker, so deliveries held behind
 * attempts that take long are better left for a worker with free slots to share (receivers answering
 * in 100 ms: a second process added 466 and 498 deliveries/s where it had added 543 to 583).
 */
export const FAST_HOLD = 4;
/** See FAST_HOLD: receivers that answer within this many ms (on the same network, say). */
export const QUICK_ANSWER_MS = 50;
/**
 * Of one webhook, a worker holds up to this many times the webhook's bound on attempts in flight.
 * Twice left the webhook's queue a few milliseconds deep at a drain's pace (4 webhooks answering at
 * once), shorter than a round of the loop at times, and its attempts waited for the claim: 88% of
 * graphile-worker's drain, against 92 to 103% with four.
 */
export const HOLD_PER_WEBHOOK = 4;
/**
 * Of a webhook whose receiver answered its last attempt in under FAST_ANSWER_MS (webhook-slots.ts),
 * a worker holds up to this many times its bound: enough for the rounds of a backlog to be spaced
 * (backlogRoundMs) with its queue still deep when the round comes. A slow or hanging receiver keeps
 * HOLD_PER_WEBHOOK: its queue is deep enough at its pace, and what waits behind it reads
 * `delivering` meanwhile.
 */
export const FAST_HOLD_PER_WEBHOOK = 8;
/**
 * An idle worker (nothing to claim, nothing due later, nothing in hand) polls less and less often,
 * each poll twice as long after the last, up to this many times SVC_WEBHOOK_POLL_MS (and never
 * past its next housekeeping): a notification, or anything found, brings it back to the poll set.
 * Work is announced by notifications, and a connection that listens again after it was lost wakes
 * its worker; the poll only covers what nothing announces: events a writer that died left in the
 * outbox, leases ended by the housekeeping. Two idle `svc workers` made about two statements a
 * second each, as many as the deliveries of a quiet platform.
 */
const IDLE_POLL_FACTOR = 5;

/**
 * A worker whose writers are elsewhere publishes an event only once it has waited this long in the
 * outbox: its writer publishes it within milliseconds of its commit, and a worker that raced it
 * took the publisher's lock from the writers (whose answers wait for their publish) for nothing.
 */
export const LEFT_BEHIND_MS = 200;

export interface WorkerDeps {
  /** Notifications and the publisher (shared with the writers of this process). */
  db: Db;
  /** The engine's own statements: claims, outcomes, leases. */
  engine: Queryable;
  logger: FastifyBaseLogger;
  config: WebhookConfig;
  secrets: SecretBox;
  sender: Sender;
  metrics?: DeliveryMetrics;
  /**
   * The platform's writes are made in other processes, which publish their own events (`svc
   * worker`): this worker looks at the outbox only on its poll, for what a writer left behind
   * (written LEFT_BEHIND_MS ago or more: a writer that stopped between its commit and its publish).
   */
  writersElsewhere?: boolean;
  /**
   * Whether the writers beside this worker publish their own events now (it then leaves the outbox
   * to them and only polls it). By default, this process's writers on `db` (publishingForWriters);
   * a worker on a thread of its own is told by the thread that runs them.
   */
  writersPublish?: () => boolean;
}

export interface Worker {
  /** Look for work now (tests, and whoever just queued some). */
  wake(): void;
  /**
   * Stops claiming, lets attempts in flight finish for up to `graceMs`, then hands back the
   * deliveries still unrecorded so another worker takes them at once.
   */
  stop(graceMs: number): Promise<void>;
}

export async function startWorker(deps: WorkerDeps): Promise<Worker> {
  const { db, engine, config, logger, metrics } = deps;
  const writersPublish = deps.writersPublish ?? (() => publishingForWriters(db));
  /** Who this worker is, for the claim: the webhooks whose deliveries it holds stay its own. */
  const owner = randomUUID();
  /** Attempts under way. */
  const running = new Map<string, { claimed: Claimed; done: Promise<void> }>();
  /** Deliveries claimed ahead, by webhook, in the order they are to be attempted. */
  const held = new Map<string, { claimed: Claimed; leaseEndsAt: number }[]>();
  /** Attempts under way by webhook (kept with `running`), the caps claims gave, answer times. */
  const slots = webhookSlots(config.concurrencyPerWebhook);
  const { roomAt } = slots;
  const forgetIfIdle = (webhook: string) => {
    if (!held.has(webhook)) slots.forget(webhook);
  };
  /**
   * Held deliveries that take room in this worker's hold. Those queued behind a webhook at its
   * bound here do not: a hanging receiver's queue would otherwise fill the hold, and every other
   * webhook would wait for its time-outs. They stay bounded: only concurrency / bound webhooks can
   * be at their bound at once, each holding at most FAST_HOLD_PER_WEBHOOK times the bound.
   */
  const heldCount = () => {
    let n = 0;
    for (const [webhook, queue] of held) if (roomAt(webhook) > 0) n += queue.length;
    return n;
  };
  /**
   * Deliveries waited in the local queue for a slot of this worker, not of their webhook: its own
   * bound is what limits it (receivers slower than its attempts in flight). It then claims only for
   * the slots that free up (deliveries held for a webhook at its bound do not take one), next to
   * nothing ahead, so the webhooks it would hold without sending to them stay open to other workers; it
   * claims ahead again once a claim found less than it asked for with a slot free.
   */
  let saturated = false;
  /**
   * What a saturated worker still holds ahead for its own slots: enough to start the next attempt
   * while the claim that replaces it is on its way (without it, each slot stood idle for a round
   * trip: 290 instead of 310 deliveries/s to receivers answering in 100 ms).
   */
  const spare = Math.ceil(config.concurrency / 16);
  /** Claimed ahead but not attempted in time: given back in the next round. */
  const unsent: Claimed[] = [];
  let stopping = false;
  let signal: (() => void) | null = null;
  let pending = false;
  /** A notification (work committed) arrived since the last round: it is never deferred. */
  let notified = false;
  /** Rounds in a row that found the worker idle (IDLE_POLL_FACTOR). */
  let idleRounds = 0;
  const wake = () => {
    pending = true;
    signal?.();
  };
  const wakeForWork = () => {
    notified = true;
    idleRounds = 0;
    wake();
  };
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (pending) return resolve();
      const timer = setTimeout(resolve, ms);
      signal = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      signal = null;
      pending = false;
    });
  /**
   * Every webhook this worker sends to has at least its bound queued behind its attempts: a round
   * now would only top up queues that are deep already.
   */
  const deep = () => {
    for (const webhook of slots.sending()) {
      if ((held.get(webhook)?.length ?? 0) < config.concurrencyPerWebhook) return false;
    }
    return running.size > 0;
  };
  /**
   * While deep, the next round waits until then: SVC_WEBHOOK_BACKLOG_ROUND_MS after the last one
   * began, so the outcomes that ended meanwhile are written and their slots claimed again in one
   * statement. A round's fixed cost (its executor state, the per-webhook counts, the commit) is most
   * of the database's work at a drain's pace: rounds of about 20 deliveries cost PostgreSQL 0.29 ms
   * per delivery, rounds of about 70 cost 0.16 ms.
   */
  let deferredUntil = 0;
  // Ended attempts are gathered for batchMs before the loop writes them, or until the deferred
  // round while the queues stay deep.
  let gathering: NodeJS.Timeout | null = null;
  const gather = () => {
    const deferredFor = deferredUntil - Date.now();
    if (deferredFor > 0 && !deep()) {
      deferredUntil = 0;
      if (gathering) clearTimeout(gathering);
      gathering = null;
      return wake();
    }
    if (config.batchMs === 0 && deferredFor <= 0) return wake();
    gathering ??= setTimeout(
      () => {
        gathering = null;
        wake();
      },
      Math.max(config.batchMs, deferredFor),
    );
  };
  /**
   * The wait after a round (`waitMs`, as the round found it), put off while the queues are deep
   * until backlogRoundMs after the round began: the wakes of attempts that ended during the round
   * are dropped (the deferred round writes them), notifications are not.
   */
  function spaced(roundStartedAt: number, waitMs: number): number {
    if (config.backlogRoundMs === 0 || !deep()) return waitMs;
    deferredUntil = roundStartedAt + config.backlogRoundMs;
    if (gathering) clearTimeout(gathering);
    gathering = null;
    pending = notified || unsent.length > 0;
    if (toWrite.count > 0) gather();
    return Math.max(waitMs, deferredUntil - Date.now(), 1);
  }

  // The outbox is looked at when a commit announced an event (unless the writers of this process,
  // or of others, publish their own), and on every poll besides.
  let outboxDirty = true;
  const unlisten = await Promise.all([
    ...(deps.writersElsewhere
      ? []
      : [
          db.listen('svc_outbox', () => {
            if (writersPublish()) return;
            outboxDirty = true;
            wakeForWork();
          }),
        ]),
    db.listen('svc_deliveries', wakeForWork),
  ]);

  let lastError = 0;
  const report = (error: unknown, what: string) => {
    // One line with its stack per 30 s at most: an outage must not flood the log.
    if (Date.now() - lastError < 30_000) return;
    lastError = Date.now();
    logger.error({ err: error }, what);
  };

  const attempt = attempter({ ...deps, report });
  /** Attempts that ended, their outcomes not yet written (outcomes.ts). */
  const toWrite = outcomes({ engine, logger, metrics, report });
  /** Gives back deliveries claimed ahead and never attempted; on failure their leases return them. */
  const giveBack = (claimed: Claimed[]) =>
    returnUnsent(engine, claimed).catch((error) =>
      report(error, 'deliveries claimed ahead not given back; their leases will return them'),
    );

  function start(claimed: Claimed, leaseEndsAt: number) {
    const done = attempt(claimed)
      .then((recorded) => {
        if (recorded.counts) slots.answered(claimed.webhook_id, recorded.durationMs);
        toWrite.add({ claimed, recorded, leaseEndsAt });
      })
      .catch((error) => report(error, 'webhook attempt failed; the lease will return it to the queue'))
      .finally(() => {
        running.delete(claimed.id);
        slots.ended(claimed.webhook_id);
        pump(claimed.webhook_id);
        forgetIfIdle(claimed.webhook_id);
        gather();
      });
    running.set(claimed.id, { claimed, done });
    slots.started(claimed.webhook_id);
  }

  /**
   * Starts held deliveries while slots are free: first the webhook whose attempt just ended, then
   * the others in the order they were first held. An attempt starts only with time left in its
   * lease for a whole attempt; a delivery held longer than that is given back.
   */
  function pump(first?: string) {
    if (stopping) return;
    const order = first && held.has(first) ? [first, ...held.keys()] : held.keys();
    for (const webhook of order) {
      const queue = held.get(webhook);
      if (!queue) continue;
      while (queue.length > 0 && running.size < config.concurrency) {
        if (roomAt(webhook) === 0) break;
        const next = queue.shift() as { claimed: Claimed; leaseEndsAt: number };
        if (next.leaseEndsAt - Date.now() < config.timeoutMs + LEASE_MARGIN_MS) unsent.push(next.claimed);
        else start(next.claimed, next.leaseEndsAt);
      }
      if (queue.length === 0) {
        held.delete(webhook);
        forgetIfIdle(webhook);
      }
      if (running.size >= config.concurrency) break;
    }
    if (running.size >= config.concurrency && waitingForSlot() > 0) saturated = true;
    if (unsent.length > 0) wake();
  }

  /** Held deliveries that could start now but for this worker's own bound (their webhook has room). */
  function waitingForSlot(): number {
    let n = 0;
    for (const [webhook, queue] of held) n += Math.min(queue.length, roomAt(webhook));
    return n;
  }

  const housekeepingEveryMs = Math.min(config.leaseMs / 2, 5000);
  let lastHousekeeping = 0;

  /**
   * Whether another process delivers (standby.ts): inside `svc serve`, a `svc worker`; in a `svc
   * worker`, another one that leads.
   */
  const watch = standby(db, logger, config.pollMs, deps.writersElsewhere ?? false);
  /** When a claim standing by last found nothing to share (none left to a claim beside it). */
  let standbyFoundNothingAt = 0;
  /**
   * Standing by, how long after a claim that found nothing the next one comes at the earliest: what
   * it could take must wait SVC_WEBHOOK_SHARE_AFTER_MS first, and a long wait set there still
   * looks every SVC_WEBHOOK_POLL_MS for what had waited already.
   */
  const standbyGapMs = Math.min(config.shareAfterMs, config.pollMs);
  let lastPublish = 0;

  /**
   * When the last claim that took nothing, and the last publish that found nothing, ended: a
   * notification does not start another one until SVC_WEBHOOK_IDLE_GAP_MS later, else a worker
   * whose webhooks another worker holds (or whose writers publish themselves) would ask again at
   * every event committed, for nothing.
   */
  let fruitlessClaimAt = 0;
  let fruitlessPublishAt = 0;
  /** How long a round waits when nothing sooner calls for it. */
  const pollWait = () =>
    idleRounds === 0
      ? config.pollMs
      : Math.max(
          config.pollMs,
          Math.min(
            config.pollMs * 2 ** idleRounds,
            IDLE_POLL_FACTOR * config.pollMs,
            lastHousekeeping + housekeepingEveryMs - Date.now(),
          ),
        );

  async function round(): Promise<number> {
    const startedAt = Date.now();
    notified = false;
    deferredUntil = 0;
    const pollMs = pollWait();
    let waitMs = pollMs;
    const publishIn = fruitlessPublishAt + config.idleGapMs - Date.now();
    if (outboxDirty && publishIn > 0) waitMs = publishIn;
    else if (outboxDirty || Date.now() - lastPublish >= config.pollMs) {
      outboxDirty = false;
      lastPublish = Date.now();
      // Another publisher at work will have published what it saw; what committed after it is
      // looked for again shortly rather than queueing behind its lock.
      const published = await publishEvents(db, {
        wait: false,
        ...(deps.writersElsewhere ? { olderThanMs: LEFT_BEHIND_MS } : {}),
      });
      fruitlessPublishAt = published.events === 0 ? Date.now() : 0;
      if (published.events > 0) idleRounds = 0;
      if (published.busy) {
        outboxDirty = true;
        waitMs = PUBLISH_RETRY_MS;
      }
    }
    const housekeeping = Date.now() - lastHousekeeping >= housekeepingEveryMs;
    await watch
      .look(housekeeping)
      .catch((error) =>
        report(error, 'could not tell whether another worker delivers; this one carries on as it was'),
      );
    const standingBy = watch.standingBy;
    if (housekeeping) {
      lastHousekeeping = Date.now();
      await releaseExpiredLeases(engine);
      await dropFinishedPayloads(engine);
    }
    const writeIn = toWrite.writeInMs();
    const batch = toWrite.take();
    if (writeIn > 0) waitMs = Math.min(waitMs, writeIn);
    // The worker holds up to HOLD times what it may send (FAST_HOLD while all its receivers answer
    // quickly; HOLD_PER_WEBHOOK times, of one webhook): attempts in flight and the rest queued
    // behind them.
    // The deliveries of the batch being written are no longer held: the claim counts them so, here
    // and in the per-webhook bound.
    // A round that writes outcomes claims at once (their slots are free now); one woken only by a
    // notification waits out the gap after a claim that took nothing. Standing by, the gap also
    // follows the moment it began to: the worker that delivers, starting beside it (after a deploy
    // or an outage), claims a backlog's webhooks first. Taking at once, a worker standing by held
    // its share of every webhook whose deliveries had waited (a backlog: all of them) before the
    // leader had claimed, and kept them with nothing queued ahead until its attempts ended (two `svc
    // workers` on a drain of 32,000: 2 of 4 webhooks held so for the first 2.2 s, the queue going
    // down at 500 deliveries/s where it then went at 1,100).
    const claimIn =
      batch.length > 0
        ? 0
        : standingBy
          ? Math.max(standbyFoundNothingAt, watch.since) + standbyGapMs - Date.now()
          : fruitlessClaimAt + config.idleGapMs - Date.now();
    if (claimIn > 0) waitMs = Math.min(waitMs, claimIn);
    const ahead =
      (slots.allAnsweredWithin(held.keys(), QUICK_ANSWER_MS) ? FAST_HOLD : HOLD) * config.concurrency -
      running.size -
      heldCount() -
      toWrite.count;
    const free =
      stopping || claimIn > 0
        ? 0
        : saturated
          ? Math.min(ahead, config.concurrency + spare - running.size - waitingForSlot() - toWrite.count)
          : ahead;
    const claimSentAt = Date.now();
    if (free > 0) metrics?.claims.inc();
    // Standing by, no webhook of its own: only shares (claim_slots gives `bound` in all of those).
    // Saturated, nothing held ahead of a webhook beyond its bound: a webhook other workers hold
    // some of is shared, as its holder is not claiming ahead (claim_slots).
    const hold = (factor: number) =>
      standingBy ? 0 : saturated ? config.concurrencyPerWebhook : factor * config.concurrencyPerWebhook;
    const request = {
      take: free,
      perWebhook: hold(HOLD_PER_WEBHOOK),
      fast: slots.fast(held.keys()),
      fastPerWebhook: hold(FAST_HOLD_PER_WEBHOOK),
      inFlightPerWebhook: config.concurrencyPerWebhook,
      shareAfterMs: config.shareAfterMs,
      leaseToken: randomUUID(),
      leaseMs: config.leaseMs,
      owner,
    };
    const [claim] = await Promise.all([toWrite.exchange(batch, request), giveBack(unsent.splice(0))]);
    if (toWrite.count > 0) waitMs = Math.min(waitMs, Math.max(toWrite.writeInMs(), 1));
    if (!claim) {
      if (batch.length > 0) idleRounds = 0;
      return waitMs;
    }
    // Nothing taken while deliveries were due: they wait for slots (another worker's webhooks, or
    // this worker's bounds), and the next event committed will not change that. Unless a webhook
    // was left to a claim running beside this one: that claim may have left it too (below), and a
    // gap here kept both workers away from it for the whole gap (with two workers at 200 events/s,
    // a stall of 40 to 60 ms whenever they claimed at the same moment).
    fruitlessClaimAt = claim.claimed.length === 0 && claim.dueLeft && !claim.skipped ? Date.now() : 0;
    if (standingBy) standbyFoundNothingAt = claim.claimed.length === 0 && !claim.skipped ? Date.now() : 0;
    const leaseEndsAt = claimSentAt + config.leaseMs;
    for (const claimed of claim.claimed) {
      slots.capped(claimed.webhook_id, claimed.in_flight_cap);
      const queue = held.get(claimed.webhook_id);
      if (queue) queue.push({ claimed, leaseEndsAt });
      else held.set(claimed.webhook_id, [{ claimed, leaseEndsAt }]);
    }
    pump();
    // Less than asked for, and a slot still free: nothing waits for this worker's slots any more.
    if (claim.claimed.length < free && running.size < config.concurrency) saturated = false;
    if (claim.claimed.length === free) return spaced(startedAt, 0);
    const retryIn = toWrite.takeRetryDue() - Date.now();
    const idle =
      claim.claimed.length === 0 &&
      !claim.dueLeft &&
      claim.nextDueMs === null &&
      !claim.skipped &&
      running.size === 0 &&
      held.size === 0 &&
      toWrite.count === 0 &&
      unsent.length === 0 &&
      retryIn === Number.POSITIVE_INFINITY &&
      !outboxDirty;
    idleRounds = idle ? idleRounds + 1 : 0;
    // A webhook left to a claim running beside this one may have been left by that claim too, when
    // it found there deliveries this round was ending: only then is it worth looking again soon.
    // Standing by, the webhooks left were most likely being claimed by the worker that holds them
    // (its claims come at each attempt that ends): looked at again soon, or the share is never had.
    // With no attempt under way nothing else wakes this worker soon: a webhook left to a claim of
    // a worker standing by (which takes nothing fresh) would otherwise wait for the next poll, up
    // to 5 s for an idle worker, and be taken by the worker standing by once it had waited.
    if (claim.skipped && (batch.length > 0 || standingBy || running.size === 0))
      waitMs = Math.min(waitMs, SKIPPED_RETRY_MS);
    return spaced(startedAt, Math.min(waitMs, Math.max(Math.min(claim.nextDueMs ?? pollMs, retryIn), 1)));
  }

  const loop = (async () => {
    while (!stopping) {
      let waitMs = config.pollMs;
      try {
        waitMs = await round();
      } catch (error) {
        report(error, 'webhook worker round failed');
      }
      if (!stopping && waitMs > 0) await sleep(waitMs);
    }
  })();

  return {
    wake,
    async stop(graceMs) {
      stopping = true;
      wake();
      await loop;
      // Another worker takes the lead while this one finishes its attempts.
      await watch.close().catch(() => {});
      await Promise.all(unlisten.map((u) => u().catch(() => {})));
      const all = Promise.all([...running.values()].map((f) => f.done));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      if (gathering) clearTimeout(gathering);
      await toWrite.flush();
      const ahead = [...held.values()].flat().map((h) => h.claimed);
      held.clear();
      await giveBack(ahead.concat(unsent.splice(0)));
      const left = [...running.values()]
        .map((f): Pick<Claimed, 'id' | 'lease_token'> => f.claimed)
        .concat(toWrite.unwritten());
      if (left.length > 0) {
        await releaseLeases(engine, left).catch((error) =>
          report(error, 'in-flight deliveries not released'),
        );
        logger.warn({ deliveries: left.length }, 'in-flight deliveries handed back at shutdown');
      }
    },
  };
}

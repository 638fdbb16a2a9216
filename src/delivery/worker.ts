// The delivery worker: publishes committed events, claims due deliveries, makes each attempt with
// no transaction open, and records the outcome. Any number of workers (processes, or one inside
// `svc serve`) share one database; the claim decides who attempts what.
//
// It wakes on NOTIFY (an event committed, a delivery queued, within milliseconds), when one of its
// attempts ends, when the earliest retry falls due, and at the latest every POLL_MS, so a lost
// notification costs at most that.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { WebhookConfig } from '../config.js';
import type { Db } from '../db/db.js';
import type { SecretBox } from '../security/secrets.js';
import { deliveryBody } from './body.js';
import type { DeliveryMetrics } from './metrics.js';
import { MAX_ATTEMPTS, outcomeOf } from './policy.js';
import { publishEvents } from './publish.js';
import type { AttemptResult, Sender } from './send.js';
import { signatureHeader } from './signing.js';
import {
  type AttemptContext,
  type Claimed,
  claimDeliveries,
  dropFinishedPayloads,
  msUntilNextDue,
  type Recorded,
  recordOutcome,
  releaseExpiredLeases,
  releaseLeases,
} from './store.js';

export const POLL_MS = 1000;
const PUBLISH_RETRY_MS = 20;
export const USER_AGENT = 'SVC-Webhooks/1';

export interface WorkerDeps {
  db: Db;
  logger: FastifyBaseLogger;
  config: WebhookConfig;
  secrets: SecretBox;
  sender: Sender;
  metrics?: DeliveryMetrics;
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

/** Why an attempt is not made at all, or null when it is. */
function notSendable(ctx: AttemptContext): string | null {
  if (!ctx.webhooks_enabled) return 'no enviado: los webhooks no están habilitados para la organización';
  if (!ctx.integration_active) return 'no enviado: la integración está desactivada o revocada';
  // A test is an explicit request: it is delivered to a paused webhook too.
  if (!ctx.webhook_active && ctx.event_type !== 'webhook.test') return 'no enviado: el webhook está inactivo';
  return null;
}

export async function startWorker(deps: WorkerDeps): Promise<Worker> {
  const { db, config, logger, metrics } = deps;
  const inFlight = new Map<string, { claimed: Claimed; done: Promise<void> }>();
  let stopping = false;
  let signal: (() => void) | null = null;
  let pending = false;
  const wake = () => {
    pending = true;
    signal?.();
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

  // The outbox is looked at when a commit announced an event, and on every poll besides.
  let outboxDirty = true;
  const unlisten = await Promise.all([
    db.listen('svc_outbox', () => {
      outboxDirty = true;
      wake();
    }),
    db.listen('svc_deliveries', wake),
  ]);

  let lastError = 0;
  const report = (error: unknown, what: string) => {
    // One line with its stack per 30 s at most: an outage must not flood the log.
    if (Date.now() - lastError < 30_000) return;
    lastError = Date.now();
    logger.error({ err: error }, what);
  };

  async function attempt(claimed: Claimed): Promise<void> {
    const started = performance.now();
    let recorded: Recorded;
    try {
      const refusal = notSendable(claimed);
      if (refusal) {
        recorded = {
          status: 'dead',
          maxAttempts: MAX_ATTEMPTS,
          nextRetryInMs: null,
          httpStatus: null,
          error: refusal,
          durationMs: 0,
          counts: false,
        };
      } else {
        if (claimed.attempt === 1)
          metrics?.lag.observe((Date.now() - claimed.event_created_at.getTime()) / 1000);
        const result = await send(claimed);
        const outcome = outcomeOf(claimed.attempt, result.status, config.retryGapsMs);
        recorded = {
          status: outcome.status,
          maxAttempts: outcome.maxAttempts,
          nextRetryInMs: outcome.status === 'failed' ? outcome.retryInMs : null,
          httpStatus: result.status,
          error: result.error,
          durationMs: result.durationMs,
          counts: true,
        };
      }
    } catch (error) {
      // Our own failure (database, a secret that does not open): retried like a failed attempt.
      report(error, 'webhook attempt failed inside the service');
      const outcome = outcomeOf(claimed.attempt, null, config.retryGapsMs);
      recorded = {
        status: outcome.status,
        maxAttempts: outcome.maxAttempts,
        nextRetryInMs: outcome.status === 'failed' ? outcome.retryInMs : null,
        httpStatus: null,
        error: 'error interno del servicio al preparar el envío',
        durationMs: Math.round(performance.now() - started),
        counts: true,
      };
    }
    const written = await recordOutcome(db, claimed, recorded);
    metrics?.attempts.inc({ outcome: recorded.counts ? recorded.status : 'not_sent' });
    if (written?.disabled) {
      metrics?.disabled.inc();
      logger.warn({ webhook: claimed.webhook_id }, 'webhook deactivated after 100 consecutive failures');
    }
  }

  function send(claimed: Claimed): Promise<AttemptResult> {
    const body = deliveryBody(claimed.event_id, claimed);
    const timestamp = Math.floor(Date.now() / 1000);
    const secrets = [deps.secrets.open(claimed.secret, claimed.webhook_id)];
    if (claimed.previous_valid && claimed.previous_secret) {
      secrets.push(deps.secrets.open(claimed.previous_secret, claimed.webhook_id));
    }
    return deps.sender.send({
      url: claimed.url,
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'x-svc-event': claimed.event_type,
        'x-svc-event-id': claimed.event_id,
        'x-svc-delivery': claimed.id,
        'x-svc-attempt': String(claimed.attempt),
        'x-svc-timestamp': String(timestamp),
        'x-svc-signature': signatureHeader(secrets, timestamp, body),
      },
    });
  }

  function start(claimed: Claimed) {
    const done = attempt(claimed)
      .catch((error) => report(error, 'webhook outcome not recorded; the lease will return it to the queue'))
      .finally(() => {
        inFlight.delete(claimed.id);
        wake();
      });
    inFlight.set(claimed.id, { claimed, done });
  }

  const housekeepingEveryMs = Math.min(config.leaseMs / 2, 5000);
  let lastHousekeeping = 0;
  let lastPublish = 0;

  async function round(): Promise<number> {
    let retryPublishIn = POLL_MS;
    if (outboxDirty || Date.now() - lastPublish >= POLL_MS) {
      outboxDirty = false;
      lastPublish = Date.now();
      // Another publisher at work will have published what it saw; what committed after it is
      // looked for again shortly rather than queueing behind its lock.
      if ((await publishEvents(db, { wait: false })).busy) {
        outboxDirty = true;
        retryPublishIn = PUBLISH_RETRY_MS;
      }
    }
    if (Date.now() - lastHousekeeping >= housekeepingEveryMs) {
      lastHousekeeping = Date.now();
      await releaseExpiredLeases(db);
      await dropFinishedPayloads(db);
    }
    const free = config.concurrency - inFlight.size;
    if (free <= 0) return retryPublishIn;
    const claimed = await claimDeliveries(
      db,
      free,
      config.concurrencyPerWebhook,
      randomUUID(),
      config.leaseMs,
    );
    for (const c of claimed) start(c);
    if (claimed.length === free) return 0;
    const due = await msUntilNextDue(db);
    return Math.min(retryPublishIn, Math.max(due ?? POLL_MS, 5));
  }

  const loop = (async () => {
    while (!stopping) {
      let waitMs = POLL_MS;
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
      await Promise.all(unlisten.map((u) => u().catch(() => {})));
      const all = Promise.all([...inFlight.values()].map((f) => f.done));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      const left = [...inFlight.values()].map((f) => f.claimed);
      if (left.length > 0) {
        await releaseLeases(db, left).catch((error) => report(error, 'in-flight deliveries not released'));
        logger.warn({ deliveries: left.length }, 'in-flight deliveries handed back at shutdown');
      }
    },
  };
}

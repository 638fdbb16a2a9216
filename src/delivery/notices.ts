// What a worker tells the operators: a log line and a metric for every attempt that did not
// succeed and for every change of a webhook's state worth knowing, with the tenant's ids (never a
// secret, a body or a url's query). Bounded labels only: the on-call view in the operator API
// answers per tenant.
import type { FastifyBaseLogger } from 'fastify';
import type { Attempted } from './attempt.js';
import type { Claimed, Tally } from './engine.js';
import type { DeliveryMetrics } from './metrics.js';
import type { Ended } from './outcomes.js';
import { CONSECUTIVE_FAILURES_TO_DISABLE } from './policy.js';

/** Dead deliveries in a row at which a webhook's coming deactivation is announced (warn). */
export const FAILURE_WARNINGS = [50, 90] as const;

/** A webhook's deactivation or warning, for whoever the platform wants told (an operator URL). */
export interface WebhookNotice {
  type: 'webhook.disabled' | 'webhook.failing';
  organization_id: string;
  integration_id: string;
  webhook_id: string;
  consecutive_failures: number;
  reason: string;
}

const ids = (c: Claimed) => ({
  organization_id: c.organization_id,
  integration_id: c.integration_id,
  webhook_id: c.webhook_id,
  delivery_id: c.id,
  event_id: c.event_id,
});

/** An attempt that ended: a line for every one that did not succeed (counted once written: countWritten). */
export function noticeAttempt(logger: FastifyBaseLogger, claimed: Claimed, a: Attempted): void {
  if (a.class === 'service_fault') {
    logger.error(
      { ...ids(claimed), attempt: claimed.attempt, err: a.fault, next: a.recorded.status },
      'webhook attempt not made: a fault of the service (the receiver is not blamed)',
    );
  } else if (a.recorded.status !== 'succeeded' && a.class !== 'not_sent') {
    logger.warn(
      {
        ...ids(claimed),
        attempt: claimed.attempt,
        outcome: a.class,
        http_status: a.recorded.httpStatus,
        reason: a.recorded.error,
        next: a.recorded.status,
      },
      a.recorded.status === 'dead'
        ? 'webhook delivery dead after its last attempt'
        : 'webhook attempt failed',
    );
  }
}

/** The attempts whose outcome the database took: the metrics count what the deliveries show. */
export function countWritten(metrics: DeliveryMetrics | undefined, written: readonly Ended[]): void {
  for (const e of written) {
    metrics?.attempts.inc({ outcome: e.class });
    if (e.class === 'service_fault') metrics?.faults.inc();
  }
}

/** The webhooks whose failure count the outcomes moved: deactivations and the warnings before them. */
export function noticeTallies(
  logger: FastifyBaseLogger,
  metrics: DeliveryMetrics | undefined,
  tallies: readonly Tally[],
  notify?: (notice: WebhookNotice) => void,
): void {
  for (const t of tallies) {
    const base = {
      organization_id: t.organizationId,
      integration_id: t.integrationId,
      webhook_id: t.webhookId,
      consecutive_failures: t.failures,
    };
    if (!t.active) {
      metrics?.disabled.inc();
      const reason = `${CONSECUTIVE_FAILURES_TO_DISABLE} deliveries in a row ended dead`;
      logger.error({ ...base, reason }, 'webhook deactivated');
      notify?.({ type: 'webhook.disabled', ...base, reason });
      continue;
    }
    const crossed = FAILURE_WARNINGS.find((n) => t.failuresBefore < n && t.failures >= n);
    if (crossed !== undefined) {
      const reason = `${t.failures} deliveries in a row ended dead; deactivated at ${CONSECUTIVE_FAILURES_TO_DISABLE}`;
      logger.warn({ ...base, reason }, 'webhook failing');
      notify?.({ type: 'webhook.failing', ...base, reason });
    }
  }
}

// SQL of the delivery engine. Every statement is short: a worker claims deliveries and commits,
// makes its HTTP attempts with no transaction open, then records each outcome in one statement.
import type { Queryable } from '../db/db.js';
import { CONSECUTIVE_FAILURES_TO_DISABLE } from './policy.js';

/** Everything one attempt needs, read at the claim (scopes and url may change between attempts). */
export interface AttemptContext {
  webhook_active: boolean;
  url: string;
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_valid: boolean;
  integration_active: boolean;
  scopes: string[];
  organization_id: string;
  webhooks_enabled: boolean;
  event_type: string;
  event_created_at: Date;
  resource_type: string;
  resource_id: string;
  changes: string[];
  previous_status: string | null;
  booking: Record<string, unknown> | null;
  link_external_id: string | null;
}

export interface Claimed extends AttemptContext {
  id: string;
  webhook_id: string;
  event_id: string;
  attempt: number;
  lease_token: string;
}

/**
 * Claims up to `take` due deliveries, at most `perWebhook` in flight for any webhook counting
 * those other workers hold, oldest due first, and returns each with what its attempt needs (one
 * statement per batch, not one per delivery). SKIP LOCKED lets workers claim side by side; the
 * status and due time are checked again on the locked row, so a row another worker has just
 * claimed is never taken twice. The attempt number is counted here: an attempt whose worker dies
 * still counts, and the next one carries a higher number.
 */
const CLAIM_SQL = `
  WITH due AS (
    SELECT id, webhook_id, next_retry_at FROM webhook_deliveries
    WHERE status IN ('pending', 'failed') AND next_retry_at <= now()
    ORDER BY next_retry_at LIMIT $1 * 4
  ), busy AS (
    SELECT webhook_id, count(*) AS n FROM webhook_deliveries
    WHERE status = 'delivering' AND webhook_id IN (SELECT webhook_id FROM due)
    GROUP BY webhook_id
  ), ranked AS (
    SELECT d.id, d.next_retry_at,
           row_number() OVER (PARTITION BY d.webhook_id ORDER BY d.next_retry_at, d.id) + coalesce(b.n, 0) AS slot
    FROM due d LEFT JOIN busy b ON b.webhook_id = d.webhook_id
  ), picked AS (
    SELECT w.id FROM webhook_deliveries w JOIN ranked r ON r.id = w.id
    WHERE r.slot <= $2 AND w.status IN ('pending', 'failed') AND w.next_retry_at <= now()
    ORDER BY r.next_retry_at LIMIT $1
    FOR UPDATE OF w SKIP LOCKED
  ), claimed AS (
    UPDATE webhook_deliveries d
    SET status = 'delivering', attempt = d.attempt + 1, lease_token = $3,
        lease_until = now() + make_interval(secs => $4::float8 / 1000)
    FROM picked WHERE d.id = picked.id
    RETURNING d.id, d.webhook_id, d.event_id, d.attempt, d.lease_token
  )
  SELECT c.id, c.webhook_id, c.event_id, c.attempt, c.lease_token,
         w.active AS webhook_active, w.url, w.secret, w.previous_secret,
         coalesce(w.previous_secret_until > now(), false) AS previous_valid,
         i.status = 'active' AS integration_active, i.scopes,
         e.organization_id, o.webhooks_enabled AND o.api_enabled AS webhooks_enabled,
         e.type AS event_type, e.created_at AS event_created_at, e.resource_type, e.resource_id,
         e.changes, e.previous_status, p.booking,
         (SELECT x.external_id FROM booking_external_ids x
          WHERE x.integration_id = i.id AND x.booking_id = e.resource_id) AS link_external_id
  FROM claimed c
  JOIN webhooks w ON w.id = c.webhook_id
  JOIN integrations i ON i.id = w.integration_id
  JOIN events e ON e.id = c.event_id
  JOIN organizations o ON o.id = e.organization_id
  LEFT JOIN event_payloads p ON p.event_id = e.id`;

export function claimDeliveries(
  q: Queryable,
  take: number,
  perWebhook: number,
  leaseToken: string,
  leaseMs: number,
): Promise<Claimed[]> {
  return q.query<Claimed>(CLAIM_SQL, [take, perWebhook, leaseToken, leaseMs]);
}

/**
 * Deliveries whose worker died or hung past its lease go back to the queue, due at once (or end,
 * if that was their last attempt). The receiver may have got the interrupted attempt: it will see
 * the same X-SVC-Delivery again, with a higher X-SVC-Attempt.
 */
export async function releaseExpiredLeases(q: Queryable): Promise<number> {
  const rows = await q.query(
    `UPDATE webhook_deliveries
     SET status = CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'failed' END,
         next_retry_at = CASE WHEN attempt >= max_attempts THEN NULL ELSE now() END,
         last_status = NULL, last_error = 'intento interrumpido: el proceso que lo hacía no registró el resultado',
         lease_until = NULL, lease_token = NULL
     WHERE status = 'delivering' AND lease_until < now()
     RETURNING 1`,
  );
  return rows.length;
}

export interface Recorded {
  status: 'succeeded' | 'failed' | 'dead';
  maxAttempts: number;
  nextRetryInMs: number | null;
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
  /** False when the attempt was never made (nothing to count against the webhook). */
  counts: boolean;
}

/**
 * Records an attempt's outcome, only if this worker still holds the lease, in one statement. A
 * success resets the webhook's failure count; each failure adds one, and the hundredth in a row
 * deactivates it.
 * Returns whether the webhook was deactivated by this failure, or null when the lease was lost.
 */
export async function recordOutcome(
  q: Queryable,
  claimed: Pick<Claimed, 'id' | 'lease_token'>,
  r: Recorded,
): Promise<{ disabled: boolean } | null> {
  const [row] = await q.query<{ disabled: boolean | null }>(
    `WITH d AS (
       UPDATE webhook_deliveries SET
         status = $3, max_attempts = $4,
         next_retry_at = CASE WHEN $5::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $5::float8 / 1000) END,
         last_status = $6, last_error = $7, last_duration_ms = $8,
         delivered_at = CASE WHEN $3 = 'succeeded' THEN now() ELSE delivered_at END,
         -- An attempt never made (webhook inactive...) is not counted as one.
         attempt = CASE WHEN $9 THEN attempt ELSE attempt - 1 END,
         lease_until = NULL, lease_token = NULL
       WHERE id = $1 AND lease_token = $2 AND status = 'delivering'
       RETURNING webhook_id, event_id
     ), p AS (
       -- The last final delivery of an event drops the booking kept for its bodies. (The statement
       -- sees this delivery as it was, so it is left out of the check.)
       DELETE FROM event_payloads
       WHERE $3 <> 'failed' AND event_id = (SELECT event_id FROM d)
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o
                         WHERE o.event_id = event_payloads.event_id AND o.id <> $1
                           AND o.status IN ('pending', 'delivering', 'failed'))
     ), w AS (
       UPDATE webhooks SET
         consecutive_failures = CASE WHEN $3 = 'succeeded' THEN 0 ELSE consecutive_failures + 1 END,
         active = active AND ($3 = 'succeeded' OR consecutive_failures + 1 < $10),
         disabled_at = CASE WHEN active AND $3 <> 'succeeded' AND consecutive_failures + 1 >= $10
                            THEN now() ELSE disabled_at END,
         disabled_reason = CASE WHEN active AND $3 <> 'succeeded' AND consecutive_failures + 1 >= $10
                                THEN 'consecutive_failures' ELSE disabled_reason END
       -- A success with the count already at 0 changes nothing: the webhook row is not rewritten,
       -- so deliveries of one webhook do not queue on its row lock.
       WHERE id = (SELECT webhook_id FROM d) AND $9 AND ($3 <> 'succeeded' OR consecutive_failures <> 0)
       -- The count grows by one per failure, so it equals the threshold exactly once per deactivation.
       RETURNING (NOT active AND disabled_reason = 'consecutive_failures' AND consecutive_failures = $10)
         AS disabled
     )
     SELECT (SELECT disabled FROM w) AS disabled FROM d`,
    [
      claimed.id,
      claimed.lease_token,
      r.status,
      r.maxAttempts,
      r.nextRetryInMs,
      r.httpStatus,
      r.error,
      r.durationMs,
      r.counts,
      CONSECUTIVE_FAILURES_TO_DISABLE,
    ],
  );
  if (!row) return null;
  return { disabled: row.disabled === true };
}

/** Booking snapshots that no unfinished delivery needs any more: personal data is not kept longer. */
export async function dropFinishedPayloads(q: Queryable, eventId?: string): Promise<number> {
  const rows = await q.query(
    `DELETE FROM event_payloads p
     WHERE ($1::uuid IS NULL OR p.event_id = $1)
       AND NOT EXISTS (
         SELECT 1 FROM webhook_deliveries d
         WHERE d.event_id = p.event_id AND d.status IN ('pending', 'delivering', 'failed'))
     RETURNING 1`,
    [eventId ?? null],
  );
  return rows.length;
}

/**
 * Milliseconds until the next delivery falls due, by the database's clock (workers on other hosts
 * may disagree with it), or null when none is queued.
 */
export async function msUntilNextDue(q: Queryable): Promise<number | null> {
  const [row] = await q.query<{ ms: number | null }>(
    `SELECT ceil(extract(epoch FROM (min(next_retry_at) - now())) * 1000)::int8 AS ms
     FROM webhook_deliveries WHERE status IN ('pending', 'failed')`,
  );
  return row?.ms === null || row?.ms === undefined ? null : Math.max(0, Number(row.ms));
}

/**
 * Hands deliveries back at shutdown: due at once, for another worker. The attempt in flight may
 * have reached the receiver, so its number stays counted.
 */
export async function releaseLeases(q: Queryable, claimed: readonly Pick<Claimed, 'id' | 'lease_token'>[]) {
  await q.query(
    `UPDATE webhook_deliveries d
     SET status = CASE WHEN d.attempt >= d.max_attempts THEN 'dead' ELSE 'failed' END,
         next_retry_at = CASE WHEN d.attempt >= d.max_attempts THEN NULL ELSE now() END,
         last_status = NULL, last_error = 'intento interrumpido: el proceso se detuvo',
         lease_until = NULL, lease_token = NULL
     FROM unnest($1::uuid[], $2::uuid[]) AS r(id, token)
     WHERE d.id = r.id AND d.lease_token = r.token AND d.status = 'delivering'`,
    [claimed.map((c) => c.id), claimed.map((c) => c.lease_token)],
  );
}

/** Queue depth by state, for the metrics. */
export function deliveryCounts(q: Queryable): Promise<{ status: string; n: number }[]> {
  return q.query(
    `SELECT status, count(*)::int AS n FROM webhook_deliveries
     WHERE status IN ('pending', 'delivering', 'failed') GROUP BY status`,
  );
}

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
  /** The attempt a replay started again from: the retry schedule counts from here. */
  replayed_from: number;
  lease_token: string;
}

/**
 * Claims up to `take` due deliveries and returns each with what its attempt needs, in one
 * statement. Fair by construction:
 * - it walks the webhooks that have waiting deliveries (a skip scan of the queue index, one probe
 *   per webhook, however deep any backlog is) and takes from each only its oldest due rows, up to
 *   what `perWebhook` leaves free; so a webhook with thousands of due rows offers no more
 *   candidates than one with a single row;
 * - a worker that alone holds a webhook's deliveries may hold up to `perWebhook` of them (its
 *   attempts in flight and a local queue behind them; `fastPerWebhook` of the webhooks it names
 *   `fast`); a webhook that other workers hold deliveries
 *   of is shared once its holder is not keeping up (its oldest due delivery has waited
 *   `shareAfterMs`): every worker together then holds at most `inFlightPerWebhook` of it, none
 *   queued ahead, so its attempts in flight stay within the bound however many workers send to it,
 *   and a second worker finds room beside a first that holds a few deliveries of every webhook. What a worker may
 *   take of a webhook is counted by claim_room (007_shared_webhooks.sql), which tries the webhook's
 *   own lock (busy: another claim is taking for it right now, so this one leaves it) and counts with
 *   a snapshot of its own, so two claims never both count the same room, and claims of different
 *   webhooks never wait for each other;
 * - the candidates are then taken in turns across organizations: every organization's first
 *   candidate before any organization's second.
 * Each webhook's candidates are locked as its index is read (SKIP LOCKED, so workers claim side by
 * side); status and due time are checked again on the locked row, so a delivery another worker has
 * just claimed is never taken twice. Locking there, rather than joining the candidates back to the
 * queue, keeps a claim's cost to the rows it reads, however deep the backlog (bench/claim-plan.ts).
 * A candidate locked but not taken is free again when the claim commits (its webhook's lock keeps
 * other claims away from it meanwhile). The rows come in the order of their attempts. The attempt
 * number is counted here: an attempt whose worker dies still counts.
 * `ending` names this worker's deliveries whose outcome is being written at the same moment: their
 * slots count as free.
 */
/**
 * The claim's common table expressions; `p(n)` names its n-th parameter (claimParams, then
 * `ending` as the 10th) in the statement.
 */
const claimCtes = (p: (n: number) => string) => `
  hooks AS (
    (SELECT webhook_id FROM webhook_deliveries
     WHERE status IN ('pending', 'failed') ORDER BY webhook_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.webhook_id FROM webhook_deliveries d
            WHERE d.status IN ('pending', 'failed') AND d.webhook_id > h.webhook_id
            ORDER BY d.webhook_id LIMIT 1)
    FROM hooks h WHERE h.webhook_id IS NOT NULL
  ), candidates AS (
    SELECT x.id, x.next_retry_at, x.event_id, w.organization_id,
           row_number() OVER (PARTITION BY h.webhook_id ORDER BY x.next_retry_at, x.event_id) AS k
    FROM hooks h
    JOIN webhooks w ON w.id = h.webhook_id
    CROSS JOIN LATERAL (
      SELECT d.id, d.next_retry_at, d.event_id
      FROM webhook_deliveries d
      WHERE d.webhook_id = h.webhook_id AND d.status IN ('pending', 'failed') AND d.next_retry_at <= now()
      ORDER BY d.next_retry_at, d.event_id
      LIMIT claim_room(h.webhook_id, ${p(5)}::uuid, ${p(10)}::uuid[],
                       CASE WHEN h.webhook_id = ANY (${p(8)}::uuid[]) THEN ${p(9)}::int ELSE ${p(2)}::int END,
                       ${p(6)}::int, ${p(7)}::int)
      FOR UPDATE OF d SKIP LOCKED
    ) x
  ), picked AS (
    -- pos: the order of attempts (the answer's rows come in it; a join's output order is the plan's).
    SELECT c.id, row_number() OVER (ORDER BY c.turn, c.next_retry_at, c.event_id) AS pos
    FROM (SELECT *, row_number() OVER (PARTITION BY organization_id ORDER BY k, next_retry_at, event_id) AS turn
          FROM candidates) c
    ORDER BY pos LIMIT ${p(1)}
  ), claimed AS (
    UPDATE webhook_deliveries d
    SET status = 'delivering', attempt = d.attempt + 1, lease_token = ${p(3)}, lease_owner = ${p(5)},
        lease_until = now() + make_interval(secs => ${p(4)}::float8 / 1000)
    WHERE d.id = ANY (ARRAY(SELECT id FROM picked))
    RETURNING d.id, d.webhook_id, d.event_id, d.attempt, d.replayed_from, d.lease_token
  ), got AS (
    SELECT k.pos, c.id, c.webhook_id, c.event_id, c.attempt, c.replayed_from, c.lease_token,
           w.active AS webhook_active, w.url, w.secret, w.previous_secret,
           coalesce(w.previous_secret_until > now(), false) AS previous_valid,
           i.status = 'active' AS integration_active, i.scopes,
           e.organization_id, o.webhooks_enabled AND o.api_enabled AS webhooks_enabled,
           e.type AS event_type, e.created_at AS event_created_at, e.resource_type, e.resource_id,
           e.changes, e.previous_status,
           -- An event's booking once per claim, on its first row: its other deliveries share it.
           CASE WHEN row_number() OVER same_event = 1 THEN p.booking END AS booking,
           row_number() OVER same_event > 1 AS booking_above,
           (SELECT x.external_id FROM booking_external_ids x
            WHERE x.integration_id = i.id AND x.booking_id = e.resource_id) AS link_external_id
    FROM claimed c
    JOIN picked k ON k.id = c.id
    JOIN webhooks w ON w.id = c.webhook_id
    JOIN integrations i ON i.id = w.integration_id
    -- One key lookup per claimed row (LIMIT keeps the planner from hashing the whole events table).
    CROSS JOIN LATERAL (SELECT * FROM events e WHERE e.id = c.event_id LIMIT 1) e
    JOIN organizations o ON o.id = e.organization_id
    LEFT JOIN event_payloads p ON p.event_id = e.id
    WINDOW same_event AS (PARTITION BY c.event_id ORDER BY k.pos)
  )`;

/**
 * The claim's answer: its rows, and at least one row (see below) for the figures of the queue.
 * `once` adds columns (name to expression) carried by the first row only, null on the others.
 */
const claimSelect = (once: Record<string, string> = {}) => `
  -- One row at least: with nothing claimed, it carries only when the next delivery falls due
  -- (rows already due are left out: they wait for a slot of their webhook, and a freed slot wakes
  -- its worker).
  SELECT got.*,
         coalesce(current_setting('svc.claim_skipped', true) = 'on', false) AS skipped,
         EXISTS (SELECT 1 FROM webhook_deliveries WHERE status IN ('pending', 'failed') AND next_retry_at <= now())
           AS due_left,
         (SELECT ceil(extract(epoch FROM (min(next_retry_at) - now())) * 1000)::int8
          FROM webhook_deliveries WHERE status IN ('pending', 'failed') AND next_retry_at > now()) AS next_due_ms
         ${Object.entries(once)
           .map(([name, expr]) => `, CASE WHEN coalesce(got.nth, 1) = 1 THEN ${expr} END AS ${name}`)
           .join('')}
  FROM (SELECT 1) AS one LEFT JOIN (SELECT *, row_number() OVER (ORDER BY pos) AS nth FROM got) AS got ON true
  ORDER BY got.pos`;

const CLAIM_SQL = `WITH RECURSIVE ${claimCtes((n) => `$${n}`)} ${claimSelect()}`;

export interface ClaimResult {
  claimed: Claimed[];
  /** Milliseconds until the next delivery not yet due falls due, by the database's clock; null if none. */
  nextDueMs: number | null;
  /** A webhook was left because another claim was taking for it at that moment (claim_room). */
  skipped: boolean;
  /**
   * Deliveries were due as the claim began (those it took among them): with nothing taken, the
   * due ones wait for slots, of this worker or of the worker that holds their webhook.
   */
  dueLeft: boolean;
}

export interface ClaimRequest {
  /** Deliveries wanted at most. */
  take: number;
  /**
   * Deliveries of one webhook this worker may hold at once (in flight and queued behind them) while
   * no other worker holds any.
   */
  perWebhook: number;
  /** Webhooks whose receivers answer fast: of each, this worker may hold `fastPerWebhook` instead. */
  fast?: readonly string[];
  fastPerWebhook?: number;
  /**
   * Attempts of one webhook in flight at once, across workers: a webhook that other workers hold
   * deliveries of gives up to this many held in all, none queued ahead, once its oldest due delivery
   * has waited `shareAfterMs` (its holder is not keeping up).
   */
  inFlightPerWebhook: number;
  shareAfterMs: number;
  /** The lease of this claim: an outcome is written only with it. */
  leaseToken: string;
  leaseMs: number;
  /** The worker claiming: a webhook another worker holds deliveries of is left to that worker. */
  owner: string;
  /** This worker's deliveries whose outcome is being written at the same moment: no longer held. */
  ending?: readonly string[];
}

type ClaimRow = Claimed & {
  next_due_ms: string | number | null;
  skipped: boolean;
  due_left: boolean;
  /** The booking is the one of an earlier row of the same event. */
  booking_above: boolean | null;
};

function claimResult(rows: ClaimRow[]): ClaimResult {
  const due = rows[0]?.next_due_ms;
  const bookings = new Map<string, AttemptContext['booking']>();
  const claimed: Claimed[] = [];
  for (const row of rows) {
    if (row.id === null) continue;
    if (row.booking_above) row.booking = bookings.get(row.event_id) ?? null;
    else bookings.set(row.event_id, row.booking);
    claimed.push(row);
  }
  return {
    claimed,
    nextDueMs: due === null || due === undefined ? null : Math.max(0, Number(due)),
    skipped: rows[0]?.skipped === true,
    dueLeft: rows[0]?.due_left === true,
  };
}

/** The claim's parameters 1 to 9, in the order of claimCtes; `ending` is the 10th. */
const claimParams = (r: Omit<ClaimRequest, 'ending'>): unknown[] => [
  r.take,
  r.perWebhook,
  r.leaseToken,
  r.leaseMs,
  r.owner,
  r.inFlightPerWebhook,
  r.shareAfterMs,
  r.fast ?? [],
  r.fastPerWebhook ?? r.perWebhook,
];

export async function claimDeliveries(q: Queryable, r: ClaimRequest): Promise<ClaimResult> {
  return claimResult(await q.query<ClaimRow>(CLAIM_SQL, [...claimParams(r), r.ending ?? []]));
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
  /**
   * False when no attempt reached the receiver because of us or of the webhook's own state (the
   * webhook or integration inactive, a failure inside the service): the attempt number is given
   * back and the webhook's failure count is left alone.
   */
  counts: boolean;
}

export interface Outcome {
  claimed: Pick<Claimed, 'id' | 'lease_token'>;
  recorded: Recorded;
}

export interface Written {
  /** Deliveries whose outcome was written (the others' lease had been lost). */
  written: string[];
  /** Webhooks this batch deactivated. */
  disabled: string[];
}

/**
 * Records a batch of outcomes in one statement, each only if this worker still holds its lease.
 * The webhook's failure count is the number of deliveries in a row that ended dead: any success
 * resets it, a retry in between changes nothing, and the hundredth dead delivery in a row
 * deactivates the webhook. The outcomes of one webhook in the batch are counted in the order
 * their attempts ended. Tests and deliveries to an inactive webhook never move the count.
 */
const recordCtes = (p: (n: number) => string) => `
  r AS (
    SELECT * FROM unnest(${p(1)}::uuid[], ${p(2)}::uuid[], ${p(3)}::text[], ${p(4)}::int4[], ${p(5)}::float8[], ${p(6)}::int4[],
                         ${p(7)}::text[], ${p(8)}::int4[], ${p(9)}::bool[])
      WITH ORDINALITY AS r(id, token, status, max_attempts, retry_ms, http_status, error, duration_ms, counts, ord)
  ), d AS (
    UPDATE webhook_deliveries w SET
      status = r.status, max_attempts = r.max_attempts,
      next_retry_at = CASE WHEN r.retry_ms IS NULL THEN NULL
                           ELSE now() + make_interval(secs => r.retry_ms / 1000) END,
      last_status = r.http_status, last_error = r.error, last_duration_ms = r.duration_ms,
      delivered_at = CASE WHEN r.status = 'succeeded' THEN now() ELSE w.delivered_at END,
      attempt = CASE WHEN r.counts THEN w.attempt ELSE w.attempt - 1 END,
      lease_until = NULL, lease_token = NULL
    FROM r
    WHERE w.id = r.id AND w.lease_token = r.token AND w.status = 'delivering'
    RETURNING w.id, w.webhook_id, w.event_id, w.event_type, r.status, r.counts, r.ord
  ), p AS (
    -- The last final delivery of an event drops the booking kept for its bodies. (The statement
    -- sees the batch's deliveries as they were, so they are judged by their new state here.)
    DELETE FROM event_payloads ep
    WHERE ep.event_id IN (SELECT event_id FROM d WHERE status <> 'failed')
      AND NOT EXISTS (SELECT 1 FROM d WHERE d.event_id = ep.event_id AND d.status = 'failed')
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o
                      WHERE o.event_id = ep.event_id AND o.status IN ('pending', 'delivering', 'failed')
                        AND o.id NOT IN (SELECT id FROM d))
  ), marked AS (
    SELECT webhook_id, status, ord,
           max(ord) FILTER (WHERE status = 'succeeded') OVER (PARTITION BY webhook_id) AS last_ok
    FROM d WHERE counts AND status <> 'failed' AND event_type <> 'webhook.test'
  ), tally AS (
    SELECT webhook_id, bool_or(last_ok IS NOT NULL) AS reset,
           count(*) FILTER (WHERE status = 'dead' AND ord > coalesce(last_ok, 0))::int AS dead
    FROM marked GROUP BY webhook_id
  ), h AS (
    UPDATE webhooks w SET
      consecutive_failures = CASE WHEN t.reset THEN 0 ELSE w.consecutive_failures END + t.dead,
      active = CASE WHEN t.reset THEN 0 ELSE w.consecutive_failures END + t.dead < ${p(10)},
      disabled_at = CASE WHEN CASE WHEN t.reset THEN 0 ELSE w.consecutive_failures END + t.dead >= ${p(10)}
                         THEN now() ELSE w.disabled_at END,
      disabled_reason = CASE WHEN CASE WHEN t.reset THEN 0 ELSE w.consecutive_failures END + t.dead >= ${p(10)}
                             THEN 'consecutive_failures' ELSE w.disabled_reason END
    FROM tally t
    -- An inactive webhook's count stays as it is; a count that does not change leaves the row alone,
    -- so the deliveries of one webhook do not queue on its row lock.
    WHERE w.id = t.webhook_id AND w.active
      AND CASE WHEN t.reset THEN 0 ELSE w.consecutive_failures END + t.dead <> w.consecutive_failures
    RETURNING w.id, w.active
  )`;

/** What the record answers: the deliveries written, the webhooks deactivated. */
const RECORD_COLUMNS = {
  written: `coalesce((SELECT array_agg(id) FROM d), '{}')`,
  disabled: `coalesce((SELECT array_agg(id) FROM h WHERE NOT active), '{}')`,
};

const RECORD_SQL = `WITH ${recordCtes((n) => `$${n}`)}
  SELECT ${Object.entries(RECORD_COLUMNS)
    .map(([name, expr]) => `${expr} AS ${name}`)
    .join(', ')}`;

/**
 * A batch of outcomes written and the next claim made in one statement, one transaction: the
 * claim's `ending` is the batch. The two touch different rows (the batch's are delivering, the
 * claim's pending or failed), and the claim counts the batch's slots as free, as it does beside a
 * separate write.
 */
const RECORD_AND_CLAIM_SQL = `WITH RECURSIVE ${recordCtes((n) => `$${n}`)},
  ${claimCtes((n) => (n === 10 ? '$1' : `$${n + 10}`))}
  ${claimSelect(RECORD_COLUMNS)}`;

/** The record's parameters, $1 to $10. */
function recordParams(batch: readonly Outcome[]): unknown[] {
  const col = <T>(f: (o: Outcome) => T) => batch.map(f);
  return [
    col((o) => o.claimed.id),
    col((o) => o.claimed.lease_token),
    col((o) => o.recorded.status),
    col((o) => o.recorded.maxAttempts),
    col((o) => o.recorded.nextRetryInMs),
    col((o) => o.recorded.httpStatus),
    col((o) => o.recorded.error),
    col((o) => o.recorded.durationMs),
    col((o) => o.recorded.counts),
    CONSECUTIVE_FAILURES_TO_DISABLE,
  ];
}

export async function recordOutcomes(q: Queryable, batch: readonly Outcome[]): Promise<Written> {
  if (batch.length === 0) return { written: [], disabled: [] };
  const [row] = await q.query<Written>(RECORD_SQL, recordParams(batch));
  return { written: row?.written ?? [], disabled: row?.disabled ?? [] };
}

/**
 * Writes a batch of outcomes and claims the next deliveries in one statement (the batch is the
 * claim's `ending`). Either both happen or neither does.
 */
export async function recordAndClaim(
  q: Queryable,
  batch: readonly Outcome[],
  r: Omit<ClaimRequest, 'ending'>,
): Promise<Written & { claim: ClaimResult }> {
  const rows = await q.query<ClaimRow & Written>(RECORD_AND_CLAIM_SQL, [
    ...recordParams(batch),
    ...claimParams(r),
  ]);
  const first = rows.find((row) => row.written !== null);
  return { written: first?.written ?? [], disabled: first?.disabled ?? [], claim: claimResult(rows) };
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

/**
 * Gives back deliveries claimed ahead and never attempted (a worker stopping, or a lease too near
 * its end to start an attempt in it): as they were before the claim, due at once, the attempt
 * number not counted.
 */
export async function returnUnsent(q: Queryable, claimed: readonly Pick<Claimed, 'id' | 'lease_token'>[]) {
  if (claimed.length === 0) return;
  await q.query(
    `UPDATE webhook_deliveries d
     SET status = CASE WHEN d.attempt - 1 = 0 THEN 'pending' ELSE 'failed' END,
         attempt = d.attempt - 1, next_retry_at = now(), lease_until = NULL, lease_token = NULL
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

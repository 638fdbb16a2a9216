// SQL of the delivery engine. Every statement is short: a worker claims deliveries and commits,
// makes its HTTP attempts with no transaction open, then records each outcome in one statement.
//
// A delivery's place in the queue and its lease are a row of delivery_queue while it is unfinished
// (migration 014); webhook_deliveries keeps what the deliveries' list shows, and none of its indexes
// covers what a delivery's state changes, so its writes can be heap-only. The claim writes the queue
// only (the lease is what says an attempt is under way: delivery_states, migration 015); every other
// statement here that changes a delivery's state writes both, in one statement.
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
  /**
   * Attempts of this delivery's webhook this worker may have in flight at once, from this claim on
   * (claim_slots, migration 012): the bound less what other workers hold of the webhook.
   */
  in_flight_cap: number;
}

/**
 * Columns of the claim's answer that are the same for every delivery of one webhook: its own and
 * its integration's (a webhook belongs to one integration). now() is the statement's start, so
 * previous_valid is the same on every row too.
 */
const WEBHOOK_COLUMNS = {
  webhook_active: 'w.active',
  url: 'w.url',
  secret: 'w.secret',
  previous_secret: 'w.previous_secret',
  previous_valid: 'coalesce(w.previous_secret_until > now(), false)',
  integration_active: "i.status = 'active'",
  scopes: 'i.scopes',
} as const satisfies Partial<Record<keyof AttemptContext, string>>;

/**
 * The same for every delivery of one event: the event, its booking, and the flags of the event's
 * organization (the one the body names, whose webhooks_enabled decides whether it is sent).
 */
const EVENT_COLUMNS = {
  organization_id: 'e.organization_id',
  webhooks_enabled: 'o.webhooks_enabled AND o.api_enabled',
  event_type: 'e.type',
  event_created_at: 'e.created_at',
  resource_type: 'e.resource_type',
  resource_id: 'e.resource_id',
  changes: 'e.changes',
  previous_status: 'e.previous_status',
  booking: 'p.booking',
} as const satisfies Partial<Record<keyof AttemptContext, string>>;

const WEBHOOK_FIELDS = Object.keys(WEBHOOK_COLUMNS) as (keyof typeof WEBHOOK_COLUMNS)[];
const EVENT_FIELDS = Object.keys(EVENT_COLUMNS) as (keyof typeof EVENT_COLUMNS)[];

/** The columns as `alias`'s, each on the first row of its `window` (ordered by pos) only, null on the others. */
const firstRowOnly = (window: string, alias: string, columns: Record<string, string>) =>
  Object.keys(columns)
    .map((name) => `CASE WHEN row_number() OVER ${window} = 1 THEN ${alias}.${name} END AS ${name}`)
    .join(',\n           ');

/** The columns' expressions, named. */
const named = (columns: Record<string, string>) =>
  Object.entries(columns)
    .map(([name, expr]) => `${expr} AS ${name}`)
    .join(', ');

/**
 * Claims up to `take` due deliveries and returns each with what its attempt needs, in one
 * statement. Fair by construction:
 * - it walks the webhooks that have waiting deliveries (a skip scan of delivery_queue_due, one probe
 *   per webhook, however deep any backlog is) and takes from each only its oldest due rows, up to
 *   what `perWebhook` leaves free; so a webhook with thousands of due rows offers no more
 *   candidates than one with a single row;
 * - a worker that alone holds a webhook's deliveries may hold up to `perWebhook` of them (its
 *   attempts in flight and a local queue behind them; `fastPerWebhook` of the webhooks it names
 *   `fast`); a webhook that other workers hold deliveries of is shared once its holder is not
 *   keeping up (its oldest due delivery has waited `shareAfterMs`): a sharer holds no more than
 *   what the others leave of `inFlightPerWebhook`, none queued ahead, so a second worker finds room
 *   beside a first that holds a few deliveries of every webhook; the worker that holds at least as
 *   many as all others together (they fewer than the bound) keeps claiming ahead, its attempts in
 *   flight capped at the bound less what they hold (each row's `in_flight_cap`), so the attempts in
 *   flight stay within the bound however many workers send to it. What a worker may take of a
 *   webhook is counted by claim_slots (012_holder_keeps_its_queue.sql), which tries the webhook's
 *   own lock (busy: another claim is taking for it right now, so this one leaves it) and counts with
 *   a snapshot of its own, so two claims never both count the same room, and claims of different
 *   webhooks never wait for each other;
 * - the candidates are then taken in turns across organizations: every organization's first
 *   candidate before any organization's second.
 * Each webhook's candidates are locked as its index is read (SKIP LOCKED, so workers claim side by
 * side); the lease and due time are checked again on the locked row, so a delivery another worker has
 * just claimed is never taken twice. Locking there, rather than joining the candidates back to the
 * queue, keeps a claim's cost to the rows it reads, however deep the backlog (bench/claim-plan.ts).
 * A candidate locked but not taken is free again when the claim commits (its webhook's lock keeps
 * other claims away from it meanwhile). The rows come in the order of their attempts. The claim
 * writes the queue only: while a delivery is leased its history row keeps the state it had
 * (delivery_states shows it `delivering`, the attempt under way counted), and the attempt is counted
 * there when its outcome is written, or when its lease is given back or ends: an attempt whose
 * worker dies still counts.
 * What the deliveries of one webhook share (WEBHOOK_COLUMNS) comes on the webhook's first row of
 * the claim only, and what the deliveries of one event share (EVENT_COLUMNS, its booking among
 * them) on the event's first row: a busy claim holds a few events fanned out to a few webhooks,
 * and the worker would parse every repeat again (secrets, scopes, timestamps, the booking).
 * claimResult gives each row back what its first row carried, so every claimed delivery is whole.
 * `ending` names this worker's deliveries whose outcome is being written at the same moment: their
 * slots count as free.
 */
/**
 * The claim's common table expressions; `p(n)` names its n-th parameter (claimParams, then
 * `ending` as the 10th) in the statement.
 */
const claimCtes = (p: (n: number) => string) => `
  hooks AS (
    (SELECT webhook_id FROM delivery_queue
     WHERE lease_owner IS NULL ORDER BY webhook_id LIMIT 1)
    UNION ALL
    SELECT (SELECT q.webhook_id FROM delivery_queue q
            WHERE q.lease_owner IS NULL AND q.webhook_id > h.webhook_id
            ORDER BY q.webhook_id LIMIT 1)
    FROM hooks h WHERE h.webhook_id IS NOT NULL
  ), candidates AS (
    SELECT x.id, x.row_version, x.next_retry_at, x.event_id, w.organization_id, s.cap,
           row_number() OVER (PARTITION BY h.webhook_id ORDER BY x.next_retry_at, x.event_id) AS k
    FROM hooks h
    JOIN webhooks w ON w.id = h.webhook_id
    CROSS JOIN LATERAL claim_slots(h.webhook_id, ${p(5)}::uuid, ${p(10)}::uuid[],
                       CASE WHEN h.webhook_id = ANY (${p(8)}::uuid[]) THEN ${p(9)}::int ELSE ${p(2)}::int END,
                       ${p(6)}::int, ${p(7)}::int) s
    CROSS JOIN LATERAL (
      SELECT q.id, q.ctid AS row_version, q.next_retry_at, q.event_id
      FROM delivery_queue q
      WHERE q.webhook_id = h.webhook_id AND q.lease_owner IS NULL AND q.next_retry_at <= now()
      ORDER BY q.next_retry_at, q.event_id
      LIMIT s.room
      FOR UPDATE OF q SKIP LOCKED
    ) x
  ), picked AS (
    -- pos: the order of attempts (the answer's rows come in it; a join's output order is the plan's).
    SELECT c.id, c.row_version, c.cap, row_number() OVER (ORDER BY c.turn, c.next_retry_at, c.event_id) AS pos
    FROM (SELECT *, row_number() OVER (PARTITION BY organization_id ORDER BY k, next_retry_at, event_id) AS turn
          FROM candidates) c
    ORDER BY pos LIMIT ${p(1)}
  ), leased AS (
    UPDATE delivery_queue q
    SET lease_owner = ${p(5)}, lease_token = ${p(3)}, lease_until = now() + make_interval(secs => ${p(4)}::float8 / 1000)
    -- By the row version the candidate's lock took (no one else can change it while it is locked):
    -- no lookup of the key.
    WHERE q.ctid = ANY (ARRAY(SELECT row_version FROM picked))
  ), claimed AS (
    -- The history row is read, not written: the lease is what says an attempt is under way
    -- (migration 015), and the attempt is counted in the history when it ends.
    SELECT d.id, d.webhook_id, d.event_id, d.attempt + 1 AS attempt, d.replayed_from
    FROM webhook_deliveries d
    WHERE d.id = ANY (ARRAY(SELECT id FROM picked))
  ), hook_ctx AS MATERIALIZED (
    -- Read once per webhook and once per event of the claim, by key, not once per delivery: a busy
    -- claim holds a few events fanned out to a few webhooks.
    SELECT w.id AS webhook_id, i.id AS integration_id, ${named(WEBHOOK_COLUMNS)}
    FROM webhooks w JOIN integrations i ON i.id = w.integration_id
    WHERE w.id = ANY (ARRAY(SELECT DISTINCT webhook_id FROM claimed))
  ), event_ctx AS MATERIALIZED (
    SELECT e.id AS event_id, ${named(EVENT_COLUMNS)}
    FROM events e JOIN organizations o ON o.id = e.organization_id
    LEFT JOIN event_payloads p ON p.event_id = e.id
    WHERE e.id = ANY (ARRAY(SELECT DISTINCT event_id FROM claimed))
  ), got AS (
    SELECT k.pos, c.id, c.webhook_id, c.event_id, c.attempt, c.replayed_from, ${p(3)}::uuid AS lease_token,
           k.cap AS in_flight_cap,
           -- A webhook's columns, and an event's, once per claim: on its first row in the order of
           -- attempts (null on the others, which say so).
           ${firstRowOnly('same_webhook', 'h', WEBHOOK_COLUMNS)},
           row_number() OVER same_webhook > 1 AS webhook_above,
           ${firstRowOnly('same_event', 'v', EVENT_COLUMNS)},
           row_number() OVER same_event > 1 AS event_above,
           -- The integration's external id of the booking: per row, as it depends on both.
           (SELECT x.external_id FROM booking_external_ids x
            WHERE x.integration_id = h.integration_id AND x.booking_id = v.resource_id) AS link_external_id
    FROM claimed c
    JOIN picked k ON k.id = c.id
    JOIN hook_ctx h ON h.webhook_id = c.webhook_id
    JOIN event_ctx v ON v.event_id = c.event_id
    WINDOW same_webhook AS (PARTITION BY c.webhook_id ORDER BY k.pos),
           same_event AS (PARTITION BY c.event_id ORDER BY k.pos)
  )`;

/**
 * The figures of the queue the claim answers with (see ClaimResult), on its first row. Both come
 * from the webhooks the claim walked (`hooks`), one step down the queue index each: an index of
 * every webhook's due times would answer them too, but with one on the table a plan made on
 * statistics of an empty queue read the claim's own walk from it, sorted (migration 011).
 */
const CLAIM_FIGURES = {
  skipped: `coalesce(current_setting('svc.claim_skipped', true) = 'on', false)`,
  // A claim that took deliveries found some due: the walk is made only when it took none.
  due_left: `EXISTS (SELECT 1 FROM picked) OR EXISTS (SELECT 1 FROM hooks h CROSS JOIN LATERAL (
               SELECT 1 FROM delivery_queue q
               WHERE q.webhook_id = h.webhook_id AND q.lease_owner IS NULL AND q.next_retry_at <= now()
               LIMIT 1) due)`,
  next_due_ms: `(SELECT ceil(extract(epoch FROM (min(n.at) - now())) * 1000)::int8
                 FROM hooks h CROSS JOIN LATERAL (
                   SELECT q.next_retry_at AS at FROM delivery_queue q
                   WHERE q.webhook_id = h.webhook_id AND q.lease_owner IS NULL AND q.next_retry_at > now()
                   ORDER BY q.next_retry_at LIMIT 1) n)`,
};

/**
 * The claim's answer: its rows, and at least one row (see below) for the figures of the queue.
 * The figures, and the columns `once` adds (name to expression), are carried by the first row
 * only, null on the others.
 */
const claimSelect = (once: Record<string, string> = {}) => `
  -- One row at least: with nothing claimed, it carries only when the next delivery falls due
  -- (rows already due are left out: they wait for a slot of their webhook, and a freed slot wakes
  -- its worker).
  SELECT got.*
         ${Object.entries({ ...CLAIM_FIGURES, ...once })
           .map(([name, expr]) => `, CASE WHEN coalesce(got.nth, 1) = 1 THEN ${expr} END AS ${name}`)
           .join('')}
  FROM (SELECT 1) AS one LEFT JOIN (SELECT *, row_number() OVER (ORDER BY pos) AS nth FROM got) AS got ON true
  ORDER BY got.pos`;

const CLAIM_SQL = `WITH RECURSIVE ${claimCtes((n) => `$${n}`)} ${claimSelect()}`;

export interface ClaimResult {
  claimed: Claimed[];
  /** Milliseconds until the next delivery not yet due falls due, by the database's clock; null if none. */
  nextDueMs: number | null;
  /** A webhook was left because another claim was taking for it at that moment (claim_slots). */
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
   * deliveries of gives a sharer up to this many held in all, none queued ahead, once its oldest due
   * delivery has waited `shareAfterMs` (its holder is not keeping up); a worker holding at least as
   * many as the others keeps its queue, its attempts in flight capped (`in_flight_cap`).
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
  /** The figures of the queue: on the first row only. */
  next_due_ms: string | number | null;
  skipped: boolean | null;
  due_left: boolean | null;
  /** The webhook's columns (WEBHOOK_COLUMNS) are those of an earlier row of the same webhook. */
  webhook_above: boolean | null;
  /** The event's columns (EVENT_COLUMNS) are those of an earlier row of the same event. */
  event_above: boolean | null;
};

/** Copies `fields` of an earlier row of the same webhook or event (values shared, never changed). */
function restore<K extends keyof AttemptContext>(
  row: Claimed,
  first: Claimed | undefined,
  fields: readonly K[],
) {
  if (first === undefined)
    throw new Error(`claimed delivery ${row.id} refers to a row the claim did not send`);
  for (const field of fields) row[field] = first[field];
}

function claimResult(rows: ClaimRow[]): ClaimResult {
  const due = rows[0]?.next_due_ms;
  const webhooks = new Map<string, Claimed>();
  const events = new Map<string, Claimed>();
  const claimed: Claimed[] = [];
  // The rows come ordered by pos, the order that chose each webhook's and event's first row: a
  // first row comes before its repeats.
  for (const row of rows) {
    if (row.id === null) continue;
    if (row.webhook_above) restore(row, webhooks.get(row.webhook_id), WEBHOOK_FIELDS);
    else webhooks.set(row.webhook_id, row);
    if (row.event_above) restore(row, events.get(row.event_id), EVENT_FIELDS);
    else events.set(row.event_id, row);
    claimed.push(row);
  }
  return {
    claimed,
    nextDueMs: due === null || due === undefined ? null : Math.max(0, Number(due)),
    skipped: rows[0]?.skipped === true,
    dueLeft: rows[0]?.due_left === true,
  };
}

/**
 * A uuid[] parameter written as PostgreSQL's array literal: a uuid needs no quotes or escapes, and
 * the driver's general array writer, escaping each element, took about 10 µs for the 64 ids of a
 * busy round (this, under 2). PostgreSQL still reads each element as a uuid, so a malformed id
 * fails the statement as before.
 */
const uuidArray = (ids: readonly string[]) => `{${ids.join(',')}}`;

/** The claim's parameters 1 to 9, in the order of claimCtes; `ending` is the 10th. */
const claimParams = (r: Omit<ClaimRequest, 'ending'>): unknown[] => [
  r.take,
  r.perWebhook,
  r.leaseToken,
  r.leaseMs,
  r.owner,
  r.inFlightPerWebhook,
  r.shareAfterMs,
  uuidArray(r.fast ?? []),
  r.fastPerWebhook ?? r.perWebhook,
];

export async function claimDeliveries(q: Queryable, r: ClaimRequest): Promise<ClaimResult> {
  return claimResult(await q.query<ClaimRow>(CLAIM_SQL, [...claimParams(r), uuidArray(r.ending ?? [])]));
}

/**
 * Deliveries whose worker died or hung past its lease go back to the queue, due at once (or end,
 * if that was their last attempt). The receiver may have got the interrupted attempt: it will see
 * the same X-SVC-Delivery again, with a higher X-SVC-Attempt.
 */
export async function releaseExpiredLeases(q: Queryable): Promise<number> {
  const [row] = await q.query<{ n: number }>(
    giveBack(
      // A lease whose outcome is being written right now is the writer's (SKIP LOCKED).
      `SELECT q.id FROM delivery_queue q
       WHERE q.lease_owner IS NOT NULL AND q.lease_until < now() FOR UPDATE SKIP LOCKED`,
      INTERRUPTED('el proceso que lo hacía no registró el resultado'),
    ),
  );
  return row?.n ?? 0;
}

/** A queue row's lease, ended. */
const FREED = 'lease_owner = NULL, lease_token = NULL, lease_until = NULL';

/**
 * A statement that gives back the leases `leases` selects (the ids of locked queue rows): each
 * delivery is written as `deliveries` says, and its queue row is freed, due at once, or deleted
 * when the delivery ended. Answers how many.
 */
const giveBack = (leases: string, deliveries: string) => `
  WITH leases AS (${leases}),
  given AS (
    UPDATE webhook_deliveries d SET ${deliveries} FROM leases l WHERE d.id = l.id RETURNING d.id, d.status
  ), requeued AS (
    UPDATE delivery_queue q SET ${FREED}, next_retry_at = now()
    FROM given g WHERE q.id = g.id AND g.status <> 'dead'
  ), ended AS (
    DELETE FROM delivery_queue q USING given g WHERE q.id = g.id AND g.status = 'dead'
  )
  SELECT count(*)::int AS n FROM given`;

/**
 * An attempt interrupted (`why`): the attempt under way counts (the history row holds the attempts
 * made before it), and the delivery ends if it was its last.
 */
const INTERRUPTED = (why: string) => `
  status = CASE WHEN d.attempt + 1 >= d.max_attempts THEN 'dead' ELSE 'failed' END,
  next_retry_at = CASE WHEN d.attempt + 1 >= d.max_attempts THEN NULL ELSE now() END,
  attempt = d.attempt + 1, last_status = NULL, last_error = 'intento interrumpido: ${why}'`;

/** The leases of `claimed` this worker still holds, locked ($1 ids, $2 tokens: heldLeases). */
const HELD_LEASES = `SELECT q.id FROM delivery_queue q
  JOIN unnest($1::uuid[], $2::uuid[]) AS r(id, token) ON q.id = r.id AND q.lease_token = r.token
  FOR UPDATE OF q`;
const heldLeases = (claimed: readonly Pick<Claimed, 'id' | 'lease_token'>[]) => [
  claimed.map((c) => c.id),
  claimed.map((c) => c.lease_token),
];

export interface Recorded {
  status: 'succeeded' | 'failed' | 'dead';
  maxAttempts: number;
  nextRetryInMs: number | null;
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
  /**
   * False when no attempt reached the receiver because of us or of the webhook's own state (the
   * webhook or integration inactive, a failure inside the service): the attempt is not counted,
   * and the webhook's failure count is left alone.
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
  ), requeued AS (
    -- Only the lease's holder writes an outcome: the queue row still carries its token. A retry
    -- frees the row, due later; an outcome that ends the delivery deletes it.
    UPDATE delivery_queue q SET ${FREED},
      next_retry_at = now() + make_interval(secs => coalesce(r.retry_ms, 0) / 1000)
    FROM r WHERE q.id = r.id AND q.lease_token = r.token AND r.status = 'failed'
    RETURNING q.id
  ), ended AS (
    DELETE FROM delivery_queue q USING r
    WHERE q.id = r.id AND q.lease_token = r.token AND r.status <> 'failed'
    RETURNING q.id
  ), d AS (
    UPDATE webhook_deliveries w SET
      status = r.status, max_attempts = r.max_attempts,
      next_retry_at = CASE WHEN r.retry_ms IS NULL THEN NULL
                           ELSE now() + make_interval(secs => r.retry_ms / 1000) END,
      last_status = r.http_status, last_error = r.error, last_duration_ms = r.duration_ms,
      delivered_at = CASE WHEN r.status = 'succeeded' THEN now() ELSE w.delivered_at END,
      attempt = CASE WHEN r.counts THEN w.attempt + 1 ELSE w.attempt END
    FROM r JOIN (SELECT id FROM requeued UNION ALL SELECT id FROM ended) held ON held.id = r.id
    WHERE w.id = r.id
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
    uuidArray(col((o) => o.claimed.id)),
    uuidArray(col((o) => o.claimed.lease_token)),
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
  await q.query(giveBack(HELD_LEASES, INTERRUPTED('el proceso se detuvo')), heldLeases(claimed));
}

/**
 * Gives back deliveries claimed ahead and never attempted (a worker stopping, or a lease too near
 * its end to start an attempt in it): due at once, the attempt not counted. Their history rows
 * were never written by the claim, so only the lease goes.
 */
export async function returnUnsent(q: Queryable, claimed: readonly Pick<Claimed, 'id' | 'lease_token'>[]) {
  if (claimed.length === 0) return;
  await q.query(
    `UPDATE delivery_queue q SET ${FREED}, next_retry_at = now() FROM (${HELD_LEASES}) l WHERE q.id = l.id`,
    heldLeases(claimed),
  );
}

/** Queue depth by state, for the metrics. */
export function deliveryCounts(q: Queryable): Promise<{ status: string; n: number }[]> {
  return q.query(
    `SELECT s.status, count(*)::int AS n FROM delivery_queue q JOIN delivery_states s ON s.id = q.id
     GROUP BY s.status`,
  );
}

// SQL of the on-call reads: webhooks across organizations, one webhook's recent deliveries, and
// each organization's backlog. They read the queue (delivery_queue: a row per unfinished delivery,
// `lease_owner` null while it is not leased) and the history (webhook_deliveries), each through an
// index: the queue by its two partial indexes, which is why every read of it states whether the
// row is leased.
import type { Queryable } from '../db/db.js';
import type { Position } from '../http/cursor.js';

const WEBHOOK_COLUMNS = `w.id, w.organization_id, w.integration_id, w.url, w.events, w.description,
  w.active, w.consecutive_failures, w.disabled_at, w.disabled_reason, w.created_at, w.updated_at`;

export interface WebhookRow {
  id: string;
  organization_id: string;
  integration_id: string;
  url: string;
  events: string[];
  description: string | null;
  active: boolean;
  consecutive_failures: number;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookFilters {
  organizationId?: string;
  active?: boolean;
  failing?: boolean;
  consecutiveFailuresAbove?: number;
}

/**
 * Failing: a delivery waits for a retry after a failed attempt (leased again or not: the history
 * row keeps `failed` until the next outcome; the retry gaps are all under an hour, so its failed
 * attempt is of the last hour), or a delivery created in the last hour ended dead.
 */
const FAILING = `(
  EXISTS (SELECT 1 FROM delivery_queue q JOIN webhook_deliveries d ON d.id = q.id
          WHERE q.webhook_id = w.id AND q.lease_owner IS NULL AND d.status = 'failed')
  OR EXISTS (SELECT 1 FROM delivery_queue q JOIN webhook_deliveries d ON d.id = q.id
          WHERE q.webhook_id = w.id AND q.lease_owner IS NOT NULL AND d.status = 'failed')
  OR EXISTS (SELECT 1 FROM webhook_deliveries d
          WHERE d.webhook_id = w.id AND d.created_at > now() - interval '1 hour' AND d.status = 'dead'))`;

/** A page of webhooks, newest first, by webhooks_list or (one organization) webhooks_organization_list. */
export function webhookPageSql(
  filters: WebhookFilters,
  after: Position | null,
  take: number,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [take];
  const where: string[] = [];
  const add = (value: unknown, clause: (n: string) => string) => {
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  if (filters.organizationId !== undefined) add(filters.organizationId, (n) => `w.organization_id = ${n}`);
  if (filters.active !== undefined) add(filters.active, (n) => `w.active = ${n}`);
  if (filters.consecutiveFailuresAbove !== undefined)
    add(filters.consecutiveFailuresAbove, (n) => `w.consecutive_failures > ${n}`);
  if (filters.failing) where.push(FAILING);
  if (after) {
    params.push(after.createdAt, after.id);
    where.push(`(w.created_at, w.id) < ($${params.length - 1}, $${params.length})`);
  }
  const sql = `SELECT ${WEBHOOK_COLUMNS} FROM webhooks w
    ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
    ORDER BY w.created_at DESC, w.id DESC LIMIT $1`;
  return { sql, params };
}

export function listWebhooks(
  db: Queryable,
  filters: WebhookFilters,
  after: Position | null,
  take: number,
): Promise<WebhookRow[]> {
  const { sql, params } = webhookPageSql(filters, after, take);
  return db.query<WebhookRow>(sql, params);
}

export async function findWebhook(db: Queryable, id: string): Promise<WebhookRow | null> {
  const [row] = await db.query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks w WHERE w.id = $1`, [id]);
  return row ?? null;
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  status: string;
  in_flight: boolean;
  attempt: number;
  max_attempts: number;
  next_retry_at: Date | null;
  last_status: number | null;
  last_error: string | null;
  last_duration_ms: number;
  delivered_at: Date | null;
  created_at: Date;
}

/** A webhook's latest deliveries (webhook_deliveries_list), each with whether an attempt is under way. */
export const RECENT_DELIVERIES_SQL = `SELECT d.id, d.event_id, d.event_type, d.status,
    coalesce(q.sent, false) AS in_flight, d.attempt, d.max_attempts, d.next_retry_at,
    d.last_status, d.last_error, d.last_duration_ms, d.delivered_at, d.created_at
  FROM webhook_deliveries d LEFT JOIN delivery_queue q ON q.id = d.id
  WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2`;

export function recentDeliveries(db: Queryable, webhookId: string, take: number): Promise<DeliveryRow[]> {
  return db.query<DeliveryRow>(RECENT_DELIVERIES_SQL, [webhookId, take]);
}

export interface QueueCounts {
  /** Due now and not leased. */
  due: number;
  oldest_due_at: Date | null;
  oldest_due_seconds: number | null;
  /** Leased by a worker: an attempt under way, or next in the worker's queue. */
  in_flight: number;
  /** Not due yet: retries waiting for their time. */
  scheduled: number;
}

/** One webhook's queue, by delivery_queue_due and delivery_queue_held. */
export const WEBHOOK_QUEUE_SQL = `SELECT
    (SELECT count(*)::int FROM delivery_queue
      WHERE webhook_id = $1 AND lease_owner IS NULL AND next_retry_at <= now()) AS due,
    (SELECT min(next_retry_at) FROM delivery_queue
      WHERE webhook_id = $1 AND lease_owner IS NULL AND next_retry_at <= now()) AS oldest_due_at,
    (SELECT count(*)::int FROM delivery_queue WHERE webhook_id = $1 AND lease_owner IS NOT NULL) AS in_flight,
    (SELECT count(*)::int FROM delivery_queue
      WHERE webhook_id = $1 AND lease_owner IS NULL AND next_retry_at > now()) AS scheduled,
    now() AS as_of`;

export async function webhookQueue(db: Queryable, webhookId: string): Promise<QueueCounts> {
  const [row] = await db.query<Omit<QueueCounts, 'oldest_due_seconds'> & { as_of: Date }>(WEBHOOK_QUEUE_SQL, [
    webhookId,
  ]);
  const { as_of, ...counts } = row as NonNullable<typeof row>;
  return { ...counts, oldest_due_seconds: ageSeconds(counts.oldest_due_at, as_of) };
}

const ageSeconds = (since: Date | null, now: Date) =>
  since === null ? null : Math.max(0, (now.getTime() - since.getTime()) / 1000);

export interface OrganizationBacklog {
  organization_id: string;
  due: number;
  oldest_due_at: Date | null;
  oldest_due_seconds: number | null;
  in_flight: number;
  /** Webhooks with deliveries due. */
  webhooks_due: number;
}

/**
 * Per organization, what its webhooks have due and in flight: each webhook's queue read by the
 * queue's partial indexes (no read of the whole queue, which may hold millions in a backlog).
 */
export const BACKLOG_SQL = `SELECT w.organization_id,
    sum(due.n)::int AS due, min(due.oldest) AS oldest_due_at, sum(held.n)::int AS in_flight,
    count(*) FILTER (WHERE due.n > 0)::int AS webhooks_due, now() AS as_of
  FROM webhooks w
  CROSS JOIN LATERAL (SELECT count(*) AS n, min(q.next_retry_at) AS oldest FROM delivery_queue q
    WHERE q.webhook_id = w.id AND q.lease_owner IS NULL AND q.next_retry_at <= now()) due
  CROSS JOIN LATERAL (SELECT count(*) AS n FROM delivery_queue q
    WHERE q.webhook_id = w.id AND q.lease_owner IS NOT NULL) held
  WHERE ($1::uuid IS NULL OR w.organization_id = $1::uuid)
  GROUP BY w.organization_id
  HAVING sum(due.n) > 0 OR sum(held.n) > 0
  ORDER BY min(due.oldest) ASC NULLS LAST, w.organization_id
  LIMIT $2`;

export async function backlog(
  db: Queryable,
  organizationId: string | null,
  take: number,
): Promise<OrganizationBacklog[]> {
  const rows = await db.query<Omit<OrganizationBacklog, 'oldest_due_seconds'> & { as_of: Date }>(
    BACKLOG_SQL,
    [organizationId, take],
  );
  return rows.map(({ as_of, ...row }) => ({
    ...row,
    oldest_due_seconds: ageSeconds(row.oldest_due_at, as_of),
  }));
}

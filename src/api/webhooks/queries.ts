// SQL of the webhook management API. A webhook belongs to its integration: every statement is
// keyed by (integration_id, id), so another integration's webhook is simply not found.
import type { Queryable } from '../../db/db.js';

export interface WebhookRow {
  id: string;
  integration_id: string;
  organization_id: string;
  url: string;
  events: string[];
  active: boolean;
  description: string | null;
  consecutive_failures: number;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id, integration_id, organization_id, url, events, active, description, consecutive_failures,
  disabled_at, disabled_reason, created_at, updated_at`;

export function listWebhooks(q: Queryable, integrationId: string): Promise<WebhookRow[]> {
  return q.query<WebhookRow>(
    `SELECT ${COLUMNS} FROM webhooks WHERE integration_id = $1 ORDER BY created_at DESC, id DESC`,
    [integrationId],
  );
}

export async function findWebhook(
  q: Queryable,
  integrationId: string,
  id: string,
): Promise<WebhookRow | null> {
  const [row] = await q.query<WebhookRow>(
    `SELECT ${COLUMNS} FROM webhooks WHERE integration_id = $1 AND id = $2`,
    [integrationId, id],
  );
  return row ?? null;
}

/**
 * How many webhooks the integration has, holding its row locked until the transaction ends, so
 * that concurrent creations count one after the other and the cap holds.
 */
export async function countWebhooksLocked(q: Queryable, integrationId: string): Promise<number> {
  await q.query('SELECT 1 FROM integrations WHERE id = $1 FOR UPDATE', [integrationId]);
  const [row] = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM webhooks WHERE integration_id = $1',
    [integrationId],
  );
  return row?.n ?? 0;
}

export interface NewWebhook {
  id: string;
  integrationId: string;
  organizationId: string;
  url: string;
  events: string[];
  description: string | null;
  secret: Buffer;
}

export async function insertWebhook(q: Queryable, w: NewWebhook): Promise<WebhookRow> {
  const [row] = await q.query<WebhookRow>(
    `INSERT INTO webhooks (id, integration_id, organization_id, url, events, description, secret)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     RETURNING ${COLUMNS}`,
    [w.id, w.integrationId, w.organizationId, w.url, w.events, w.description, w.secret],
  );
  return row as WebhookRow;
}

export interface WebhookChanges {
  url?: string;
  events?: string[];
  description?: string | null;
  active?: boolean;
}

/**
 * Applies the fields given. Reactivation clears the failure count and why it was disabled;
 * pausing records when, and that it was asked for.
 */
export async function updateWebhook(
  q: Queryable,
  integrationId: string,
  id: string,
  c: WebhookChanges,
): Promise<WebhookRow | null> {
  const [row] = await q.query<WebhookRow>(
    `UPDATE webhooks SET
       url = CASE WHEN $3 THEN $4 ELSE url END,
       events = CASE WHEN $5 THEN $6::text[] ELSE events END,
       description = CASE WHEN $7 THEN $8 ELSE description END,
       consecutive_failures = CASE WHEN $9 IS TRUE THEN 0 ELSE consecutive_failures END,
       disabled_at = CASE WHEN $9 IS TRUE THEN NULL
                          WHEN $9 IS FALSE AND active THEN now() ELSE disabled_at END,
       disabled_reason = CASE WHEN $9 IS TRUE THEN NULL
                              WHEN $9 IS FALSE AND active THEN 'paused' ELSE disabled_reason END,
       active = coalesce($9, active),
       updated_at = now()
     WHERE integration_id = $1 AND id = $2
     RETURNING ${COLUMNS}`,
    [
      integrationId,
      id,
      c.url !== undefined,
      c.url ?? null,
      c.events !== undefined,
      c.events ?? null,
      c.description !== undefined,
      c.description ?? null,
      c.active ?? null,
    ],
  );
  return row ?? null;
}

/**
 * Removes the webhook and, through the foreign key, its delivery history. Booking snapshots that
 * only its deliveries needed are dropped by the worker's housekeeping.
 */
export async function deleteWebhook(q: Queryable, integrationId: string, id: string): Promise<boolean> {
  const rows = await q.query('DELETE FROM webhooks WHERE integration_id = $1 AND id = $2 RETURNING 1', [
    integrationId,
    id,
  ]);
  return rows.length > 0;
}

/** The new secret takes over; the current one stays valid `overlapMinutes` more (0: not at all). */
export async function rotateSecret(
  q: Queryable,
  integrationId: string,
  id: string,
  secret: (webhookId: string) => Buffer,
  overlapMinutes: number,
): Promise<Date | null> {
  const [row] = await q.query<{ until: Date }>(
    `UPDATE webhooks SET previous_secret = secret, secret = $3,
       previous_secret_until = now() + make_interval(mins => $4::int), updated_at = now()
     WHERE integration_id = $1 AND id = $2
     RETURNING previous_secret_until AS until`,
    [integrationId, id, secret(id), overlapMinutes],
  );
  return row?.until ?? null;
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivering' | 'succeeded' | 'failed' | 'dead';
  attempt: number;
  max_attempts: number;
  next_retry_at: Date | null;
  last_status: number | null;
  last_error: string | null;
  last_duration_ms: number;
  delivered_at: Date | null;
  created_at: Date;
}

export function listDeliveries(q: Queryable, webhookId: string, take: number): Promise<DeliveryRow[]> {
  return q.query<DeliveryRow>(
    `SELECT id, event_id, event_type, status, attempt, max_attempts, next_retry_at, last_status, last_error,
            last_duration_ms, delivered_at, created_at
     FROM delivery_states WHERE webhook_id = $1
     ORDER BY created_at DESC, id DESC LIMIT $2`,
    [webhookId, take],
  );
}

/**
 * A webhook.test event for one webhook and its delivery, queued at once for the workers; null when
 * the webhook is gone. Within a transaction: the webhook's row is held (KEY SHARE) until it ends,
 * so a delete running meanwhile either finished first (null) or waits and takes the new delivery
 * with it, where inserting the delivery blind failed on the foreign key.
 */
export async function queueTest(
  q: Queryable,
  webhook: Pick<WebhookRow, 'id' | 'organization_id'>,
): Promise<{ event_id: string; delivery_id: string } | null> {
  const held = await q.query('SELECT 1 FROM webhooks WHERE id = $1 FOR KEY SHARE', [webhook.id]);
  if (held.length === 0) return null;
  const [event] = await q.query<{ id: string }>(
    `INSERT INTO events (organization_id, type, resource_type, resource_id)
     VALUES ($1, 'webhook.test', 'webhook', $2) RETURNING id`,
    [webhook.organization_id, webhook.id],
  );
  const eventId = (event as { id: string }).id;
  const [delivery] = await q.query<{ id: string }>(
    `WITH d AS (
       INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, next_retry_at)
       VALUES ($1, $2, 'webhook.test', now()) RETURNING id, webhook_id, event_id, next_retry_at
     ), queued AS (
       INSERT INTO delivery_queue (id, webhook_id, event_id, next_retry_at) SELECT * FROM d
     )
     SELECT id FROM d`,
    [webhook.id, eventId],
  );
  // Wakes the worker that owns the webhook's partition (src/db/engine.sql).
  await q.query("SELECT pg_notify('svc_deliveries', current_schema() || ' ' || webhook_partition($1))", [
    webhook.id,
  ]);
  return { event_id: eventId, delivery_id: (delivery as { id: string }).id };
}

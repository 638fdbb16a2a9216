// The public Webhook and WebhookDelivery: the stored secrets and the owner columns never leave.
import type { DeliveryRow, WebhookRow } from './queries.js';
import type { Webhook, WebhookDelivery } from './schemas.js';

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export function webhookView(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    active: row.active,
    description: row.description,
    consecutive_failures: row.consecutive_failures,
    disabled_at: iso(row.disabled_at),
    disabled_reason: row.disabled_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function deliveryView(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    event_id: row.event_id,
    event_type: row.event_type as WebhookDelivery['event_type'],
    status: row.status,
    attempt: row.attempt,
    max_attempts: row.max_attempts,
    next_retry_at: iso(row.next_retry_at),
    last_status: row.last_status,
    last_error: row.last_error,
    last_duration_ms: row.last_duration_ms,
    delivered_at: iso(row.delivered_at),
    created_at: row.created_at.toISOString(),
  };
}

// Schemas of the webhook management API. The url and the event list are checked beyond their
// shape in routes.ts (resolution, known types), so those answers name the field the same way.
import { type Static, Type } from 'typebox';
import { DateTime, Nullable, StringEnum, Uuid } from '../../http/schemas.js';
import { Booking } from '../bookings/schemas.js';
import { BOOKING_EVENT_TYPES, EVENT_TYPES } from '../events/schemas.js';
import { MAX_LIMIT } from '../pagination.js';

export const MAX_WEBHOOKS_PER_INTEGRATION = 10;
/** What a webhook may subscribe to: the booking events, or `*` alone for all of them. */
export const SUBSCRIBABLE = [...BOOKING_EVENT_TYPES, '*'] as const;

export const MAX_URL_LENGTH = 500;
const Url = Type.String({
  maxLength: MAX_URL_LENGTH,
  description: 'https:// on port 443, resolving to public addresses only',
});
const Events = Type.Array(Type.String({ maxLength: 100 }), {
  minItems: 1,
  maxItems: SUBSCRIBABLE.length,
  description: 'Event types, or ["*"] for all',
});
// Free text, but PostgreSQL text cannot hold U+0000: refused here instead of failing the insert.
const Description = Type.String({ maxLength: 200, pattern: '^[^\\u0000]*$' });

export const WebhookCreateBody = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Description) },
  { additionalProperties: false },
);
export type WebhookCreateBody = Static<typeof WebhookCreateBody>;

export const WebhookPatchBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Nullable(Description)),
    active: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type WebhookPatchBody = Static<typeof WebhookPatchBody>;

export const RotateBody = Type.Object(
  { overlap_minutes: Type.Integer({ minimum: 0, maximum: 1440 }) },
  { additionalProperties: false },
);

export const DeliveryListQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, description: `1 to ${MAX_LIMIT}, default 25; more is cut.` }),
    ),
  },
  { additionalProperties: false },
);

// Any string reaches the handler: an id that cannot name a webhook is a 404, like a missing one.
export const WebhookPath = Type.Object({
  id: Type.String({ description: 'Webhook UUID; any other value answers 404' }),
});

const webhookFields = {
  id: Uuid,
  url: Type.String(),
  events: Type.Array(Type.String()),
  active: Type.Boolean(),
  description: Nullable(Type.String()),
  consecutive_failures: Type.Integer(),
  disabled_at: Nullable(DateTime),
  disabled_reason: Nullable(Type.String()),
  created_at: DateTime,
  updated_at: DateTime,
};

export const Webhook = Type.Object(webhookFields);
export type Webhook = Static<typeof Webhook>;

/** The creation answer: the only one with the secret. A replay has `secret: null`. */
export const WebhookCreated = Type.Object({
  ...webhookFields,
  secret: Nullable(Type.String()),
  secret_shown_once: Type.Optional(Type.Boolean()),
});

export const WebhookList = Type.Object({ data: Type.Array(Webhook) });

export const RotatedSecret = Type.Object({
  id: Uuid,
  secret: Type.String(),
  previous_secret_valid_until: DateTime,
});

export const TestQueued = Type.Object({
  delivery_id: Uuid,
  event_id: Uuid,
  status: Type.Literal('pending'),
});

export const DELIVERY_STATUSES = ['pending', 'delivering', 'succeeded', 'failed', 'dead'] as const;

export const WebhookDelivery = Type.Object({
  id: Uuid,
  event_id: Uuid,
  event_type: StringEnum([...EVENT_TYPES]),
  status: StringEnum([...DELIVERY_STATUSES]),
  attempt: Type.Integer(),
  max_attempts: Type.Integer(),
  next_retry_at: Nullable(DateTime),
  last_status: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  last_duration_ms: Type.Integer(),
  delivered_at: Nullable(DateTime),
  created_at: DateTime,
});
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const DeliveryList = Type.Object({ data: Type.Array(WebhookDelivery) });

/**
 * The body of a delivery (built in src/delivery/body.ts), for the published document. `data` is
 * the booking, or null for `webhook.test` and for an executor that no longer sees the booking.
 */
export const DeliveryBody = Type.Object({
  id: Uuid,
  type: StringEnum([...EVENT_TYPES]),
  version: Type.Integer({ const: 1 }),
  created_at: DateTime,
  organization: Type.Object({ id: Uuid }),
  resource: Type.Object({ type: StringEnum(['booking', 'webhook']), id: Uuid }),
  changes: Type.Array(Type.String()),
  previous_status: Nullable(Type.String()),
  data: Type.Union([Booking, Type.Null()]),
});

// What the route schemas cannot say about an operation: its name, summary and description for
// people, and its group. Keyed by method and path as published; the generator refuses a route
// that has no entry here, so a new route cannot be published without words for it.

export interface OperationText {
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** The operation can answer 409 `conflict` besides the idempotency ones. */
  conflict?: boolean;
}

export const TAGS = [
  {
    name: 'Integration',
    description: 'The identity of the calling key: integration, organization, scopes, limits.',
  },
  {
    name: 'Bookings',
    description:
      'Bookings where the organization is originator or executor. `passenger` exists only with `passengers:read`, `pricing` only with `pricing:read`; the pricing shape depends on `role`.',
  },
  {
    name: 'External ids',
    description: 'One id of your own per booking and integration, to reconcile both systems.',
  },
  { name: 'Customers', description: 'Customers of the organization (not deleted).' },
  { name: 'Drivers', description: 'Drivers of the organization.' },
  { name: 'Vehicles', description: 'Vehicles of the organization.' },
  {
    name: 'Events',
    description:
      'The event log, most recent first, kept at least 30 days: walk it to reconcile after an outage longer than the webhook retries. Each event is also delivered to the webhooks subscribed to its type (the Webhooks section). `booking.started` fires when the driver sets off (`en_route`); the move on to `in_progress` is a `booking.updated`; the full mapping is in the description of `Event.type`.',
  },
  {
    name: 'Webhook management',
    description:
      'Create and manage the webhooks that receive signed deliveries of the booking life cycle to HTTPS destinations. Needs webhooks enabled for the organization (else 403 `api_disabled`). At most 10 webhooks per integration.',
  },
  { name: 'Contract', description: 'This document.' },
] as const;

export type Tag = (typeof TAGS)[number]['name'];

const PAGE_NOTE =
  'Ordered by `created_at` descending, ties by `id` descending. Repeat the filters on every page: the cursor keeps the position, not the filters.';

export const OPERATIONS: Record<string, OperationText & { tag: Tag }> = {
  'GET /integrations/me': {
    operationId: 'getIntegration',
    tag: 'Integration',
    summary: 'Who am I',
    description:
      'The integration, organization and key of the caller, its effective scopes and its limits. Any valid key.',
  },
  'GET /bookings': {
    operationId: 'listBookings',
    tag: 'Bookings',
    summary: 'List bookings',
    description: `Bookings where the organization is originator or executor (received through the exchange: \`role: executor\`). With \`external_id\` every other filter is ignored and the answer is the linked booking as a list of one, or empty. ${PAGE_NOTE}`,
  },
  'GET /bookings/{id}': {
    operationId: 'getBooking',
    tag: 'Bookings',
    summary: 'Get a booking',
    description:
      "By booking UUID or booking number (digits). Another organization's booking is a 404 like a missing one.",
  },
  'GET /bookings/{id}/external-id': {
    operationId: 'getBookingExternalId',
    tag: 'External ids',
    summary: 'Read the external id of a booking',
    description: 'Without a link, `external_id`, `created_at` and `updated_at` are null (not a 404).',
  },
  'PUT /bookings/{id}/external-id': {
    operationId: 'putBookingExternalId',
    tag: 'External ids',
    summary: 'Store the external id of a booking',
    description:
      'The same pair again is an idempotent 200; another value replaces the old one. A value already linked to another booking of this integration is 409 `conflict`.',
    conflict: true,
  },
  'DELETE /bookings/{id}/external-id': {
    operationId: 'deleteBookingExternalId',
    tag: 'External ids',
    summary: 'Remove the external id of a booking',
    description: "404 when the booking is not the organization's or had no link.",
  },
  'GET /customers': {
    operationId: 'listCustomers',
    tag: 'Customers',
    summary: 'List customers',
    description: PAGE_NOTE,
  },
  'GET /customers/{id}': { operationId: 'getCustomer', tag: 'Customers', summary: 'Get a customer' },
  'GET /drivers': {
    operationId: 'listDrivers',
    tag: 'Drivers',
    summary: 'List drivers',
    description: PAGE_NOTE,
  },
  'GET /drivers/{id}': { operationId: 'getDriver', tag: 'Drivers', summary: 'Get a driver' },
  'GET /vehicles': {
    operationId: 'listVehicles',
    tag: 'Vehicles',
    summary: 'List vehicles',
    description: PAGE_NOTE,
  },
  'GET /vehicles/{id}': { operationId: 'getVehicle', tag: 'Vehicles', summary: 'Get a vehicle' },
  'GET /events': {
    operationId: 'listEvents',
    tag: 'Events',
    summary: 'List events',
    description: `Most recent first. \`webhook.test\` never appears. Empty until the organization's event output is enabled. ${PAGE_NOTE}`,
  },
  'GET /webhooks': {
    operationId: 'listWebhooks',
    tag: 'Webhook management',
    summary: 'List webhooks',
    description: 'Newest first, no pagination (at most 10).',
  },
  'POST /webhooks': {
    operationId: 'createWebhook',
    tag: 'Webhook management',
    summary: 'Create a webhook',
    description:
      'The answer is the only one that shows `secret`. Subscribing needs `bookings:read` too (403 `insufficient_scope`). An invalid url, an unknown event or an 11th webhook is 400 `validation_error` with `details.field`. A replay of an `Idempotency-Key` answers `Idempotent-Replayed: true`, `secret: null` and `secret_shown_once: true`.',
  },
  'GET /webhooks/{id}': { operationId: 'getWebhook', tag: 'Webhook management', summary: 'Get a webhook' },
  'PATCH /webhooks/{id}': {
    operationId: 'updateWebhook',
    tag: 'Webhook management',
    summary: 'Change a webhook',
    description:
      'At least one field. `active: false` pauses; `active: true` reactivates (also after automatic deactivation) and sets `consecutive_failures` to 0.',
  },
  'DELETE /webhooks/{id}': {
    operationId: 'deleteWebhook',
    tag: 'Webhook management',
    summary: 'Delete a webhook',
    description: 'Its delivery history goes with it.',
  },
  'POST /webhooks/{id}/test': {
    operationId: 'testWebhook',
    tag: 'Webhook management',
    summary: 'Send a test delivery',
    description:
      'Queues a `webhook.test` event for this webhook, delivered and signed like any other; follow it through the deliveries. 5 per minute per destination host and 60 per hour per organization (429 with `Retry-After`).',
  },
  'POST /webhooks/{id}/rotate-secret': {
    operationId: 'rotateWebhookSecret',
    tag: 'Webhook management',
    summary: 'Rotate the secret of a webhook',
    description:
      'During `overlap_minutes` every delivery carries two signatures, the new one first; with 0 the previous secret stops at once. `Idempotency-Key` is not accepted.',
  },
  'GET /webhooks/{id}/deliveries': {
    operationId: 'listWebhookDeliveries',
    tag: 'Webhook management',
    summary: 'List the deliveries of a webhook',
    description: 'Latest first, no cursor.',
  },
  'GET /openapi.json': {
    operationId: 'getOpenApiDocument',
    tag: 'Contract',
    summary: 'This document',
    description: 'The OpenAPI 3.1 document of the API. No authentication.',
  },
};

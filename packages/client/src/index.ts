// @svc/integration-client: a typed client of the Integration API v1 (generated from the published
// document) and the verification of the webhooks it delivers.
export * from './client.js';
export type {
  BookingEvent,
  BookingEventType,
  BookingStatus,
  Place,
  WebhookEvent,
  WebhookEventType,
  WebhookTestEvent,
} from './events.js';
export { type Listener, type ListenOptions, type ListenSummary, listen, newSecret } from './listen.js';
export {
  DEFAULT_TOLERANCE_SECONDS,
  type VerifyOptions,
  verifyWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from './verify.js';

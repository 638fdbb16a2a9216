// @svc/integration-client: what an integrator's code needs beside plain HTTP.
export type {
  Booking,
  BookingEvent,
  BookingEventType,
  BookingStatus,
  Place,
  WebhookEvent,
  WebhookEventType,
  WebhookTestEvent,
} from './events.js';
export {
  DEFAULT_TOLERANCE_SECONDS,
  type VerifyOptions,
  verifyWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from './verify.js';

// The body of a webhook delivery (version 1), as docs/webhooks.md describes it. `data` of a booking
// event is the booking exactly as `GET /bookings/{id}` shows it to the receiving organization, so
// it is typed by the API's `Booking` (generated from the published document), not a copy of it.
import type { Booking, Schemas } from './client.js';

/** Every type a delivery may carry: the booking events of the log, and `webhook.test`. */
export type WebhookEventType = Schemas['WebhookEvent']['type'];

export type BookingEventType = Exclude<WebhookEventType, 'webhook.test'>;

export type BookingStatus = Booking['status'];

export type Place = NonNullable<Booking['pickup']>;

interface Envelope<T extends WebhookEventType, R extends string, D> {
  /** The event id: the `X-SVC-Event-Id` header, and the event's id in `GET /events`. */
  id: string;
  type: T;
  version: 1;
  created_at: string;
  organization: { id: string };
  resource: { type: R; id: string };
  /** Internal column names that changed; empty for `booking.created` and `webhook.test`. */
  changes: string[];
  /** The previous internal status name, when the status changed. */
  previous_status: string | null;
  data: D;
}

/**
 * A booking event. `data` is null when the receiving organization no longer sees the booking
 * (an executor that lost it).
 */
export type BookingEvent = Envelope<BookingEventType, 'booking', Booking | null>;

/** Sent by `POST /webhooks/{id}/test`; never in the event log. */
export type WebhookTestEvent = Envelope<'webhook.test', 'webhook', null>;

export type WebhookEvent = BookingEvent | WebhookTestEvent;

// The body of a webhook delivery (version 1), as docs/webhooks.md describes it. `data` of a booking
// event is the booking exactly as `GET /bookings/{id}` shows it to the receiving organization.

export type BookingEventType =
  | 'booking.created'
  | 'booking.updated'
  | 'booking.assigned'
  | 'booking.started'
  | 'booking.completed'
  | 'booking.cancelled'
  | 'booking.no_show'
  | 'booking.deleted';

export type WebhookEventType = BookingEventType | 'webhook.test';

export type BookingStatus =
  | 'requested'
  | 'unconfirmed'
  | 'confirmed'
  | 'en_route'
  | 'in_progress'
  | 'completed'
  | 'cancelled'
  | 'no_show'
  | 'rejected';

export interface Place {
  address: string;
  lat: number;
  lng: number;
}

export interface Booking {
  id: string;
  reference: string | null;
  external_id: string | null;
  status: BookingStatus;
  service_type: 'transfer' | 'hourly';
  hours: number | null;
  pickup_at: string;
  end_at: string | null;
  pickup: Place | null;
  destination: Place | null;
  distance_km: number | null;
  flight: { number: string | null; pending: boolean } | null;
  passengers: {
    count: number;
    luggage: number;
    luggage_big: number;
    luggage_small: number;
    baby_seats: number;
    child_seats: number;
    booster_seats: number;
    wheelchair: boolean;
  };
  vehicle_category: 'sedan' | 'van' | 'sedan_vip' | 'van_vip' | null;
  customer: { id: string; name: string | null } | null;
  assignment: {
    external: boolean;
    driver: { id: string; name: string | null; nickname: string | null } | null;
    vehicle: { id: string; plate: string | null; model: string | null } | null;
  };
  role: 'originator' | 'executor' | 'originator_and_executor';
  channel: string | null;
  confirmation: { mode: string | null; confirmed_at: string | null };
  event_reference: string | null;
  created_at: string;
  /** Only with the `passengers:read` scope at the attempt. */
  passenger?: { name: string | null; phone: string | null; email: string | null };
  /** Only with the `pricing:read` scope at the attempt; null when no price was stored. */
  pricing?: Record<string, unknown> | null;
}

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

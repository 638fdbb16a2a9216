// Schemas of the event log read API.
import { type Static, Type } from 'typebox';
import { DateTime, Nullable, StringEnum, Uuid } from '../../http/schemas.js';
import { PageQuery } from '../pagination.js';

export const BOOKING_EVENT_TYPES = [
  'booking.created',
  'booking.updated',
  'booking.assigned',
  'booking.started',
  'booking.completed',
  'booking.cancelled',
  'booking.no_show',
  'booking.deleted',
] as const;

/** `webhook.test` is a valid type to ask for; it is never in the log, so it matches nothing. */
export const EVENT_TYPES = [...BOOKING_EVENT_TYPES, 'webhook.test'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const EventListQuery = Type.Object(
  {
    type: Type.Optional(StringEnum([...EVENT_TYPES])),
    resource_id: Type.Optional(Uuid),
    ...PageQuery,
  },
  { additionalProperties: false },
);
export type EventListQuery = Static<typeof EventListQuery>;

// `webhook.test` is never in the log, so an event's type is one of the booking events.
export const Event = Type.Object({
  id: Uuid,
  type: StringEnum([...BOOKING_EVENT_TYPES]),
  version: Type.Integer(),
  created_at: DateTime,
  resource: Type.Object({ type: Type.Literal('booking'), id: Uuid }),
  changes: Type.Array(Type.String()),
  previous_status: Nullable(Type.String()),
  reference: Nullable(Type.String()),
});
export type Event = Static<typeof Event>;

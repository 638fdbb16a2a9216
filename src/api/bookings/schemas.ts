// Schemas of the bookings read API: the query of the list, the path of a single booking and the
// public Booking shape (also the `data` of booking webhooks).
import { type Static, type TOptional, type TProperties, Type } from 'typebox';
import {
  BOOKING_CHANNELS,
  BOOKING_STATUSES,
  SERVICE_TYPES,
  VEHICLE_CATEGORIES,
} from '../../domain/bookings.js';
import { DateTime, DateTimeInput, Nullable, StringEnum, Uuid } from '../../http/schemas.js';
import { PageQuery } from '../pagination.js';

export const BOOKING_ROLES = ['originator', 'executor', 'originator_and_executor'] as const;

export const BookingListQuery = Type.Object(
  {
    status: Type.Optional(StringEnum([...BOOKING_STATUSES])),
    customer_id: Type.Optional(Uuid),
    pickup_from: Type.Optional(DateTimeInput),
    pickup_to: Type.Optional(DateTimeInput),
    created_from: Type.Optional(DateTimeInput),
    created_to: Type.Optional(DateTimeInput),
    external_id: Type.Optional(
      Type.String({ maxLength: 200, description: 'When present every other filter is ignored.' }),
    ),
    ...PageQuery,
  },
  { additionalProperties: false },
);
export type BookingListQuery = Static<typeof BookingListQuery>;

/** The id is a UUID or a booking number; anything else is a 404, decided by the handler. */
export const BookingIdParams = Type.Object({
  id: Type.String({ description: 'Booking UUID or booking number (digits); any other value answers 404' }),
});

const Place = Type.Object({ address: Type.String(), lat: Type.Number(), lng: Type.Number() });

const Extra = Type.Object({ name: Type.String(), amount: Type.Number(), per_passenger: Type.Boolean() });

/** Not described by the contract beyond "null in the common case": passed through as stored. */
const Unspecified = Type.Unknown();

/** The pricing an originator (or originator_and_executor) sees: every member, always present. */
export const OriginatorPricing = Type.Object(
  {
    currency: Type.String(),
    total: Type.Number(),
    vat_pct: Type.Number(),
    sale_total: Nullable(Type.Number()),
    extras: Type.Array(Extra),
    diet: Unspecified,
    parking: Unspecified,
    night_surcharge: Unspecified,
    payment_mode: Type.String(),
    payment_status: Type.String(),
    paid_at: Nullable(DateTime),
  },
  { additionalProperties: false },
);

/**
 * The pricing an executor sees: its own net only, never the originator's or its customer's price.
 * A number, as the contract says: without a stored net there is no executor pricing (absent).
 */
export const ExecutorPricing = Type.Object(
  { currency: Type.String(), net_executor: Type.Number() },
  { additionalProperties: false },
);

/** Every member of `properties` made optional. */
function optionalMembers<P extends TProperties>(properties: P): { [K in keyof P]: TOptional<P[K]> } {
  return Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, Type.Optional(v)])) as never;
}

/**
 * The response schema of both shapes: one object whose members are those of the two shapes, all
 * optional but `currency`; the view fills one shape or the other. The published document shows the
 * two shapes as a `oneOf` (src/openapi), but the serializer is given this one object, because
 * fast-json-stringify writes a plain object directly whereas a `oneOf`/`anyOf` makes it validate
 * every booking against each branch at run time to choose one.
 */
export const Pricing = Type.Object(
  {
    ...optionalMembers(OriginatorPricing.properties),
    ...optionalMembers(ExecutorPricing.properties),
    currency: Type.String(),
  },
  { additionalProperties: false },
);

export const Booking = Type.Object({
  id: Uuid,
  reference: Nullable(Type.String()),
  external_id: Nullable(Type.String()),
  status: StringEnum([...BOOKING_STATUSES]),
  service_type: StringEnum([...SERVICE_TYPES]),
  hours: Nullable(Type.Number()),
  pickup_at: DateTime,
  end_at: Nullable(DateTime),
  pickup: Nullable(Place),
  destination: Nullable(Place),
  distance_km: Nullable(Type.Number()),
  // A string, as the contract says: absent while the passenger has not given it (pending).
  flight: Nullable(Type.Object({ number: Type.Optional(Type.String()), pending: Type.Boolean() })),
  passengers: Type.Object({
    count: Type.Integer(),
    luggage: Type.Integer(),
    luggage_big: Type.Integer(),
    luggage_small: Type.Integer(),
    baby_seats: Type.Integer(),
    child_seats: Type.Integer(),
    booster_seats: Type.Integer(),
    wheelchair: Type.Boolean(),
  }),
  vehicle_category: Nullable(StringEnum([...VEHICLE_CATEGORIES])),
  customer: Nullable(Type.Object({ id: Uuid, name: Nullable(Type.String()) })),
  assignment: Type.Object({
    external: Type.Boolean(),
    driver: Nullable(
      Type.Object({ id: Uuid, name: Nullable(Type.String()), nickname: Nullable(Type.String()) }),
    ),
    vehicle: Nullable(
      Type.Object({ id: Uuid, plate: Nullable(Type.String()), model: Nullable(Type.String()) }),
    ),
  }),
  role: StringEnum([...BOOKING_ROLES]),
  channel: Nullable(StringEnum([...BOOKING_CHANNELS])),
  // A string and a date-time, as the contract says: each absent while the platform holds none
  // (a booking not yet confirmed), never null.
  confirmation: Type.Object({ mode: Type.Optional(Type.String()), confirmed_at: Type.Optional(DateTime) }),
  event_reference: Nullable(Type.String()),
  created_at: DateTime,
  // Present only with passengers:read / pricing:read: absent, never null, without the scope.
  passenger: Type.Optional(
    Type.Object({
      name: Nullable(Type.String()),
      phone: Nullable(Type.String()),
      email: Nullable(Type.String()),
    }),
  ),
  // An object, as the contract says: absent without the scope, and absent with it when the platform
  // holds no price for the caller's role (no price stored; for an executor, no net stored). Never null.
  pricing: Type.Optional(Pricing),
});
export type Booking = Static<typeof Booking>;

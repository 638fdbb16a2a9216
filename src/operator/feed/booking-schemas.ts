// The booking as the platform pushes it (PUT replaces, PATCH changes some fields) and as the feed
// answers it: the stored data, including what the public API never shows (`internal`, the
// executor's net). Status uses the internal names, as the platform keeps them.
import { type Static, Type } from 'typebox';
import {
  BOOKING_CHANNELS,
  INTERNAL_STATUSES,
  SERVICE_TYPES,
  VEHICLE_CATEGORIES,
} from '../../domain/bookings.js';
import { DateTime, DateTimeInput, Nullable, StringEnum, Uuid } from '../../http/schemas.js';
import { OptionalText, Text } from './schemas.js';

const strict = { additionalProperties: false } as const;
const Amount = Type.Number({ minimum: 0 });
const OptionalAmount = Type.Optional(Nullable(Amount));
const Latitude = Type.Number({ minimum: -90, maximum: 90 });
const Longitude = Type.Number({ minimum: -180, maximum: 180 });
const Count = Type.Integer({ minimum: 0, maximum: 99 });

export const Place = Type.Object({ address: Text(500), lat: Latitude, lng: Longitude }, strict);

export const Flight = Type.Object(
  { number: Nullable(Text(20)), pending: Type.Optional(Type.Boolean()) },
  strict,
);

export const Passengers = Type.Object(
  {
    count: Type.Integer({ minimum: 1, maximum: 999 }),
    luggage: Type.Optional(Count),
    luggage_big: Type.Optional(Count),
    luggage_small: Type.Optional(Count),
    baby_seats: Type.Optional(Count),
    child_seats: Type.Optional(Count),
    booster_seats: Type.Optional(Count),
    wheelchair: Type.Optional(Type.Boolean()),
  },
  strict,
);

export const Confirmation = Type.Object(
  { mode: Type.Optional(Nullable(Text(50))), confirmed_at: Type.Optional(Nullable(DateTimeInput)) },
  strict,
);

export const Passenger = Type.Object(
  { name: OptionalText(200), phone: OptionalText(50), email: OptionalText(254) },
  strict,
);

const Extra = Type.Object({ name: Text(200), amount: Type.Number(), per_passenger: Type.Boolean() }, strict);

export const Pricing = Type.Object(
  {
    currency: Type.String({ pattern: '^[A-Z]{3}$' }),
    total: Amount,
    vat_pct: Type.Number({ minimum: 0, maximum: 100 }),
    sale_total: OptionalAmount,
    extras: Type.Optional(Type.Array(Extra, { maxItems: 50 })),
    // Amounts; the contract does not show their shape yet and the platform sends a number or null.
    diet: OptionalAmount,
    parking: OptionalAmount,
    night_surcharge: OptionalAmount,
    payment_mode: Text(50),
    payment_status: Text(50),
    paid_at: Type.Optional(Nullable(DateTimeInput)),
    net_executor: OptionalAmount,
  },
  strict,
);

const ChatLine = Type.Object(
  { from: Text(100), text: Type.String({ maxLength: 5000 }), at: Type.Optional(DateTimeInput) },
  strict,
);

/** Stored, never exposed by the public API, never announced by an event. */
export const Internal = Type.Object(
  {
    notes: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    observations: Type.Optional(Nullable(Type.String({ maxLength: 10_000 }))),
    chat: Type.Optional(Nullable(Type.Array(ChatLine, { maxItems: 1000 }))),
    pickup_sign: OptionalText(200),
    gps: Type.Optional(
      Nullable(Type.Object({ lat: Latitude, lng: Longitude, at: Type.Optional(DateTimeInput) }, strict)),
    ),
  },
  strict,
);

const OptionalUuid = Type.Optional(Nullable(Uuid));

export const BookingBody = Type.Object(
  {
    status: StringEnum([...INTERNAL_STATUSES]),
    service_type: StringEnum([...SERVICE_TYPES]),
    hours: Type.Optional(Nullable(Type.Number({ exclusiveMinimum: 0, maximum: 9999 }))),
    pickup_at: DateTimeInput,
    end_at: Type.Optional(Nullable(DateTimeInput)),
    pickup: Type.Optional(Nullable(Place)),
    destination: Type.Optional(Nullable(Place)),
    distance_km: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 99_999_999 }))),
    flight: Type.Optional(Nullable(Flight)),
    passengers: Passengers,
    vehicle_category: Type.Optional(Nullable(StringEnum([...VEHICLE_CATEGORIES]))),
    customer_id: OptionalUuid,
    executor_organization_id: OptionalUuid,
    driver_id: OptionalUuid,
    vehicle_id: OptionalUuid,
    channel: Type.Optional(Nullable(StringEnum([...BOOKING_CHANNELS]))),
    confirmation: Type.Optional(Nullable(Confirmation)),
    event_reference: OptionalText(100),
    passenger: Type.Optional(Nullable(Passenger)),
    pricing: Type.Optional(Nullable(Pricing)),
    internal: Type.Optional(Nullable(Internal)),
    // Omitted: generated on creation, kept on replace.
    reference: Type.Optional(Type.String({ pattern: '^[0-9]{1,32}$' })),
    // Omitted: now() on creation, kept on replace.
    created_at: Type.Optional(DateTimeInput),
  },
  strict,
);

/** Only the fields sent change; a nested object sent replaces the stored one whole. */
export const BookingPatch = Type.Partial(BookingBody, { additionalProperties: false, minProperties: 1 });

export type BookingInput = Static<typeof BookingBody>;
export type BookingPatchInput = Static<typeof BookingPatch>;

/** The stored booking, as the operator (trusted) sees it. */
export const BookingRecord = Type.Object({
  id: Uuid,
  originator_organization_id: Uuid,
  executor_organization_id: Nullable(Uuid),
  reference: Type.String(),
  status: Type.String(),
  service_type: Type.String(),
  hours: Nullable(Type.Number()),
  pickup_at: DateTime,
  end_at: Nullable(DateTime),
  pickup: Nullable(Place),
  destination: Nullable(Place),
  distance_km: Nullable(Type.Number()),
  flight: Nullable(Flight),
  passengers: Passengers,
  vehicle_category: Nullable(Type.String()),
  customer_id: Nullable(Uuid),
  driver_id: Nullable(Uuid),
  vehicle_id: Nullable(Uuid),
  channel: Nullable(Type.String()),
  confirmation: Type.Object({ mode: Nullable(Type.String()), confirmed_at: Nullable(DateTime) }),
  event_reference: Nullable(Type.String()),
  passenger: Nullable(Passenger),
  pricing: Nullable(Pricing),
  internal: Nullable(Internal),
  created_at: DateTime,
  updated_at: DateTime,
});

export type BookingRecordRow = Static<typeof BookingRecord>;

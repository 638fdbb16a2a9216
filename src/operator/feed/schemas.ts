// Bodies the booking platform pushes for its catalogue (customers, drivers, vehicles) and the rows
// the feed answers with, in the public shape of the contract. Bodies are strict: an unknown field
// is a 400 naming it, so a typo never silently drops data.
import { type Static, Type } from 'typebox';
import { VEHICLE_CATEGORIES } from '../../domain/bookings.js';
import { DateTime, DateTimeInput, Nullable, StringEnum, Uuid } from '../../http/schemas.js';

export const CUSTOMER_TYPES = ['account', 'public_engine'] as const;

const strict = { additionalProperties: false } as const;

/** A non-empty string of at most `max` characters. */
export const Text = (max: number) => Type.String({ minLength: 1, maxLength: max });
/** Optional in the body; omitted means null. */
export const OptionalText = (max: number) => Type.Optional(Nullable(Text(max)));
const ExternalId = Type.Optional(Nullable(Type.String({ pattern: '^[ -~]{1,200}$' })));
/** For imports: keeps the platform's creation time (and so the position in the public lists). */
const CreatedAt = Type.Optional(DateTimeInput);

export const CustomerGroup = Type.Object({ id: Uuid, name: Text(200) }, strict);

export const CustomerBody = Type.Object(
  {
    type: StringEnum([...CUSTOMER_TYPES]),
    name: OptionalText(200),
    active: Type.Optional(Type.Boolean()),
    external_id: ExternalId,
    group: Type.Optional(Nullable(CustomerGroup)),
    created_at: CreatedAt,
  },
  strict,
);

export const DriverBody = Type.Object(
  {
    name: OptionalText(200),
    nickname: OptionalText(100),
    phone: OptionalText(50),
    active: Type.Optional(Type.Boolean()),
    status: OptionalText(50),
    has_app_access: Type.Optional(Type.Boolean()),
    external_id: ExternalId,
    created_at: CreatedAt,
  },
  strict,
);

export const VehicleBody = Type.Object(
  {
    plate: OptionalText(20),
    model: OptionalText(200),
    nickname: OptionalText(100),
    category: Type.Optional(Nullable(StringEnum([...VEHICLE_CATEGORIES]))),
    seats: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 100 }))),
    luggage: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 100 }))),
    wheelchair_adapted: Type.Optional(Type.Boolean()),
    eco_label: OptionalText(20),
    propulsion: OptionalText(50),
    active: Type.Optional(Type.Boolean()),
    external_id: ExternalId,
    created_at: CreatedAt,
  },
  strict,
);

export type CustomerInput = Static<typeof CustomerBody>;
export type DriverInput = Static<typeof DriverBody>;
export type VehicleInput = Static<typeof VehicleBody>;

const NullableString = Nullable(Type.String());
const NullableInteger = Nullable(Type.Integer());

export const Customer = Type.Object({
  id: Uuid,
  external_id: NullableString,
  name: NullableString,
  type: Type.String(),
  active: Type.Boolean(),
  group: Nullable(Type.Object({ id: Uuid, name: Type.String() })),
  created_at: DateTime,
});

export const Driver = Type.Object({
  id: Uuid,
  external_id: NullableString,
  name: NullableString,
  nickname: NullableString,
  phone: NullableString,
  active: Type.Boolean(),
  status: NullableString,
  has_app_access: Type.Boolean(),
  created_at: DateTime,
});

export const Vehicle = Type.Object({
  id: Uuid,
  external_id: NullableString,
  plate: NullableString,
  model: NullableString,
  nickname: NullableString,
  category: NullableString,
  seats: NullableInteger,
  luggage: NullableInteger,
  wheelchair_adapted: Type.Boolean(),
  eco_label: NullableString,
  propulsion: NullableString,
  active: Type.Boolean(),
  created_at: DateTime,
});

export type CustomerRow = Static<typeof Customer>;
export type DriverRow = Static<typeof Driver>;
export type VehicleRow = Static<typeof Vehicle>;

export const Deleted = Type.Object({ deleted: Type.Literal(true) });

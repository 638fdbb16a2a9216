// Schemas of the catalogue read API: customers, drivers and vehicles of the caller's organization.
import { Type } from 'typebox';
import { VEHICLE_CATEGORIES } from '../../domain/bookings.js';
import { DateTime, Nullable, StringEnum, Uuid } from '../../http/schemas.js';
import { PageQuery } from '../pagination.js';

export const CatalogueListQuery = Type.Object(
  {
    // Strictly the two words: `1`, `yes` or `TRUE` are refused, not read as a boolean.
    active: Type.Optional(StringEnum(['true', 'false'], { description: 'Absent means all.' })),
    ...PageQuery,
  },
  { additionalProperties: false },
);

/** Any string: one that is not a UUID names nothing and is answered with a 404. */
export const CatalogueIdParams = Type.Object({
  id: Type.String({ description: 'UUID; any other value answers 404' }),
});

export const Customer = Type.Object({
  id: Uuid,
  external_id: Nullable(Type.String()),
  name: Nullable(Type.String()),
  type: StringEnum(['account', 'public_engine']),
  active: Type.Boolean(),
  group: Nullable(Type.Object({ id: Uuid, name: Type.String() })),
  created_at: DateTime,
});

export const Driver = Type.Object({
  id: Uuid,
  external_id: Nullable(Type.String()),
  name: Nullable(Type.String()),
  nickname: Nullable(Type.String()),
  phone: Nullable(Type.String()),
  active: Type.Boolean(),
  status: Nullable(Type.String()),
  has_app_access: Type.Boolean(),
  created_at: DateTime,
});

export const Vehicle = Type.Object({
  id: Uuid,
  external_id: Nullable(Type.String()),
  plate: Nullable(Type.String()),
  model: Nullable(Type.String()),
  nickname: Nullable(Type.String()),
  category: Nullable(StringEnum([...VEHICLE_CATEGORIES])),
  seats: Nullable(Type.Integer()),
  luggage: Nullable(Type.Integer()),
  wheelchair_adapted: Type.Boolean(),
  eco_label: Nullable(Type.String()),
  propulsion: Nullable(Type.String()),
  active: Type.Boolean(),
  created_at: DateTime,
});

// Schema pieces shared by every route of both APIs.
import { type Static, type TSchema, Type } from 'typebox';
import { UUID_PATTERN } from '../domain/ids.js';

// The pattern narrows ajv's uuid format, which also admits `urn:uuid:...`: PostgreSQL refuses that
// form, so it must be a 400 here rather than a failed query.
export const Uuid = Type.String({
  format: 'uuid',
  pattern: UUID_PATTERN,
});
/** Rows carry Dates; the serializer writes them as ISO 8601 strings. */
export const DateTime = Type.Unsafe<Date | string>({ type: 'string', format: 'date-time' });
/**
 * The schema or null, written as a type list (`type: ['string', 'null']`) or an enum with null
 * rather than `anyOf`: the response serializer writes type lists directly, whereas `anyOf` makes it
 * validate every value at run time to choose a branch.
 */
export function Nullable<T extends TSchema>(schema: T) {
  const json = { ...(schema as Record<string, unknown>) };
  if (typeof json.type === 'string') {
    const values = Array.isArray(json.enum) ? { enum: [...json.enum, null] } : {};
    return Type.Unsafe<Static<T> | null>({ ...json, type: [json.type, 'null'], ...values });
  }
  if (Array.isArray(json.enum)) return Type.Unsafe<Static<T> | null>({ ...json, enum: [...json.enum, null] });
  return Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()]));
}
/**
 * One of these strings. `Type.Enum` alone writes only `enum`, which validates the same but leaves
 * readers of the document (reference pages, generators) without a type: they show "any".
 */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: { description?: string } = {},
) {
  return Type.Enum([...values] as T[number][], { type: 'string', ...options });
}
export const IdParams = Type.Object({ id: Uuid });
/** A date-time received in a body or a query. */
export const DateTimeInput = Type.String({ format: 'date-time' });

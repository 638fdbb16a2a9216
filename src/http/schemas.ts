// Schema pieces shared by every route of both APIs.
import { type TSchema, Type } from 'typebox';

// The pattern narrows ajv's uuid format, which also admits `urn:uuid:...`: PostgreSQL refuses that
// form, so it must be a 400 here rather than a failed query.
export const Uuid = Type.String({
  format: 'uuid',
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
});
/** Rows carry Dates; the serializer writes them as ISO 8601 strings. */
export const DateTime = Type.Unsafe<Date | string>({ type: 'string', format: 'date-time' });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
export const IdParams = Type.Object({ id: Uuid });
/** A date-time received in a body or a query. */
export const DateTimeInput = Type.String({ format: 'date-time' });

// The link between a booking and the id an integration keeps for it in its own system.
import { Type } from 'typebox';
import { DateTime, Nullable, Uuid } from '../../http/schemas.js';

/** Printable ASCII (0x20 to 0x7E), 1 to 200 characters: the same rule as the database CHECK. */
export const ExternalIdValue = Type.String({ minLength: 1, maxLength: 200, pattern: '^[ -~]*$' });

export const ExternalIdBody = Type.Object({ external_id: ExternalIdValue }, { additionalProperties: false });

// Any string reaches the handler: a path id that cannot name a booking is a 404, not a 400.
export const BookingPath = Type.Object({
  id: Type.String({ description: 'Booking UUID; a booking number or any other value answers 404' }),
});

export const ExternalIdLink = Type.Object({
  id: Uuid,
  entity: Type.Literal('booking'),
  external_id: Nullable(Type.String()),
  created_at: Nullable(DateTime),
  updated_at: Nullable(DateTime),
});

export const Deleted = Type.Object({ deleted: Type.Literal(true) });

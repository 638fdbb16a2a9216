// SQL of the external-id links. Each operation is one statement that checks the booking is the
// organization's and acts on it together, so a booking that changes hands in between is never
// linked or read by the wrong organization.
import { PgCode, pgConstraint, pgErrorCode, type Queryable } from '../../db/db.js';
import { AppError, notFound } from '../../http/errors.js';
import { visibleTo } from '../bookings/visibility.js';

export interface LinkRow {
  id: string;
  external_id: string | null;
  created_at: Date | null;
  updated_at: Date | null;
}

/** Who asks: the integration owns the link, the organization must see the booking. */
export interface Caller {
  integrationId: string;
  organizationId: string;
}

const VISIBLE = visibleTo('$3');

/** The booking and this integration's link to it (nulls without one); null when not visible. */
export async function readLink(q: Queryable, caller: Caller, bookingId: string): Promise<LinkRow | null> {
  const [row] = await q.query<LinkRow>(
    `SELECT b.id, l.external_id, l.created_at, l.updated_at
     FROM bookings b
     LEFT JOIN booking_external_ids l ON l.booking_id = b.id AND l.integration_id = $2
     WHERE b.id = $1 AND ${VISIBLE}`,
    [bookingId, caller.integrationId, caller.organizationId],
  );
  return row ?? null;
}

// Same pair again keeps updated_at, so a repeated PUT changes nothing visible. A value already on
// another booking of the integration violates booking_external_ids_value: the unique index, not a
// read before the write, decides the 409.
const UPSERT_SQL = `
  INSERT INTO booking_external_ids AS l (integration_id, booking_id, external_id)
  SELECT $2, b.id, $4 FROM bookings b WHERE b.id = $1 AND ${VISIBLE}
  ON CONFLICT (integration_id, booking_id) DO UPDATE
  SET external_id = EXCLUDED.external_id,
      updated_at = CASE WHEN l.external_id = EXCLUDED.external_id THEN l.updated_at ELSE now() END
  RETURNING l.booking_id AS id, l.external_id, l.created_at, l.updated_at`;

function linkFailure(error: unknown): never {
  const code = pgErrorCode(error);
  if (code === PgCode.uniqueViolation && pgConstraint(error) === 'booking_external_ids_value') {
    throw new AppError(
      'conflict',
      { field: 'external_id' },
      'Ese external_id ya está asignado a otra reserva de esta integración.',
    );
  }
  // The booking was deleted between the visibility check and the insert.
  if (code === PgCode.foreignKeyViolation) throw notFound();
  throw error;
}

/** Sets (or replaces) the link; null when the booking is not visible. */
export async function writeLink(
  q: Queryable,
  caller: Caller,
  bookingId: string,
  externalId: string,
): Promise<LinkRow | null> {
  const rows = await q
    .query<LinkRow>(UPSERT_SQL, [bookingId, caller.integrationId, caller.organizationId, externalId])
    .catch(linkFailure);
  return rows[0] ?? null;
}

/** True when a link of a visible booking was removed. */
export async function deleteLink(q: Queryable, caller: Caller, bookingId: string): Promise<boolean> {
  const rows = await q.query(
    `DELETE FROM booking_external_ids l
     USING bookings b
     WHERE l.booking_id = $1 AND l.integration_id = $2 AND b.id = l.booking_id AND ${VISIBLE}
     RETURNING 1`,
    [bookingId, caller.integrationId, caller.organizationId],
  );
  return rows.length > 0;
}

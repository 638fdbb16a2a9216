// Bookings pushed by the platform. `organizationId` is always the originator. A booking is checked
// and written by one statement (feed_write_booking), so a PUT is one round trip and, outside a
// transaction, its own: the booking locked, every reference checked, then written, and a failed
// check leaves nothing behind. The event log is written by the database trigger in the same
// transaction. A PATCH reads the booking locked first, in the caller's transaction.
import type { Queryable } from '../../db/db.js';
import { AppError, invalidField, notFound } from '../../http/errors.js';
import type { BookingInput, BookingPatchInput, BookingRecordRow } from './booking-schemas.js';
import { checkFieldRules, drawDigits, referenceRefused, toColumns, toInput } from './bookings-rules.js';
import { idOfAnotherOrganization, type Written } from './catalogue.js';

/** The columns of a stored booking, in the order feed_write_booking returns them after its outcome. */
type StoredRow = Omit<BookingRecordRow, 'confirmation'> & {
  confirmation_mode: string | null;
  confirmed_at: Date | null;
};

function toRecord(row: StoredRow): BookingRecordRow {
  const { confirmation_mode, confirmed_at, ...rest } = row;
  return { ...rest, confirmation: { mode: confirmation_mode, confirmed_at } };
}

/** The random part of a new number; undefined: drawDigits' own draw. */
type Digits = (() => number) | undefined;

/** How many numbers a new booking may draw before the write gives up (each taken: 1 in 10^8 per booking of the code). */
const DRAWS = 5;

// One statement, its own transaction when run outside one: the checks and the write
// (feed_write_booking in src/db/migrations/013_feed_write_in_one_statement.sql).
const WRITE_SQL = 'SELECT * FROM feed_write_booking($1, $2, $3, $4, $5, $6, $7)';

/**
 * What each refusal of feed_write_booking answers: `code` is the organization's (given with
 * reference_prefix), `broken` the error of the rules between fields.
 */
const REFUSALS = {
  no_organization: () => notFound(),
  another_organization: () => idOfAnotherOrganization(),
  rules: (_code: string | null, broken: unknown) => broken,
  reference_prefix: (code: string | null) => referenceRefused(code as string),
  executor: () =>
    invalidField('executor_organization_id', 'executor_organization_id no es una organización.'),
  customer: () => invalidField('customer_id', 'customer_id no es un cliente de la organización originadora.'),
  driver: () =>
    invalidField('driver_id', 'driver_id no es un conductor de la organización que ejecuta la reserva.'),
  vehicle: () =>
    invalidField('vehicle_id', 'vehicle_id no es un vehículo de la organización que ejecuta la reserva.'),
  reference_taken: () =>
    new AppError('conflict', { field: 'reference' }, 'Otra reserva ya tiene ese número.'),
  no_number: () => new AppError('internal'),
} satisfies Record<string, (code: string | null, broken: unknown) => unknown>;

type Outcome = 'written' | keyof typeof REFUSALS;

/**
 * Creates (created: true) or replaces a booking; a field left out of the body is stored as null.
 * The rules between fields are judged here; every check that needs the database, and the write,
 * in one statement, in the feed's order: the organization (404), whose the id is (409), the rules
 * between fields, the number's prefix, the rows it links to, the number's uniqueness. A failed
 * check writes nothing.
 */
export async function upsertBooking(
  q: Queryable,
  organizationId: string,
  bookingId: string,
  body: BookingInput,
  /** The random part of a new number (tests pass their own). */
  digits?: Digits,
): Promise<Written<BookingRecordRow>> {
  const c = toColumns(body);
  let broken: unknown = null;
  try {
    checkFieldRules(c, organizationId);
  } catch (error) {
    broken = error;
  }
  const given = body.reference ?? null;
  const draws = given === null ? Array.from({ length: DRAWS }, () => drawDigits(digits)) : null;
  const [row] = await q.query<StoredRow & { outcome: Outcome; code: string | null; created: boolean }>(
    WRITE_SQL,
    [organizationId, bookingId, broken === null, given, draws, body.created_at ?? null, JSON.stringify(c)],
  );
  const { outcome, code, created, ...stored } = row as NonNullable<typeof row>;
  if (outcome === 'written') return { row: toRecord(stored), created };
  throw REFUSALS[outcome](code, broken);
}

/**
 * Changes the fields sent; the result must satisfy the same rules as a full body. Run in a
 * transaction: the booking stays locked from its read to its write.
 */
export async function patchBooking(
  q: Queryable,
  organizationId: string,
  bookingId: string,
  patch: BookingPatchInput,
): Promise<BookingRecordRow> {
  const [previous] = await q.query<StoredRow>(
    'SELECT * FROM bookings WHERE id = $1 AND originator_organization_id = $2 FOR UPDATE',
    [bookingId, organizationId],
  );
  if (!previous) throw notFound();
  const input: BookingInput = { ...toInput(toRecord(previous)), ...patch };
  return (await upsertBooking(q, organizationId, bookingId, input)).row;
}

/** External-id links go with it (foreign key cascade); booking.deleted is announced. */
export async function deleteBooking(q: Queryable, organizationId: string, bookingId: string) {
  const rows = await q.query(
    'DELETE FROM bookings WHERE id = $1 AND originator_organization_id = $2 RETURNING id',
    [bookingId, organizationId],
  );
  if (rows.length === 0) throw notFound();
}

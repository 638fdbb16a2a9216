// Bookings pushed by the platform. `organizationId` is always the originator. Each function runs
// inside the caller's transaction: the booking is locked, every reference checked, then written,
// so a failed check leaves nothing behind. The event log is written by the database trigger in
// the same transaction.
import type { Queryable } from '../../db/db.js';
import { AppError, invalidField, notFound } from '../../http/errors.js';
import type { BookingInput, BookingPatchInput, BookingRecordRow } from './booking-schemas.js';
import {
  type BookingColumns,
  checkFieldRules,
  checkReference,
  generateReference,
  toColumns,
  toInput,
} from './bookings-rules.js';
import { idOfAnotherOrganization, type Written } from './catalogue.js';

/** Columns written from the body, in parameter order after id, originator, reference, created_at. */
const WRITTEN: (keyof BookingColumns)[] = [
  'executor_organization_id',
  'status',
  'service_type',
  'hours',
  'pickup_at',
  'end_at',
  'pickup',
  'destination',
  'distance_km',
  'flight',
  'passengers',
  'vehicle_category',
  'customer_id',
  'driver_id',
  'vehicle_id',
  'channel',
  'confirmation_mode',
  'confirmed_at',
  'event_reference',
  'passenger',
  'pricing',
  'internal',
];
const JSON_COLUMNS = new Set([
  'pickup',
  'destination',
  'flight',
  'passengers',
  'passenger',
  'pricing',
  'internal',
]);
const FIRST = 5;
const placeholder = (name: string, i: number) => `$${i + FIRST}${JSON_COLUMNS.has(name) ? '::jsonb' : ''}`;

const INSERT_SQL = `INSERT INTO bookings (id, originator_organization_id, reference, created_at, ${WRITTEN.join(', ')})
  VALUES ($1, $2, $3, coalesce($4::timestamptz, now()), ${WRITTEN.map(placeholder).join(', ')})`;
const UPDATE_SQL = `UPDATE bookings SET ${WRITTEN.map((n, i) => `${n} = ${placeholder(n, i)}`).join(', ')},
    reference = $3, created_at = coalesce($4::timestamptz, created_at), updated_at = now()
  WHERE id = $1 AND originator_organization_id = $2`;

const STORED = `id, originator_organization_id, ${WRITTEN.join(', ')}, reference, created_at, updated_at`;

type StoredRow = Omit<BookingRecordRow, 'confirmation'> & {
  confirmation_mode: string | null;
  confirmed_at: Date | null;
};

function toRecord(row: StoredRow): BookingRecordRow {
  const { confirmation_mode, confirmed_at, ...rest } = row;
  return { ...rest, confirmation: { mode: confirmation_mode, confirmed_at } };
}

/** The random part of a new number; undefined: generateReference's own draw. */
type Digits = (() => number) | undefined;

interface Originator {
  id: string;
  code: string;
}

/**
 * The originating organization and the booking, locked, in one round trip: the organization must
 * exist (404 otherwise); the booking may not (undefined).
 */
async function originatorAndBooking(
  q: Queryable,
  organizationId: string,
  bookingId: string,
): Promise<{ originator: Originator; previous: StoredRow | undefined }> {
  const [row] = await q.query<StoredRow & { org_id: string; org_code: string }>(
    `SELECT o.id AS org_id, o.code AS org_code, b.*
     FROM organizations o
     LEFT JOIN LATERAL (SELECT ${STORED} FROM bookings WHERE id = $2 FOR UPDATE) b ON true
     WHERE o.id = $1`,
    [organizationId, bookingId],
  );
  if (!row) throw notFound();
  const { org_id, org_code, ...booking } = row;
  return { originator: { id: org_id, code: org_code }, previous: booking.id ? booking : undefined };
}

const referenceTaken = async (q: Queryable, reference: string, bookingId: string) =>
  (await q.query('SELECT 1 FROM bookings WHERE reference = $1 AND id <> $2', [reference, bookingId])).length >
  0;

/** A number for a new booking: the code and random digits, not taken (after a first that was). */
async function freshReference(
  q: Queryable,
  code: string,
  bookingId: string,
  digits: Digits,
): Promise<string> {
  for (let attempt = 1; attempt < 5; attempt += 1) {
    const candidate = generateReference(code, digits);
    if (!(await referenceTaken(q, candidate, bookingId))) return candidate;
  }
  throw new AppError('internal');
}

interface Found {
  executor: boolean;
  customer: boolean;
  driver: boolean;
  vehicle: boolean;
  reference_taken: boolean;
}

// One round trip for every row the booking points at. The customer row is share-locked so that a
// concurrent soft delete waits for this write.
const LOOK_UP = `SELECT
  EXISTS (SELECT 1 FROM organizations WHERE id = $1) AS executor,
  EXISTS (SELECT 1 FROM customers WHERE id = $2 AND organization_id = $5 AND deleted_at IS NULL FOR SHARE)
    AS customer,
  EXISTS (SELECT 1 FROM drivers WHERE id = $3 AND organization_id = $6) AS driver,
  EXISTS (SELECT 1 FROM vehicles WHERE id = $4 AND organization_id = $6) AS vehicle,
  EXISTS (SELECT 1 FROM bookings WHERE reference = $7 AND id <> $8) AS reference_taken`;

/**
 * Every id the booking points at, and the new number it claims. Driver and vehicle belong to the
 * organization that executes it; the customer to the originator and not deleted (a customer
 * deleted after the booking was made may stay on it: only a change of customer is checked).
 * A number the platform gave that another booking has is a conflict; a number generated here that
 * is taken is only answered with false, for another to be drawn.
 */
async function checkLinks(
  q: Queryable,
  originatorId: string,
  bookingId: string,
  c: BookingColumns,
  newReference: { value: string; given: boolean } | null,
  previous?: StoredRow,
): Promise<boolean> {
  const customer = c.customer_id !== previous?.customer_id ? c.customer_id : null;
  const [found] = await q.query<Found>(LOOK_UP, [
    c.executor_organization_id,
    customer,
    c.driver_id,
    c.vehicle_id,
    originatorId,
    c.executor_organization_id ?? originatorId,
    newReference?.value ?? null,
    bookingId,
  ]);
  const f = found as Found;
  if (c.executor_organization_id && !f.executor) {
    throw invalidField('executor_organization_id', 'executor_organization_id no es una organización.');
  }
  if (customer && !f.customer) {
    throw invalidField('customer_id', 'customer_id no es un cliente de la organización originadora.');
  }
  if (c.driver_id && !f.driver) {
    throw invalidField(
      'driver_id',
      'driver_id no es un conductor de la organización que ejecuta la reserva.',
    );
  }
  if (c.vehicle_id && !f.vehicle) {
    throw invalidField(
      'vehicle_id',
      'vehicle_id no es un vehículo de la organización que ejecuta la reserva.',
    );
  }
  if (newReference?.given && f.reference_taken) {
    throw new AppError('conflict', { field: 'reference' }, 'Otra reserva ya tiene ese número.');
  }
  return !f.reference_taken;
}

async function write(
  q: Queryable,
  originator: Originator,
  bookingId: string,
  input: BookingInput,
  previous: StoredRow | undefined,
  digits?: Digits,
): Promise<Written<BookingRecordRow>> {
  const c = toColumns(input);
  checkFieldRules(c, originator.id);
  const given = input.reference;
  if (given !== undefined) checkReference(given, originator.code);
  // The number given, else the stored one, else a new one, checked in the same round trip as the
  // links (and drawn again in the rare case it is taken).
  const claimed =
    given !== undefined && given !== previous?.reference
      ? { value: given, given: true }
      : given === undefined && !previous?.reference
        ? { value: generateReference(originator.code, digits), given: false }
        : null;
  const free = await checkLinks(q, originator.id, bookingId, c, claimed, previous);
  const reference =
    given ??
    previous?.reference ??
    (free
      ? (claimed as { value: string }).value
      : await freshReference(q, originator.code, bookingId, digits));
  const values = WRITTEN.map((name) => {
    const value = c[name];
    return JSON_COLUMNS.has(name) && value !== null ? JSON.stringify(value) : value;
  });
  const sql = `${previous ? UPDATE_SQL : INSERT_SQL} RETURNING ${STORED}`;
  const [row] = await q.query<StoredRow>(sql, [
    bookingId,
    originator.id,
    reference,
    input.created_at ?? null,
    ...values,
  ]);
  return { row: toRecord(row as StoredRow), created: !previous };
}

/** Creates (created: true) or replaces a booking. A field left out of the body is stored as null. */
export async function upsertBooking(
  q: Queryable,
  organizationId: string,
  bookingId: string,
  body: BookingInput,
  /** The random part of a new number (tests pass their own). */
  digits?: Digits,
): Promise<Written<BookingRecordRow>> {
  const { originator, previous } = await originatorAndBooking(q, organizationId, bookingId);
  if (previous && previous.originator_organization_id !== originator.id) throw idOfAnotherOrganization();
  return write(q, originator, bookingId, body, previous, digits);
}

/** Changes the fields sent; the result must satisfy the same rules as a full body. */
export async function patchBooking(
  q: Queryable,
  organizationId: string,
  bookingId: string,
  patch: BookingPatchInput,
): Promise<BookingRecordRow> {
  const { originator, previous } = await originatorAndBooking(q, organizationId, bookingId);
  if (!previous || previous.originator_organization_id !== originator.id) throw notFound();
  const input: BookingInput = { ...toInput(toRecord(previous)), ...patch };
  return (await write(q, originator, bookingId, input, previous)).row;
}

/** External-id links go with it (foreign key cascade); booking.deleted is announced. */
export async function deleteBooking(q: Queryable, organizationId: string, bookingId: string) {
  const rows = await q.query(
    'DELETE FROM bookings WHERE id = $1 AND originator_organization_id = $2 RETURNING id',
    [bookingId, organizationId],
  );
  if (rows.length === 0) throw notFound();
}

// SQL of the bookings read API. A booking is visible to its originator and, through the exchange,
// to its executor. Lists merge two index-ordered branches (one per side, each served by its own
// index: bookings_originator, bookings_executor) instead of an OR, which no single index serves.
import type { Queryable } from '../../db/db.js';
import type { BookingRow } from '../../domain/booking-view.js';
import { STATUS_TO_INTERNAL } from '../../domain/bookings.js';
import type { Position } from '../../http/cursor.js';
import { afterPosition } from '../pagination.js';
import type { BookingFilters } from './filters.js';
import { visibleTo } from './visibility.js';

/**
 * Columns of a returned booking (`b`). What it links to is read by primary key for each row kept,
 * as scalar subqueries: the planner cannot turn them into a scan of the whole catalogue, so the
 * cost follows the page size, never the size of customers, drivers or vehicles. $1 is the reading
 * integration, whose external id is the only one shown.
 */
const VIEW_COLUMNS = `
  b.id, b.originator_organization_id, b.executor_organization_id, b.reference, b.status,
  b.service_type, b.hours, b.pickup_at, b.end_at, b.pickup, b.destination, b.distance_km, b.flight,
  b.passengers, b.vehicle_category, b.channel, b.confirmation_mode, b.confirmed_at,
  b.event_reference, b.passenger, b.pricing, b.created_at,
  b.customer_id, (SELECT name FROM customers WHERE id = b.customer_id) AS customer_name,
  b.driver_id, (SELECT name FROM drivers WHERE id = b.driver_id) AS driver_name,
  (SELECT nickname FROM drivers WHERE id = b.driver_id) AS driver_nickname,
  b.vehicle_id, (SELECT plate FROM vehicles WHERE id = b.vehicle_id) AS vehicle_plate,
  (SELECT model FROM vehicles WHERE id = b.vehicle_id) AS vehicle_model,
  (SELECT external_id FROM booking_external_ids WHERE integration_id = $1 AND booking_id = b.id)
    AS link_external_id`;

export interface Reader {
  organizationId: string;
  integrationId: string;
}

/** Conditions on `bookings` (unaliased) for the filters given, parameters appended to `params`. */
function filterConditions(f: BookingFilters, params: unknown[]): string[] {
  const where: string[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (f.status !== undefined) add('status = ?', STATUS_TO_INTERNAL[f.status]);
  if (f.customer_id !== undefined) add('customer_id = ?', f.customer_id);
  if (f.pickup_from !== undefined) add('pickup_at >= ?', f.pickup_from);
  if (f.pickup_to !== undefined) add('pickup_at <= ?', f.pickup_to);
  if (f.created_from !== undefined) add('created_at >= ?', f.created_from);
  if (f.created_to !== undefined) add('created_at <= ?', f.created_to);
  return where;
}

/**
 * The text of each shape of the page query (which filters, whether a cursor), made once: the same
 * string every time is also the key the named-statement map finds at once, where a text built
 * anew would be hashed whole on every request. At most 2^7 shapes exist.
 */
const pageTexts = new Map<string, string>();

/**
 * One page of the organization's bookings, newest first. Each branch is ordered and limited by
 * its own index scan; the outer ORDER BY ... LIMIT merges them, and only the rows kept have their
 * linked names read.
 * Exported for the query-plan script.
 */
export function bookingPageSql(
  reader: Reader,
  filters: BookingFilters,
  after: Position | null,
  take: number,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [reader.integrationId, reader.organizationId, take];
  const conditions = [...filterConditions(filters, params), afterPosition(after, params)].join(' AND ');
  let sql = pageTexts.get(conditions);
  if (sql === undefined) {
    const branch = (side: string) => `(SELECT * FROM bookings
      WHERE ${side} = $2 AND ${conditions}
      ORDER BY created_at DESC, id DESC LIMIT $3)`;
    sql = `
    WITH page AS (
      ${branch('originator_organization_id')}
      UNION ALL
      ${branch('executor_organization_id')}
      ORDER BY created_at DESC, id DESC LIMIT $3
    )
    SELECT ${VIEW_COLUMNS} FROM page b
    ORDER BY b.created_at DESC, b.id DESC`;
    pageTexts.set(conditions, sql);
  }
  return { sql, params };
}

export function listBookings(
  db: Queryable,
  reader: Reader,
  filters: BookingFilters,
  after: Position | null,
  take: number,
): Promise<BookingRow[]> {
  const { sql, params } = bookingPageSql(reader, filters, after, take);
  return db.query<BookingRow>(sql, params);
}

const VISIBLE = visibleTo('$2');

/**
 * The booking this integration linked to `externalId`, if the organization still sees it. Served
 * by the unique index on (integration_id, external_id). Exported for the query-plan script.
 */
export function bookingByExternalIdSql(
  reader: Reader,
  externalId: string,
  after: Position | null,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [reader.integrationId, reader.organizationId, externalId];
  const sql = `SELECT ${VIEW_COLUMNS}
     FROM booking_external_ids x JOIN bookings b ON b.id = x.booking_id
     WHERE x.integration_id = $1 AND x.external_id = $3 AND ${VISIBLE}
       AND ${afterPosition(after, params, 'b')}`;
  return { sql, params };
}

export function bookingByExternalId(
  db: Queryable,
  reader: Reader,
  externalId: string,
  after: Position | null,
): Promise<BookingRow[]> {
  const { sql, params } = bookingByExternalIdSql(reader, externalId, after);
  return db.query<BookingRow>(sql, params);
}

const BY_ID = `SELECT ${VIEW_COLUMNS} FROM bookings b WHERE b.id = $3 AND ${VISIBLE}`;
const BY_REFERENCE = `SELECT ${VIEW_COLUMNS} FROM bookings b WHERE b.reference = $3 AND ${VISIBLE}`;

/** One booking by UUID or by booking number, or null when absent or not visible. */
export async function findBooking(
  db: Queryable,
  reader: Reader,
  by: { id: string } | { reference: string },
): Promise<BookingRow | null> {
  const [sql, value] = 'id' in by ? [BY_ID, by.id] : [BY_REFERENCE, by.reference];
  const [row] = await db.query<BookingRow>(sql, [reader.integrationId, reader.organizationId, value]);
  return row ?? null;
}

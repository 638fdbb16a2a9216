// Bookings, numbered 0..n-1 in creation order and inserted in batches of consecutive numbers: one
// INSERT ... SELECT FROM generate_series per batch. Layered sub-selects compute each derived value
// once (OFFSET 0 keeps the planner from inlining a layer and evaluating its expressions again).
import type { Queryable } from '../../src/db/db.js';
import type { Plan } from './plan.js';
import {
  bookingUuid,
  customerUuid,
  driverUuid,
  h,
  iso,
  NOW_SQL,
  orgUuid,
  pick,
  SPAN_MS,
  START,
  vehicleUuid,
} from './sql.js';
import {
  AIRLINES,
  AIRPORTS,
  CHAT_LINES,
  FIRST_NAMES,
  LAST_NAMES,
  PAYMENT_MODES,
  PLACES,
} from './vocabulary.js';

const ORGS = 'cardinality($5::int[])';
const SLOTS = 'cardinality($3::int[])';
const PLACE_COUNT = 'jsonb_array_length($11::jsonb)';

/** Layer a: who owns booking i, its number in that organization, when it was made, its hashes. */
const NUMBERED = `
SELECT i, o, (i / ${SLOTS}) * ($5::int[])[o + 1] + ($4::int[])[slot] AS k,
  timestamptz '${START}' + (i * ${SPAN_MS} / $10::int8)::float8 * interval '1 millisecond' AS created_at,
  ${Array.from({ length: 27 }, (_, n) => `${h('i', n + 1)} AS h${n + 1}`).join(', ')}
FROM generate_series($1::int8, $2::int8) AS i,
  LATERAL (SELECT (1 + i % ${SLOTS})::int AS slot) s,
  LATERAL (SELECT ($3::int[])[s.slot] AS o) so
OFFSET 0`;

/** Layer b: the exchange, the trip (when, where, how many) and its kind. */
const TRIP = `
SELECT a.*,
  CASE WHEN ${ORGS} > 1 AND h1 % 10 = 0 THEN ((o + 1 + h2 % (${ORGS} - 1)) % ${ORGS})::int END AS eo,
  created_at + interval '2 hours' + (h3 % 25920) * interval '5 minutes' AS pickup_at,
  h4 % 100 >= 85 AS hourly,
  (CASE WHEN h5 % 100 < 25 THEN 1 WHEN h5 % 100 < 60 THEN 2 WHEN h5 % 100 < 75 THEN 3
    WHEN h5 % 100 < 87 THEN 4 ELSE 5 + h5 % 4 END)::int AS pax,
  (h7 % ${PLACE_COUNT})::int AS p,
  ((h7 % ${PLACE_COUNT} + 1 + h8 % (${PLACE_COUNT} - 1)) % ${PLACE_COUNT})::int AS d
FROM (${NUMBERED}) a
OFFSET 0`;

/** Layer c: status from pick-up time against the data set's "now", and the values used twice. */
const STATE = `
SELECT b.*,
  CASE
    WHEN pickup_at < ${NOW_SQL} - interval '1 day' THEN
      CASE WHEN h6 % 100 < 84 THEN 'completada' WHEN h6 % 100 < 93 THEN 'cancelada'
        WHEN h6 % 100 < 96 THEN 'no_show' ELSE 'rechazada' END
    WHEN pickup_at < ${NOW_SQL} THEN
      CASE h6 % 4 WHEN 0 THEN 'en_camino' WHEN 1 THEN 'en_curso' ELSE 'completada' END
    ELSE
      CASE WHEN h6 % 100 < 55 THEN 'confirmada' WHEN h6 % 100 < 70 THEN 'no_segura'
        WHEN h6 % 100 < 88 THEN 'solicitada' WHEN h6 % 100 < 95 THEN 'cancelada' ELSE 'rechazada' END
  END AS status,
  coalesce(eo, o) AS x,
  CASE WHEN hourly THEN (2 + h9 % 7 + (h9 / 7) % 2 * 0.5)::numeric(6, 2) END AS hours,
  CASE WHEN NOT hourly THEN round(3 + (h9 % 19700) / 100.0, 2) END AS dist,
  (h13 % (pax + 1))::int AS lb,
  ((h13 / 7) % (pax + 1))::int AS ls,
  (h12 % 100 < 3)::int AS baby,
  h14 % 100 < 15 AS vip,
  CASE WHEN h20 % 100 < 35 THEN 'manual' WHEN h20 % 100 < 65 THEN 'customer_engine'
    WHEN h20 % 100 < 80 THEN 'public_engine' WHEN h20 % 100 < 90 THEN 'bulk_upload' ELSE 'recurring' END AS channel,
  ${pick('$12::text[]', 'h24')} AS first_name,
  ${pick('$13::text[]', 'h25')} AS last_name
FROM (${TRIP}) b
OFFSET 0`;

/** Layer d: price, confirmation and assignment. */
const MONEY = `
SELECT c.*,
  round(CASE WHEN hourly THEN hours * 45 ELSE 25 + dist * 1.3 END * CASE WHEN vip THEN 1.4 ELSE 1 END
    + baby * 5, 2) AS total,
  CASE WHEN status NOT IN ('solicitada', 'no_segura', 'rechazada')
    THEN least(created_at + (5 + h21 % 600) * interval '1 minute', pickup_at) END AS confirmed_at,
  status IN ('confirmada', 'en_camino', 'en_curso', 'completada', 'no_show') AND h18 % 100 < 93 AS assigned,
  CASE WHEN hourly THEN pickup_at + hours * interval '1 hour'
    ELSE pickup_at + (10 + dist * 1.1)::float8 * interval '1 minute' END AS end_at,
  NOT (hourly AND h10 % 2 = 0) AS has_destination,
  status = 'completada' AND h26 % 100 < 80 AS paid
FROM (${STATE}) c
OFFSET 0`;

const INSERT = `
INSERT INTO bookings (id, originator_organization_id, executor_organization_id, reference, status, service_type,
  hours, pickup_at, end_at, pickup, destination, distance_km, flight, passengers, vehicle_category, customer_id,
  driver_id, vehicle_id, channel, confirmation_mode, confirmed_at, event_reference, passenger, pricing, internal,
  created_at, updated_at)
SELECT ${bookingUuid('i')}, ${orgUuid('o')}, CASE WHEN eo IS NOT NULL THEN ${orgUuid('eo')} END,
  ($9::text[])[o + 1] || lpad((k + 1)::text, 9, '0'),
  status, CASE WHEN hourly THEN 'hourly' ELSE 'transfer' END, hours, pickup_at, end_at,
  $11::jsonb -> p, CASE WHEN has_destination THEN $11::jsonb -> d END, dist,
  CASE WHEN p < ${AIRPORTS} OR (has_destination AND d < ${AIRPORTS})
    THEN jsonb_build_object('number', ${pick('$14::text[]', 'h11')} || (100 + h11 % 8900), 'pending', h11 % 25 = 0)
  END,
  jsonb_build_object('count', pax, 'luggage', lb + ls, 'luggage_big', lb, 'luggage_small', ls,
    'baby_seats', baby, 'child_seats', (h12 % 100 BETWEEN 3 AND 6)::int,
    'booster_seats', (h12 % 100 BETWEEN 7 AND 9)::int, 'wheelchair', h12 % 100 = 99),
  CASE WHEN pax <= 3 THEN CASE WHEN vip THEN 'sedan_vip' ELSE 'sedan' END
    ELSE CASE WHEN vip THEN 'van_vip' ELSE 'van' END END,
  CASE WHEN h15 % 100 < 96 THEN ${customerUuid('o', '(h16 % ($6::int[])[o + 1])')} END,
  CASE WHEN assigned THEN ${driverUuid('x', '(h17 % ($7::int[])[x + 1])')} END,
  CASE WHEN assigned THEN ${vehicleUuid('x', '(h19 % ($8::int[])[x + 1])')} END,
  channel, CASE WHEN h21 % 100 < 60 THEN 'automatic' ELSE 'manual' END, confirmed_at,
  CASE WHEN h22 % 100 < 4 THEN 'EV-' || (1000 + h22 % 500) END,
  jsonb_build_object('name', first_name || ' ' || last_name,
    'phone', '+34 6' || lpad((h23 % 100000000)::text, 8, '0'),
    'email', translate(lower(first_name || '.' || last_name), 'áéíóúüñç', 'aeiouunc') || (h23 % 100) || '@example.com'),
  jsonb_build_object('currency', 'EUR', 'total', total, 'vat_pct', 10,
    'sale_total', CASE WHEN channel = 'customer_engine' THEN round(total * 1.15, 2) END,
    'extras', CASE WHEN baby > 0
      THEN jsonb_build_array(jsonb_build_object('name', 'Silla de bebé', 'amount', 5, 'per_passenger', false))
      ELSE '[]'::jsonb END,
    'diet', NULL, 'parking', NULL, 'night_surcharge', NULL,
    'payment_mode', ${pick('$15::text[]', 'h26')}, 'payment_status', CASE WHEN paid THEN 'paid' ELSE 'pending' END,
    'paid_at', CASE WHEN paid THEN ${iso("end_at + interval '1 day'")} END,
    'net_executor', round(total * 0.8, 2)),
  jsonb_build_object(
    'notes', CASE WHEN h27 % 3 = 0 THEN 'Cliente habitual, confirmar por teléfono' END,
    'observations', CASE WHEN h27 % 5 = 0 THEN 'Esperar con cartel en la salida' END,
    'chat', CASE WHEN assigned THEN jsonb_build_array(jsonb_build_object('from', 'driver',
      'text', ${pick('$16::text[]', 'h27')}, 'at', ${iso("pickup_at - interval '10 minutes'")})) ELSE '[]'::jsonb END,
    'pickup_sign', upper(last_name),
    'gps', CASE WHEN status IN ('en_camino', 'en_curso') THEN jsonb_build_object(
      'lat', ($11::jsonb -> p -> 'lat'), 'lng', ($11::jsonb -> p -> 'lng'), 'at', ${iso('pickup_at')}) END),
  created_at, coalesce(confirmed_at, created_at)
FROM (${MONEY}) m`;

/** Inserts bookings first..last (inclusive, 0-based creation order). */
export async function insertBookings(db: Queryable, plan: Plan, first: number, last: number): Promise<void> {
  const orgs = plan.organizations;
  await db.query(INSERT, [
    first,
    last,
    plan.slotOrg,
    plan.slotRank,
    plan.weight,
    orgs.map((o) => o.customers),
    orgs.map((o) => o.drivers),
    orgs.map((o) => o.vehicles),
    orgs.map((o) => o.code),
    plan.bookings,
    JSON.stringify(PLACES),
    FIRST_NAMES,
    LAST_NAMES,
    AIRLINES,
    PAYMENT_MODES,
    CHAT_LINES,
  ]);
}

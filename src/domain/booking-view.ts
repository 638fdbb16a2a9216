// The booking serializer: one pure function from a stored booking to the public Booking, for the
// organization that looks at it and the scopes it holds. The read API and webhook bodies both use
// it, so it knows nothing of HTTP and does no I/O.
//
// What it decides: the caller's role in the exchange, which assignment it may see, which pricing
// shape, and whether `passenger` and `pricing` exist at all. The stored `internal` column (notes,
// observations, chat, pick-up sign, GPS) is never read here, so no scope can expose it.

import type { Booking } from '../api/bookings/schemas.js';
import { publicStatus } from './bookings.js';

type Json = Record<string, unknown>;

/** A bookings row with the names of what it links to (see queries.ts). */
export interface BookingRow {
  id: string;
  originator_organization_id: string;
  executor_organization_id: string | null;
  reference: string;
  status: string;
  service_type: 'transfer' | 'hourly';
  hours: number | null;
  pickup_at: Date;
  end_at: Date | null;
  pickup: Json | null;
  destination: Json | null;
  distance_km: number | null;
  flight: Json | null;
  passengers: Json;
  vehicle_category: Booking['vehicle_category'];
  customer_id: string | null;
  customer_name: string | null;
  driver_id: string | null;
  driver_name: string | null;
  driver_nickname: string | null;
  vehicle_id: string | null;
  vehicle_plate: string | null;
  vehicle_model: string | null;
  channel: Booking['channel'];
  confirmation_mode: string | null;
  confirmed_at: Date | null;
  event_reference: string | null;
  passenger: Json | null;
  pricing: Json | null;
  /** The external id the reading integration stored for this booking. */
  link_external_id: string | null;
  created_at: Date;
}

export type BookingRole = Booking['role'];

/** The caller's part in the booking; it must be one of its two organizations. */
export function roleOf(
  row: Pick<BookingRow, 'originator_organization_id' | 'executor_organization_id'>,
  organizationId: string,
): BookingRole {
  if (row.executor_organization_id === organizationId) return 'executor';
  if (row.originator_organization_id !== organizationId) {
    throw new Error('the booking is not visible to this organization');
  }
  return row.executor_organization_id === null ? 'originator_and_executor' : 'originator';
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());
const str = (v: unknown) => (typeof v === 'string' ? v : null);
const num = (v: unknown) => (typeof v === 'number' ? v : null);
const int = (v: unknown) => (typeof v === 'number' ? v : 0);
const nullable = (v: unknown) => (v === undefined ? null : v);

function place(p: Json | null): Booking['pickup'] {
  if (p === null) return null;
  return { address: String(p.address ?? ''), lat: Number(p.lat), lng: Number(p.lng) };
}

function passengers(p: Json): Booking['passengers'] {
  return {
    count: int(p.count),
    luggage: int(p.luggage),
    luggage_big: int(p.luggage_big),
    luggage_small: int(p.luggage_small),
    baby_seats: int(p.baby_seats),
    child_seats: int(p.child_seats),
    booster_seats: int(p.booster_seats),
    wheelchair: p.wheelchair === true,
  };
}

function assignment(row: BookingRow, role: BookingRole): Booking['assignment'] {
  // Another company executes it: its driver and vehicle are that company's business.
  if (role === 'originator') return { external: true, driver: null, vehicle: null };
  return {
    external: false,
    driver:
      row.driver_id === null
        ? null
        : { id: row.driver_id, name: row.driver_name, nickname: row.driver_nickname },
    vehicle:
      row.vehicle_id === null
        ? null
        : { id: row.vehicle_id, plate: row.vehicle_plate, model: row.vehicle_model },
  };
}

function extras(value: unknown) {
  if (!Array.isArray(value)) return [];
  return value.map((e: Json) => ({
    name: String(e.name ?? ''),
    amount: Number(e.amount),
    per_passenger: e.per_passenger === true,
  }));
}

/**
 * The executor sees its own net only: never the originator's price or its customer's. Undefined
 * (the property stays absent) when the platform holds no price for this role.
 */
function pricing(p: Json | null, role: BookingRole): Booking['pricing'] {
  if (p === null) return undefined;
  if (role === 'executor') {
    const net = num(p.net_executor);
    return net === null ? undefined : { currency: String(p.currency ?? 'EUR'), net_executor: net };
  }
  return {
    currency: String(p.currency ?? 'EUR'),
    total: Number(p.total),
    vat_pct: Number(p.vat_pct),
    sale_total: num(p.sale_total),
    extras: extras(p.extras),
    diet: nullable(p.diet),
    parking: nullable(p.parking),
    night_surcharge: nullable(p.night_surcharge),
    payment_mode: String(p.payment_mode ?? ''),
    payment_status: String(p.payment_status ?? ''),
    paid_at: str(p.paid_at),
  };
}

/** `number` is a string or absent (while the passenger has not given it), never null. */
function flightOf(f: Json): NonNullable<Booking['flight']> {
  const number = str(f.number);
  return number === null ? { pending: f.pending === true } : { number, pending: f.pending === true };
}

/** Each member is absent while the platform holds none (a booking not yet confirmed), never null. */
function confirmationOf(row: BookingRow): Booking['confirmation'] {
  const out: Booking['confirmation'] = {};
  if (row.confirmation_mode !== null) out.mode = row.confirmation_mode;
  if (row.confirmed_at !== null) out.confirmed_at = row.confirmed_at.toISOString();
  return out;
}

export function bookingView(row: BookingRow, organizationId: string, scopes: readonly string[]): Booking {
  const role = roleOf(row, organizationId);
  const flight = row.flight;
  const booking: Booking = {
    id: row.id,
    reference: row.reference,
    external_id: row.link_external_id,
    status: publicStatus(row.status),
    service_type: row.service_type,
    hours: row.hours,
    pickup_at: row.pickup_at.toISOString(),
    end_at: iso(row.end_at),
    pickup: place(row.pickup),
    destination: place(row.destination),
    distance_km: row.distance_km,
    flight: flight === null ? null : flightOf(flight),
    passengers: passengers(row.passengers),
    vehicle_category: row.vehicle_category,
    customer: row.customer_id === null ? null : { id: row.customer_id, name: row.customer_name },
    assignment: assignment(row, role),
    role,
    channel: row.channel,
    confirmation: confirmationOf(row),
    event_reference: row.event_reference,
    created_at: row.created_at.toISOString(),
  };
  if (scopes.includes('passengers:read')) {
    const p = row.passenger;
    booking.passenger = { name: str(p?.name), phone: str(p?.phone), email: str(p?.email) };
  }
  if (scopes.includes('pricing:read')) {
    const priced = pricing(row.pricing, role);
    if (priced !== undefined) booking.pricing = priced;
  }
  return booking;
}

// The rules of a booking that need no database: how a body becomes the stored columns (every
// omitted optional field resolved, so the same body always stores the same row and a repeated PUT
// announces nothing), the rules between fields, and booking numbers.
import { randomInt } from 'node:crypto';
import type { Static } from 'typebox';
import type { InternalStatus } from '../../domain/bookings.js';
import { type AppError, invalidField } from '../../http/errors.js';
import type {
  BookingInput,
  BookingRecordRow,
  Internal,
  Passenger,
  Place,
  Pricing,
} from './booking-schemas.js';

type PlaceValue = Static<typeof Place>;

export interface BookingColumns {
  executor_organization_id: string | null;
  status: InternalStatus;
  service_type: 'transfer' | 'hourly';
  hours: number | null;
  pickup_at: string;
  end_at: string | null;
  pickup: PlaceValue | null;
  destination: PlaceValue | null;
  distance_km: number | null;
  flight: { number: string | null; pending: boolean } | null;
  passengers: Required<BookingInput['passengers']>;
  vehicle_category: string | null;
  customer_id: string | null;
  driver_id: string | null;
  vehicle_id: string | null;
  channel: string | null;
  confirmation_mode: string | null;
  confirmed_at: string | null;
  event_reference: string | null;
  passenger: Required<Static<typeof Passenger>> | null;
  pricing: Static<typeof Pricing> | null;
  internal: Static<typeof Internal> | null;
}

function passengersOf(p: BookingInput['passengers']): BookingColumns['passengers'] {
  return {
    count: p.count,
    luggage: p.luggage ?? 0,
    luggage_big: p.luggage_big ?? 0,
    luggage_small: p.luggage_small ?? 0,
    baby_seats: p.baby_seats ?? 0,
    child_seats: p.child_seats ?? 0,
    booster_seats: p.booster_seats ?? 0,
    wheelchair: p.wheelchair ?? false,
  };
}

function pricingOf(p: Static<typeof Pricing>): Static<typeof Pricing> {
  return {
    currency: p.currency,
    total: p.total,
    vat_pct: p.vat_pct,
    sale_total: p.sale_total ?? null,
    extras: p.extras ?? [],
    diet: p.diet ?? null,
    parking: p.parking ?? null,
    night_surcharge: p.night_surcharge ?? null,
    payment_mode: p.payment_mode,
    payment_status: p.payment_status,
    paid_at: p.paid_at ?? null,
    net_executor: p.net_executor ?? null,
  };
}

/** The stored columns of a body: an omitted optional field is null (or its default), never "keep". */
export function toColumns(b: BookingInput): BookingColumns {
  return {
    executor_organization_id: b.executor_organization_id ?? null,
    status: b.status,
    service_type: b.service_type,
    hours: b.hours ?? null,
    pickup_at: b.pickup_at,
    end_at: b.end_at ?? null,
    pickup: b.pickup ?? null,
    destination: b.destination ?? null,
    distance_km: b.distance_km ?? null,
    flight: b.flight ? { number: b.flight.number, pending: b.flight.pending ?? false } : null,
    passengers: passengersOf(b.passengers),
    vehicle_category: b.vehicle_category ?? null,
    customer_id: b.customer_id ?? null,
    driver_id: b.driver_id ?? null,
    vehicle_id: b.vehicle_id ?? null,
    channel: b.channel ?? null,
    confirmation_mode: b.confirmation?.mode ?? null,
    confirmed_at: b.confirmation?.confirmed_at ?? null,
    event_reference: b.event_reference ?? null,
    passenger: b.passenger
      ? { name: b.passenger.name ?? null, phone: b.passenger.phone ?? null, email: b.passenger.email ?? null }
      : null,
    pricing: b.pricing ? pricingOf(b.pricing) : null,
    internal: b.internal ?? null,
  };
}

/** A stored booking back as a full body, so a PATCH is the stored booking with some fields replaced. */
export function toInput(r: BookingRecordRow): BookingInput {
  const iso = (d: Date | string) => new Date(d).toISOString();
  return {
    status: r.status as InternalStatus,
    service_type: r.service_type as BookingInput['service_type'],
    hours: r.hours,
    pickup_at: iso(r.pickup_at),
    end_at: r.end_at === null ? null : iso(r.end_at),
    pickup: r.pickup,
    destination: r.destination,
    distance_km: r.distance_km,
    flight: r.flight,
    passengers: r.passengers,
    vehicle_category: r.vehicle_category as BookingInput['vehicle_category'],
    customer_id: r.customer_id,
    executor_organization_id: r.executor_organization_id,
    driver_id: r.driver_id,
    vehicle_id: r.vehicle_id,
    channel: r.channel as BookingInput['channel'],
    confirmation: {
      mode: r.confirmation.mode,
      confirmed_at: r.confirmation.confirmed_at === null ? null : iso(r.confirmation.confirmed_at),
    },
    event_reference: r.event_reference,
    passenger: r.passenger,
    pricing: r.pricing,
    internal: r.internal,
  };
}

/** Rules between fields of one booking; each failure names the field to fix. */
export function checkFieldRules(c: BookingColumns, originatorId: string): void {
  if (c.service_type === 'transfer' && c.hours !== null) {
    throw invalidField('hours', 'hours solo se admite en servicios por horas (hourly).');
  }
  if (c.service_type === 'hourly' && c.hours === null) {
    throw invalidField('hours', 'Un servicio por horas (hourly) necesita hours.');
  }
  if (c.end_at !== null && Date.parse(c.end_at) < Date.parse(c.pickup_at)) {
    throw invalidField('end_at', 'end_at no puede ser anterior a pickup_at.');
  }
  if (c.executor_organization_id === originatorId) {
    throw invalidField(
      'executor_organization_id',
      'executor_organization_id debe ser otra organización; null si la ejecuta la propia.',
    );
  }
}

/**
 * A booking number begins with the originator's organization code and is longer than it (judged
 * with the write, feed_write_booking, which knows the code): the error that says so.
 */
export function referenceRefused(code: string): AppError {
  return invalidField('reference', `reference debe empezar por el código de la organización (${code}).`);
}

/** The random part of a new booking number: 8 digits, zero-padded, after the organization code. */
export function drawDigits(digits: () => number = () => randomInt(100_000_000)): string {
  return String(digits()).padStart(8, '0');
}

// Demo bookings: pick-ups over the last 60 days and the next 30, each status where it makes sense
// in time, both service types, and the exchange in both directions. Recent ones are walked through
// their life cycle with PATCHes so that the event log shows every kind of event.
import type { Queryable } from '../db/db.js';
import type { InternalStatus } from '../domain/bookings.js';
import type { BookingInput, BookingPatchInput } from '../operator/feed/booking-schemas.js';
import { patchBooking, upsertBooking } from '../operator/feed/bookings.js';
import type { DemoCustomer, DemoFleet } from './catalogue.js';
import type { Random } from './random.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

type Place = { address: string; lat: number; lng: number };

const AIRPORT: Place = { address: 'Aeropuerto de Málaga (AGP), Terminal 3', lat: 36.6749, lng: -4.4991 };
const PLACES: Place[] = [
  { address: 'Estación María Zambrano, Málaga', lat: 36.7117, lng: -4.4326 },
  { address: 'Hotel Mirador, Av. del Mar 12, Marbella', lat: 36.5101, lng: -4.8825 },
  { address: 'Puerto Banús, Marbella', lat: 36.487, lng: -4.9526 },
  { address: 'Paseo Marítimo, Estepona', lat: 36.4276, lng: -5.1463 },
  { address: 'Balcón de Europa, Nerja', lat: 36.758, lng: -3.876 },
  { address: 'Plaza de España, Ronda', lat: 36.7423, lng: -5.1671 },
  { address: 'La Carihuela, Torremolinos', lat: 36.6218, lng: -4.4996 },
  { address: 'Puerto Marina, Benalmádena', lat: 36.5988, lng: -4.5163 },
  { address: 'Los Boliches, Fuengirola', lat: 36.5396, lng: -4.6247 },
  { address: 'La Cala Golf Resort, Mijas', lat: 36.5956, lng: -4.6373 },
  { address: 'Alhambra, Granada', lat: 37.1761, lng: -3.5881 },
  { address: 'Estación Santa Justa, Sevilla', lat: 37.3919, lng: -5.9756 },
];

const PASSENGERS = [
  'Ana Pérez',
  'John Smith',
  'Sophie Martin',
  'Lars Andersen',
  'María López',
  'Hans Müller',
  'Emma Johnson',
  'Giulia Rossi',
  'Pierre Dubois',
  'Carlos Fernández',
  'Olivia Brown',
  'Jan de Vries',
  'Ingrid Larsen',
  'Lucas Moreau',
  'Sara García',
  'Tom Wilson',
  'Anna Kowalska',
  'Marco Bianchi',
];
const FLIGHTS = ['IB3911', 'VY2114', 'FR8326', 'U24471', 'BA2712', 'LH1158', 'KL1043', 'SK1581', 'EW9582'];
const CHANNELS = ['customer_engine', 'manual', 'manual', 'bulk_upload', 'recurring'] as const;

// Cycled by index so that every status is present whatever the generator draws.
const PAST: InternalStatus[] = [
  'completada',
  'completada',
  'cancelada',
  'completada',
  'no_show',
  'completada',
  'rechazada',
  'completada',
];
const FUTURE: InternalStatus[] = [
  'confirmada',
  'no_segura',
  'confirmada',
  'solicitada',
  'confirmada',
  'cancelada',
  'confirmada',
];
const ASSIGNED = new Set<InternalStatus>(['confirmada', 'en_camino', 'en_curso', 'completada', 'no_show']);
const LIFE_CYCLE: Partial<Record<InternalStatus, InternalStatus[]>> = {
  en_camino: ['en_camino'],
  en_curso: ['en_camino', 'en_curso'],
  completada: ['en_camino', 'en_curso', 'completada'],
  no_show: ['en_camino', 'no_show'],
  cancelada: ['cancelada'],
};

export interface Side {
  id: string;
  code: string;
  customers: DemoCustomer[];
  fleet: DemoFleet;
}

interface Plan {
  id: string;
  originator: Side;
  input: BookingInput;
  /** PATCHes applied after creation, in order. */
  steps: BookingPatchInput[];
}

const round5 = (ms: number) => Math.floor(ms / (5 * MINUTE)) * 5 * MINUTE;
const iso = (ms: number) => new Date(ms).toISOString();
const money = (n: number) => Math.round(n * 100) / 100;

/** Road distance, about 1.25 times the straight line. */
function distanceKm(a: Place, b: Place): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLng = (b.lng - a.lng) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLng / 2) ** 2;
  return Math.round(2 * 6371 * Math.asin(Math.sqrt(h)) * 1.25 * 10) / 10;
}

function statusAt(index: number, pickup: number, now: number): InternalStatus {
  if (pickup < now - 2 * HOUR) return PAST[index % PAST.length] as InternalStatus;
  if (pickup <= now + 2 * HOUR) return pickup <= now ? 'en_curso' : 'en_camino';
  return FUTURE[index % FUTURE.length] as InternalStatus;
}

export interface Draft {
  index: number;
  pickup: number;
  originator: Side;
  executor: Side | null;
  status: InternalStatus;
}

function passengerOf(rand: Random) {
  const name = rand.pick(PASSENGERS);
  const email = `${name
    .normalize('NFD')
    .replace(/[^A-Za-z ]/g, '')
    .toLowerCase()
    .replace(/ /g, '.')}@example.com`;
  return { name, phone: `+34${rand.int(600_000_000, 699_999_999)}`, email };
}

export function bookingInput(rand: Random, d: Draft, now: number): BookingInput {
  const hourly = d.index % 5 === 2;
  const fromAirport = !hourly && rand.chance(0.5);
  const pickup = fromAirport ? AIRPORT : rand.pick(PLACES);
  const destination = hourly && rand.chance(0.5) ? null : rand.pick(PLACES.filter((p) => p !== pickup));
  const hours = hourly ? rand.pick([2, 3, 4, 4, 6, 8, 2.5]) : null;
  const distance = destination ? distanceKm(pickup, destination) : null;
  const endAt = hours
    ? d.pickup + hours * HOUR
    : d.pickup + Math.max(20, Math.round((distance ?? 30) * 0.9)) * MINUTE;
  const count = rand.pick([1, 2, 2, 2, 3, 4, 5, 6]);
  const vip = rand.chance(0.15);
  const category = count > 3 ? (vip ? 'van_vip' : 'van') : vip ? 'sedan_vip' : 'sedan';
  const executing = d.executor ?? d.originator;
  const vehicle =
    executing.fleet.vehicles.find((v) => v.category === category) ?? executing.fleet.vehicles[0];
  const assigned = ASSIGNED.has(d.status) || (d.status === 'no_segura' && rand.chance(0.5));
  const customers = d.originator.customers.filter((c) => c.active);
  const customer = customers.length > 0 && rand.chance(0.9) ? rand.pick(customers) : null;
  const total = money(35 + (distance ?? 40) * 1.1 + (hours ?? 0) * 45 + (vip ? 60 : 0));
  const created = Math.min(now - 30 * MINUTE, Math.max(now - 60 * DAY, d.pickup - rand.int(1, 20) * DAY));
  const confirmed = d.status !== 'solicitada' && d.status !== 'rechazada';
  const surname = passengerOf(rand);
  return {
    status: d.status,
    service_type: hourly ? 'hourly' : 'transfer',
    hours,
    pickup_at: iso(d.pickup),
    end_at: iso(endAt),
    pickup,
    destination,
    distance_km: distance,
    flight: fromAirport
      ? rand.chance(0.85)
        ? { number: rand.pick(FLIGHTS), pending: false }
        : { number: null, pending: true }
      : null,
    passengers: {
      count,
      luggage: count + rand.int(0, 2),
      luggage_big: Math.ceil(count / 2),
      luggage_small: rand.int(0, count),
      baby_seats: count > 2 && rand.chance(0.2) ? 1 : 0,
      child_seats: count > 3 && rand.chance(0.2) ? 1 : 0,
      booster_seats: 0,
      wheelchair: rand.chance(0.04),
    },
    vehicle_category: category,
    customer_id: customer?.id ?? null,
    executor_organization_id: d.executor?.id ?? null,
    driver_id: assigned ? rand.pick(executing.fleet.drivers) : null,
    vehicle_id: assigned ? (vehicle?.id ?? null) : null,
    channel: customer?.type === 'public_engine' ? 'public_engine' : rand.pick(CHANNELS),
    confirmation: {
      mode: confirmed ? rand.pick(['automatic', 'manual']) : null,
      // Confirmed a little after it came in, never later than now.
      confirmed_at: confirmed ? iso(Math.min(now - MINUTE, created + rand.int(2, 90) * MINUTE)) : null,
    },
    event_reference: d.index >= 45 && d.index <= 47 ? 'BODA-GARCIA-LOPEZ' : null,
    passenger: surname,
    pricing: {
      currency: 'EUR',
      total,
      vat_pct: 10,
      sale_total: customer?.type === 'account' ? money(total * 1.15) : null,
      extras:
        count > 2 && rand.chance(0.3) ? [{ name: 'Silla de bebé', amount: 5, per_passenger: false }] : [],
      diet: null,
      parking: fromAirport ? 4.5 : null,
      night_surcharge: null,
      payment_mode: customer?.type === 'account' ? 'credit' : rand.pick(['card', 'cash']),
      payment_status: d.status === 'completada' ? 'paid' : 'pending',
      paid_at: d.status === 'completada' ? iso(endAt) : null,
      net_executor: d.executor ? money(total * 0.8) : null,
    },
    internal: {
      notes: rand.chance(0.3) ? 'Cliente habitual; prefiere conductor que hable inglés.' : null,
      observations: null,
      chat:
        d.status === 'en_curso'
          ? [{ from: 'driver', text: 'Estoy en la salida de llegadas.', at: iso(d.pickup) }]
          : [],
      pickup_sign: surname.name.toUpperCase(),
      gps:
        d.status === 'en_camino' || d.status === 'en_curso'
          ? { lat: pickup.lat, lng: pickup.lng, at: iso(now) }
          : null,
    },
    created_at: iso(created),
  };
}

/** Recent bookings are created confirmed and unassigned, then assigned and moved to their status. */
function lifeCycle(input: BookingInput, pickup: number, now: number): Plan['steps'] {
  const path = LIFE_CYCLE[input.status];
  if (!path || pickup < now - 3 * DAY || pickup > now + DAY) return [];
  const final = { ...input };
  input.status = 'confirmada';
  input.driver_id = null;
  input.vehicle_id = null;
  const steps: BookingPatchInput[] = [];
  if (final.driver_id) steps.push({ driver_id: final.driver_id, vehicle_id: final.vehicle_id ?? null });
  for (const status of path) steps.push({ status });
  return steps;
}

/** ~60 bookings of the demo organization (some executed by the partner) and 8 the partner sends it. */
export function planBookings(rand: Random, now: number, demo: Side, partner: Side): Plan[] {
  const drafts: Draft[] = [];
  for (let i = 0; i < 60; i += 1) {
    let pickup = round5(now - 60 * DAY + ((i + rand.next()) * (90 * DAY)) / 60);
    if (i === 40) pickup = round5(now - 40 * MINUTE);
    if (i === 41) pickup = round5(now + 35 * MINUTE);
    const executor = i % 7 === 3 ? partner : null;
    drafts.push({ index: i, pickup, originator: demo, executor, status: statusAt(i, pickup, now) });
  }
  for (let i = 0; i < 8; i += 1) {
    const pickup = round5(now - 20 * DAY + ((i + rand.next()) * (40 * DAY)) / 8);
    drafts.push({
      index: 60 + i,
      pickup,
      originator: partner,
      executor: demo,
      status: statusAt(i + 1, pickup, now),
    });
  }
  const plans = drafts.map((d) => {
    const input = bookingInput(rand, d, now);
    return { id: rand.uuid(), originator: d.originator, input, steps: lifeCycle(input, d.pickup, now) };
  });
  // Booking numbers grow with creation time, per originator.
  plans.sort((a, b) => Date.parse(a.input.created_at as string) - Date.parse(b.input.created_at as string));
  const sequence = new Map<string, number>();
  for (const plan of plans) {
    const n = (sequence.get(plan.originator.code) ?? 0) + 1;
    sequence.set(plan.originator.code, n);
    plan.input.reference = `${plan.originator.code}${String(n).padStart(6, '0')}`;
  }
  return plans;
}

export async function writeBookings(q: Queryable, plans: Plan[]): Promise<void> {
  for (const plan of plans) await upsertBooking(q, plan.originator.id, plan.id, plan.input);
  for (const plan of plans) {
    for (const step of plan.steps) await patchBooking(q, plan.originator.id, plan.id, step);
  }
}

// Simulated traffic for the local sandbox: new bookings of the demo organization walk their life
// cycle (created, confirmed, assigned, en route, in progress, completed; some rejected, cancelled
// or no-show) at a given rate, written through the feed's service functions like the demo seed and
// the platform, so the event log and the webhooks see real events. Every step is one write in one
// transaction, so one step is one event.
//
// The same seed draws the same changes in the same order (booking ids come from a generator of
// their own, so an id already taken by an earlier run is drawn again without shifting the rest).
import type { FastifyBaseLogger } from 'fastify';
import type { Db, Queryable } from '../db/db.js';
import type { InternalStatus } from '../domain/bookings.js';
import type { BookingInput, BookingPatchInput } from '../operator/feed/booking-schemas.js';
import { patchBooking, upsertBooking } from '../operator/feed/bookings.js';
import { bookingInput, type Side } from './bookings.js';
import type { DemoCustomer, DemoVehicle } from './catalogue.js';
import { type Random, seededRandom } from './random.js';

const MINUTE = 60_000;
/** Bookings on their way at once; the rest of the time a new one is created. */
const IN_FLIGHT = 4;

export type SimulatedChange =
  | 'created'
  | 'confirmed'
  | 'rejected'
  | 'assigned'
  | 'en_route'
  | 'in_progress'
  | 'completed'
  | 'cancelled'
  | 'no_show';

export interface SimulatedStep {
  bookingId: string;
  reference: string | null;
  change: SimulatedChange;
}

interface Journey {
  id: string;
  reference: string | null;
  status: InternalStatus;
  assigned: boolean;
  /** The driver and vehicle the booking will get when it is assigned. */
  crew: { driver_id: string | null; vehicle_id: string | null };
  pricing: BookingInput['pricing'];
}

export interface Simulator {
  /** Makes one change (one event) and says which. */
  step(now?: number): Promise<SimulatedStep>;
}

/** The demo organization as the seed left it: its active customers, drivers and vehicles. */
async function loadSide(q: Queryable, organizationId: string): Promise<Side> {
  const [organization] = await q.query<{ code: string }>('SELECT code FROM organizations WHERE id = $1', [
    organizationId,
  ]);
  if (!organization) throw new Error(`simulation: organization ${organizationId} not found`);
  const customers = await q.query<DemoCustomer>(
    'SELECT id, name, type, active FROM customers WHERE organization_id = $1 AND deleted_at IS NULL ORDER BY id',
    [organizationId],
  );
  const drivers = await q.query<{ id: string }>(
    'SELECT id FROM drivers WHERE organization_id = $1 AND active ORDER BY id',
    [organizationId],
  );
  const vehicles = await q.query<DemoVehicle>(
    'SELECT id, category, seats FROM vehicles WHERE organization_id = $1 AND active ORDER BY id',
    [organizationId],
  );
  if (drivers.length === 0 || vehicles.length === 0) {
    throw new Error('simulation: the organization needs at least one active driver and vehicle');
  }
  return {
    id: organizationId,
    code: organization.code,
    customers,
    fleet: { drivers: drivers.map((d) => d.id), vehicles },
  };
}

/**
 * The next status of a booking on its way, or null when it is done. Weighted like a working day:
 * most are confirmed, driven and completed; some are rejected, cancelled or no-shows.
 */
function nextChange(rand: Random, j: Journey): SimulatedChange | null {
  switch (j.status) {
    case 'solicitada':
      return rand.chance(0.85) ? 'confirmed' : 'rejected';
    case 'confirmada':
      if (!j.assigned) return rand.chance(0.88) ? 'assigned' : 'cancelled';
      return rand.chance(0.92) ? 'en_route' : 'cancelled';
    case 'en_camino':
      return rand.chance(0.85) ? 'in_progress' : 'no_show';
    case 'en_curso':
      return 'completed';
    default:
      return null;
  }
}

const FINAL = new Set<InternalStatus>(['completada', 'cancelada', 'no_show', 'rechazada']);

const STATUS_OF: Partial<Record<SimulatedChange, InternalStatus>> = {
  confirmed: 'confirmada',
  rejected: 'rechazada',
  en_route: 'en_camino',
  in_progress: 'en_curso',
  completed: 'completada',
  cancelled: 'cancelada',
  no_show: 'no_show',
};

export async function createSimulator(db: Db, organizationId: string, seed: number): Promise<Simulator> {
  const side = await loadSide(db, organizationId);
  const rand = seededRandom(seed);
  const ids = seededRandom(seed ^ 0x5eed_1d5);
  const journeys: Journey[] = [];
  let created = 0;

  async function freshId(q: Queryable): Promise<string> {
    for (;;) {
      const id = ids.uuid();
      if ((await q.query('SELECT 1 FROM bookings WHERE id = $1', [id])).length === 0) return id;
    }
  }

  async function create(now: number): Promise<SimulatedStep> {
    created += 1;
    const status: InternalStatus = rand.chance(0.3) ? 'solicitada' : 'confirmada';
    const pickup = Math.ceil((now + 45 * MINUTE) / (5 * MINUTE)) * 5 * MINUTE;
    const input = bookingInput(
      rand,
      { index: 1000 + created, pickup, originator: side, executor: null, status },
      now,
    );
    // Created now and unassigned; the driver and vehicle drawn come with the assignment step.
    const crew = { driver_id: input.driver_id ?? null, vehicle_id: input.vehicle_id ?? null };
    const { created_at: _drawn, ...fields } = input;
    const body: BookingInput = {
      ...fields,
      driver_id: null,
      vehicle_id: null,
      confirmation:
        status === 'confirmada'
          ? { mode: 'automatic', confirmed_at: new Date(now).toISOString() }
          : { mode: null, confirmed_at: null },
      internal: { ...input.internal, gps: null, chat: [] } as BookingInput['internal'],
    };
    const journey = await db.tx(async (q) => {
      const id = await freshId(q);
      const { row } = await upsertBooking(q, organizationId, id, body);
      return {
        id,
        reference: row.reference ?? null,
        status,
        assigned: false,
        crew: crew.driver_id
          ? crew
          : {
              driver_id: rand.pick(side.fleet.drivers),
              vehicle_id: side.fleet.vehicles[0]?.id ?? null,
            },
        pricing: input.pricing,
      } satisfies Journey;
    });
    journeys.push(journey);
    return { bookingId: journey.id, reference: journey.reference, change: 'created' };
  }

  async function advance(j: Journey, change: SimulatedChange, now: number): Promise<SimulatedStep> {
    const at = new Date(now).toISOString();
    let patch: BookingPatchInput;
    if (change === 'assigned') {
      patch = { ...j.crew };
    } else {
      const status = STATUS_OF[change] as InternalStatus;
      patch = { status };
      if (change === 'confirmed') patch.confirmation = { mode: 'manual', confirmed_at: at };
      if (change === 'completed' && j.pricing) {
        patch.pricing = { ...j.pricing, payment_status: 'paid', paid_at: at };
      }
    }
    try {
      await db.tx((q) => patchBooking(q, organizationId, j.id, patch));
    } catch (error) {
      // Changed or deleted by someone else (the operator feed): leave it be.
      journeys.splice(journeys.indexOf(j), 1);
      throw error;
    }
    if (change === 'assigned') j.assigned = true;
    else j.status = STATUS_OF[change] as InternalStatus;
    if (FINAL.has(j.status)) journeys.splice(journeys.indexOf(j), 1);
    return { bookingId: j.id, reference: j.reference, change };
  }

  return {
    async step(now = Date.now()) {
      const start = journeys.length === 0 || (journeys.length < IN_FLIGHT && rand.chance(0.35));
      if (start) return create(now);
      const journey = rand.pick(journeys);
      const change = nextChange(rand, journey);
      // A journey leaves the list when it reaches a final status, so there is always a next change.
      if (change === null) throw new Error(`simulation: booking ${journey.id} has no next change`);
      return advance(journey, change, now);
    },
  };
}

export interface SimulationOptions {
  db: Db;
  organizationId: string;
  /** Changes (events) per second. */
  rate: number;
  seed: number;
  logger: FastifyBaseLogger;
}

export interface Simulation {
  readonly steps: number;
  /** Stops the timer and waits for the change in progress, if any. */
  stop(): Promise<void>;
}

export const MAX_RATE = 100;

/** Runs the simulator on a timer until stopped. A failed step is logged and the next one goes on. */
export async function startSimulation(options: SimulationOptions): Promise<Simulation> {
  const { logger, rate } = options;
  if (!(rate > 0 && rate <= MAX_RATE)) throw new Error(`--rate: between 0 and ${MAX_RATE} events per second`);
  const simulator = await createSimulator(options.db, options.organizationId, options.seed);
  const interval = 1000 / rate;
  let steps = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  let due = Date.now();

  const tick = () => {
    current = simulator
      .step()
      .then((s) => {
        steps += 1;
        logger.info(
          { booking: s.bookingId },
          `simulated: booking ${s.reference ?? s.bookingId} ${s.change.replace('_', ' ')}`,
        );
      })
      .catch((error) => logger.warn({ err: error }, 'simulated change failed; going on'))
      .finally(() => {
        if (stopped) return;
        // Keeps the rate on average; after a long pause it starts again from now, without a burst.
        due = Math.max(due + interval, Date.now() - 1000);
        timer = setTimeout(tick, Math.max(0, due - Date.now()));
      });
  };
  logger.info(
    { rate, seed: options.seed },
    `simulating booking traffic: ${rate} change(s) per second, seed ${options.seed} (--seed ${options.seed} repeats it)`,
  );
  tick();
  return {
    get steps() {
      return steps;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}

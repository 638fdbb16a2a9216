// The demo catalogue: customers of the demo organization, drivers and vehicles of both companies
// of the exchange. Written through the feed's service functions, like the platform would.
import type { Queryable } from '../db/db.js';
import { upsertCustomer, upsertDriver, upsertVehicle } from '../operator/feed/catalogue.js';
import type { Random } from './random.js';

export interface DemoCustomer {
  id: string;
  name: string;
  type: 'account' | 'public_engine';
  active: boolean;
}

export interface DemoVehicle {
  id: string;
  category: 'sedan' | 'van' | 'sedan_vip' | 'van_vip';
  seats: number;
}

export interface DemoFleet {
  drivers: string[];
  vehicles: DemoVehicle[];
}

type CustomerSpec = [
  name: string,
  type: DemoCustomer['type'],
  group: 'hotels' | 'agencies' | null,
  active: boolean,
];

const GROUPS = { hotels: 'Hoteles Costa del Sol', agencies: 'Agencias y DMC' } as const;

const CUSTOMERS: CustomerSpec[] = [
  ['Hotel Mirador Marbella', 'account', 'hotels', true],
  ['Gran Hotel Málaga Palacio', 'account', 'hotels', true],
  ['Puerto Banús Suites', 'account', 'hotels', true],
  ['Viajes Alborán', 'account', 'agencies', true],
  ['Andalucía DMC', 'account', 'agencies', true],
  ['La Cala Golf Resort', 'account', null, true],
  ['Reservas web', 'public_engine', null, true],
  ['Eventos Sol y Mar', 'account', 'agencies', false],
];

export const DEMO_DRIVERS: [string, string][] = [
  ['Lucía Gómez', 'Lucía'],
  ['Javier Martín', 'Javi'],
  ['Carmen Ruiz', 'Carmen'],
  ['Antonio Navarro', 'Toni'],
  ['Elena Torres', 'Elena'],
  ['Miguel Ángel Romero', 'Miguel'],
];

export const PARTNER_DRIVERS: [string, string][] = [
  ['Pedro Sánchez Vidal', 'Pedro'],
  ['Rosa Molina', 'Rosa'],
  ['David Castro', 'David'],
  ['Isabel Ortega', 'Isa'],
  ['Francisco Delgado', 'Paco'],
  ['Laura Herrera', 'Laura'],
];

type VehicleSpec = [
  model: string,
  category: DemoVehicle['category'],
  seats: number,
  luggage: number,
  propulsion: string,
  eco: string,
];

const VEHICLES: VehicleSpec[] = [
  ['Mercedes-Benz Clase E', 'sedan', 4, 3, 'hybrid', 'ECO'],
  ['Toyota Corolla', 'sedan', 4, 2, 'hybrid', 'ECO'],
  ['Mercedes-Benz Clase V', 'van', 7, 6, 'diesel', 'C'],
  ['Volkswagen Caravelle', 'van', 8, 7, 'diesel', 'C'],
  ['Mercedes-Benz Clase S', 'sedan_vip', 3, 3, 'plug_in_hybrid', '0'],
  ['Mercedes-Benz Clase V Avantgarde', 'van_vip', 6, 6, 'electric', '0'],
];

const PLATE_LETTERS = 'BCDFGHJKLMNPRSTVWXYZ';

function plate(rand: Random): string {
  const letters = Array.from({ length: 3 }, () => rand.pick([...PLATE_LETTERS])).join('');
  return `${rand.int(1000, 9999)}${letters}`;
}

export async function seedCustomers(
  q: Queryable,
  rand: Random,
  organizationId: string,
): Promise<DemoCustomer[]> {
  const groupIds = { hotels: rand.uuid(), agencies: rand.uuid() };
  const customers: DemoCustomer[] = [];
  for (const [index, [name, type, group, active]] of CUSTOMERS.entries()) {
    const id = rand.uuid();
    await upsertCustomer(q, organizationId, id, {
      name,
      type,
      active,
      external_id: index % 3 === 0 ? `CRM-${1001 + index}` : null,
      group: group ? { id: groupIds[group], name: GROUPS[group] } : null,
    });
    customers.push({ id, name, type, active });
  }
  return customers;
}

/** One of the drivers is inactive (on leave); one vehicle is adapted for wheelchairs. */
export async function seedFleet(
  q: Queryable,
  rand: Random,
  organizationId: string,
  drivers: [string, string][],
): Promise<DemoFleet> {
  const fleet: DemoFleet = { drivers: [], vehicles: [] };
  for (const [index, [name, nickname]] of drivers.entries()) {
    const id = rand.uuid();
    const active = index !== drivers.length - 1;
    await upsertDriver(q, organizationId, id, {
      name,
      nickname,
      phone: `+34${rand.int(600_000_000, 699_999_999)}`,
      active,
      status: active ? rand.pick(['available', 'available', 'on_service']) : 'off_duty',
      has_app_access: index !== 2,
      external_id: `EMP-${100 + index}`,
    });
    if (active) fleet.drivers.push(id);
  }
  for (const [index, [model, category, seats, luggage, propulsion, eco]] of VEHICLES.entries()) {
    const id = rand.uuid();
    await upsertVehicle(q, organizationId, id, {
      plate: plate(rand),
      model,
      nickname: `${category.startsWith('van') ? 'V' : 'T'}${index + 1}`,
      category,
      seats,
      luggage,
      wheelchair_adapted: model === 'Volkswagen Caravelle',
      eco_label: eco,
      propulsion,
      active: true,
      external_id: null,
    });
    fleet.vehicles.push({ id, category, seats });
  }
  return fleet;
}

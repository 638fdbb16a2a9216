// Platform-feed fixtures: catalogue rows and bookings pushed through the operator API exactly as
// the booking platform pushes them. Defaults make a valid row; overrides change what a test needs.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestService } from './context.js';

async function put(svc: TestService, path: string, body: unknown) {
  const res = await svc.op('PUT', path, body);
  assert.ok(res.status === 200 || res.status === 201, `PUT ${path}: ${res.status} ${res.text}`);
  return res.body;
}

export function customerBody(overrides: Record<string, unknown> = {}) {
  return {
    name: 'Hotel Mirador',
    type: 'account',
    active: true,
    external_id: null,
    group: null,
    ...overrides,
  };
}

export function driverBody(overrides: Record<string, unknown> = {}) {
  return {
    name: 'Lucía Gómez',
    nickname: 'Lucía',
    phone: '+34600000001',
    active: true,
    status: 'available',
    has_app_access: true,
    external_id: null,
    ...overrides,
  };
}

export function vehicleBody(overrides: Record<string, unknown> = {}) {
  return {
    plate: '1234ABC',
    model: 'Mercedes-Benz Clase E',
    nickname: 'E1',
    category: 'sedan',
    seats: 4,
    luggage: 3,
    wheelchair_adapted: false,
    eco_label: 'C',
    propulsion: 'diesel',
    active: true,
    external_id: null,
    ...overrides,
  };
}

export function bookingBody(overrides: Record<string, unknown> = {}) {
  return {
    status: 'confirmada',
    service_type: 'transfer',
    hours: null,
    pickup_at: '2026-12-01T10:00:00.000Z',
    end_at: '2026-12-01T11:00:00.000Z',
    pickup: { address: 'Aeropuerto de Málaga T2', lat: 36.6749, lng: -4.4991 },
    destination: { address: 'Hotel Mirador, Marbella', lat: 36.5101, lng: -4.8825 },
    distance_km: 52.4,
    flight: { number: 'IB3911', pending: false },
    passengers: {
      count: 2,
      luggage: 2,
      luggage_big: 1,
      luggage_small: 1,
      baby_seats: 0,
      child_seats: 0,
      booster_seats: 0,
      wheelchair: false,
    },
    vehicle_category: 'sedan',
    customer_id: null,
    executor_organization_id: null,
    driver_id: null,
    vehicle_id: null,
    channel: 'manual',
    confirmation: { mode: 'automatic', confirmed_at: '2026-11-20T09:00:00.000Z' },
    event_reference: null,
    passenger: { name: 'Ana Pérez', phone: '+34600111222', email: 'ana@example.com' },
    pricing: {
      currency: 'EUR',
      total: 95.5,
      vat_pct: 10,
      sale_total: 110,
      extras: [{ name: 'Silla de bebé', amount: 5, per_passenger: false }],
      diet: null,
      parking: null,
      night_surcharge: null,
      payment_mode: 'credit',
      payment_status: 'pending',
      paid_at: null,
      net_executor: 80,
    },
    internal: {
      notes: 'internal note',
      observations: 'internal observation',
      chat: [{ from: 'driver', text: 'chat line' }],
      pickup_sign: 'PEREZ',
      gps: { lat: 36.67, lng: -4.49, at: '2026-12-01T09:55:00.000Z' },
    },
    ...overrides,
  };
}

export const putCustomer = (svc: TestService, orgId: string, overrides = {}, id: string = randomUUID()) =>
  put(svc, `/organizations/${orgId}/customers/${id}`, customerBody(overrides));

export const putDriver = (svc: TestService, orgId: string, overrides = {}, id: string = randomUUID()) =>
  put(svc, `/organizations/${orgId}/drivers/${id}`, driverBody(overrides));

export const putVehicle = (svc: TestService, orgId: string, overrides = {}, id: string = randomUUID()) =>
  put(svc, `/organizations/${orgId}/vehicles/${id}`, vehicleBody(overrides));

/** orgId is the originator. */
export const putBooking = (svc: TestService, orgId: string, overrides = {}, id: string = randomUUID()) =>
  put(svc, `/organizations/${orgId}/bookings/${id}`, bookingBody(overrides));

// Platform-feed fixtures: catalogue rows and bookings pushed through the operator API exactly as
// the booking platform pushes them. Defaults make a valid row; overrides change what a test needs.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import BOOKING from '../../examples/feed-booking.json' with { type: 'json' };
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

/** The complete booking of examples/feed-booking.json (the body docs/operator-feed.md shows), changed by `overrides`. */
export function bookingBody(overrides: Record<string, unknown> = {}) {
  return { ...structuredClone(BOOKING), ...overrides };
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

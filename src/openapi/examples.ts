// Example values of the published document: one of each resource and of each error code. They are
// data, not schemas; the linter checks every one against the schema it illustrates.
import { ERRORS, type ErrorCode } from '../http/errors.js';

const BOOKING_ID = '0a8e6f1c-3b7d-4c2e-9f1a-5d6b7c8e9f01';
const CUSTOMER_ID = '5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const DRIVER_ID = '7d2e3f4a-5b6c-4d7e-8f9a-0b1c2d3e4f5a';
const VEHICLE_ID = '8e3f4a5b-6c7d-4e8f-9a0b-1c2d3e4f5a6b';
const EVENT_ID = '0193c1f2-7a4b-7c3d-8e5f-6a7b8c9d0e1f';
const WEBHOOK_ID = '3f9a0b1c-2d3e-4f5a-8b6c-7d8e9f0a1b2c';
const DELIVERY_ID = '9b0c1d2e-3f4a-4b5c-8d6e-7f8a9b0c1d2e';
const ORGANIZATION_ID = '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
const REQUEST_ID = 'req_3q2Xk9ZpWv7LmN4a';

export const bookingExample = {
  id: BOOKING_ID,
  reference: '1000042',
  external_id: 'ERP-2026-0042',
  status: 'confirmed',
  service_type: 'transfer',
  hours: null,
  pickup_at: '2026-11-24T09:30:00.000Z',
  end_at: '2026-11-24T10:15:00.000Z',
  pickup: { address: 'Aeropuerto Adolfo Suárez Madrid-Barajas T4', lat: 40.4915, lng: -3.5931 },
  destination: { address: 'Paseo del Prado 8, Madrid', lat: 40.4138, lng: -3.6921 },
  distance_km: 17.4,
  flight: { number: 'IB3170', pending: false },
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
  customer: { id: CUSTOMER_ID, name: 'Hotel Prado' },
  assignment: {
    external: false,
    driver: { id: DRIVER_ID, name: 'Lucía Martín', nickname: 'Lucía' },
    vehicle: { id: VEHICLE_ID, plate: '1234 LMN', model: 'Toyota Corolla' },
  },
  role: 'originator_and_executor',
  channel: 'customer_engine',
  confirmation: { mode: 'automatic', confirmed_at: '2026-11-20T18:02:11.000Z' },
  event_reference: null,
  created_at: '2026-11-20T18:00:00.000Z',
  passenger: { name: 'Ana García', phone: '+34600111222', email: 'ana@example.org' },
  pricing: {
    currency: 'EUR',
    total: 55,
    vat_pct: 10,
    sale_total: 60.5,
    extras: [{ name: 'Silla de bebé', amount: 5, per_passenger: false }],
    diet: null,
    parking: null,
    night_surcharge: null,
    payment_mode: 'invoice',
    payment_status: 'pending',
    paid_at: null,
  },
};

/** The same booking as its executor sees it: another company originated it. */
export const executorBookingExample = {
  ...bookingExample,
  role: 'executor',
  pricing: { currency: 'EUR', net_executor: 42 },
};

export const customerExample = {
  id: CUSTOMER_ID,
  external_id: null,
  name: 'Hotel Prado',
  type: 'account',
  active: true,
  group: { id: '6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d', name: 'Hoteles Centro' },
  created_at: '2026-01-10T08:00:00.000Z',
};

export const driverExample = {
  id: DRIVER_ID,
  external_id: null,
  name: 'Lucía Martín',
  nickname: 'Lucía',
  phone: '+34600333444',
  active: true,
  status: 'available',
  has_app_access: true,
  created_at: '2026-02-01T08:00:00.000Z',
};

export const vehicleExample = {
  id: VEHICLE_ID,
  external_id: null,
  plate: '1234 LMN',
  model: 'Toyota Corolla',
  nickname: 'Corolla 3',
  category: 'sedan',
  seats: 4,
  luggage: 3,
  wheelchair_adapted: false,
  eco_label: 'ECO',
  propulsion: 'hybrid',
  active: true,
  created_at: '2026-02-01T08:00:00.000Z',
};

export const eventExample = {
  id: EVENT_ID,
  type: 'booking.updated',
  version: 1,
  created_at: '2026-11-23T10:15:02.311Z',
  resource: { type: 'booking', id: BOOKING_ID },
  changes: ['status', 'confirmed_at'],
  previous_status: 'no_segura',
  reference: '1000042',
};

export const integrationExample = {
  integration: { id: '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e', name: 'ERP', kind: 'erp' },
  organization: { id: ORGANIZATION_ID, code: '1000', name: 'Transportes Ejemplo' },
  key: { prefix: 'svc_live_AbC123', name: 'producción' },
  environment: 'live',
  scopes: ['bookings:read', 'events:read', 'webhooks:read', 'webhooks:write'],
  rate_limits: { per_minute: { key: 600, organization: 1200, endpoint: 300 } },
  api_version: 'v1',
};

export const externalIdLinkExample = {
  id: BOOKING_ID,
  entity: 'booking',
  external_id: 'ERP-2026-0042',
  created_at: '2026-11-21T09:00:00.000Z',
  updated_at: '2026-11-21T09:00:00.000Z',
};

export const deletedExample = { deleted: true };

export const webhookExample = {
  id: WEBHOOK_ID,
  url: 'https://erp.example.org/hooks/svc',
  events: ['booking.created', 'booking.cancelled'],
  active: true,
  description: 'ERP de facturación',
  consecutive_failures: 0,
  disabled_at: null,
  disabled_reason: null,
  created_at: '2026-11-21T09:00:00.000Z',
  updated_at: '2026-11-21T09:00:00.000Z',
};

export const webhookCreatedExample = {
  ...webhookExample,
  secret: 'whsec_Jb0bWcnOq4zKXqj3yVQkPZL6sY1bN8tTQ2c5dE7fG9h',
};

export const webhookDeliveryExample = {
  id: DELIVERY_ID,
  event_id: EVENT_ID,
  event_type: 'booking.updated',
  status: 'failed',
  attempt: 2,
  max_attempts: 8,
  next_retry_at: '2026-11-23T10:18:05.000Z',
  last_status: 503,
  last_error: 'HTTP 503: Service Unavailable',
  last_duration_ms: 412,
  delivered_at: null,
  created_at: '2026-11-23T10:15:02.400Z',
};

export const rotatedSecretExample = {
  id: WEBHOOK_ID,
  secret: 'whsec_9h8G7f6E5d4C3b2A1zYxWvUtSrQpOnMlKjIhGfEdCbA',
  previous_secret_valid_until: '2026-11-23T11:15:00.000Z',
};

export const testQueuedExample = { delivery_id: DELIVERY_ID, event_id: EVENT_ID, status: 'pending' };

export const deliveryBodyExample = {
  id: EVENT_ID,
  type: 'booking.updated',
  version: 1,
  created_at: '2026-11-23T10:15:02.311Z',
  organization: { id: ORGANIZATION_ID },
  resource: { type: 'booking', id: BOOKING_ID },
  changes: ['status', 'confirmed_at'],
  previous_status: 'no_segura',
  data: bookingExample,
};

export const testDeliveryBodyExample = {
  id: EVENT_ID,
  type: 'webhook.test',
  version: 1,
  created_at: '2026-11-23T10:15:02.311Z',
  organization: { id: ORGANIZATION_ID },
  resource: { type: 'webhook', id: WEBHOOK_ID },
  changes: [],
  previous_status: null,
  data: null,
};

/** What an error of each code typically carries in `details`. */
const ERROR_DETAILS: Partial<Record<ErrorCode, Record<string, unknown>>> = {
  validation_error: { param: 'status', allowed: ['requested', 'unconfirmed', 'confirmed'] },
  insufficient_scope: { required_scope: 'bookings:read' },
  rate_limited: { retry_after: 12 },
  payload_too_large: { limit_bytes: 262144 },
  idempotency_conflict: { param: 'Idempotency-Key' },
  idempotency_in_progress: { param: 'Idempotency-Key' },
};

export function errorExample(code: ErrorCode) {
  const details = ERROR_DETAILS[code];
  return {
    error: { code, message: ERRORS[code].message, request_id: REQUEST_ID, ...(details ? { details } : {}) },
  };
}

export const page = (item: unknown) => ({
  data: [item],
  next_cursor: 'eyJrIjoiY2siLCJsIjoi…',
  has_more: true,
});

// Helpers of the external-id tests: an organization with a booking, link calls, error checks.
import { randomUUID } from 'node:crypto';
import type { TestService } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { createTenant, type Tenant, type TenantOptions } from '../support/tenants.js';

export const LINK_SCOPES = ['bookings:read', 'links:read', 'links:write'];

export interface Booked {
  tenant: Tenant;
  bookingId: string;
  reference: string;
}

/** A tenant whose organization originates one booking. */
export async function bookedTenant(svc: TestService, options: TenantOptions = {}): Promise<Booked> {
  const tenant = await createTenant(svc, { scopes: LINK_SCOPES, ...options });
  const bookingId = randomUUID();
  const booking = await putBooking(svc, tenant.organization.id, {}, bookingId);
  return { tenant, bookingId, reference: booking.reference };
}

export const linkPath = (bookingId: string) => `/bookings/${bookingId}/external-id`;

export const getLink = (svc: TestService, key: string, bookingId: string) =>
  svc.call('GET', linkPath(bookingId), { key });

export const putLink = (
  svc: TestService,
  key: string,
  bookingId: string,
  body: unknown,
  headers: Record<string, string> = {},
) => svc.call('PUT', linkPath(bookingId), { key, body, headers });

export const deleteLink = (svc: TestService, key: string, bookingId: string) =>
  svc.call('DELETE', linkPath(bookingId), { key });

export { assertError } from './read-support.js';

/** Makes the integration's links look `minutes` old, so a later write shows in updated_at. */
export const ageLinks = (svc: TestService, tenant: Tenant, minutes: number) =>
  svc.db.query(
    `UPDATE booking_external_ids
     SET created_at = created_at - make_interval(mins => $2), updated_at = updated_at - make_interval(mins => $2)
     WHERE integration_id = $1`,
    [tenant.integration.id, minutes],
  );

// The demo data set: the demo organization's catalogue and bookings, and a partner company of the
// exchange. Deterministic (a fixed seed; times relative to `now`) and written through the feed's
// service functions in one transaction, so it obeys every rule the platform's data obeys.
import type { Queryable } from '../db/db.js';
import { findOrganization } from '../operator/organizations.js';
import { planBookings, type Side, writeBookings } from './bookings.js';
import { DEMO_DRIVERS, PARTNER_DRIVERS, seedCustomers, seedFleet } from './catalogue.js';
import { seededRandom } from './random.js';

export const PARTNER_CODE = '200';
const SEED = 20_260_101;

/** The partner of the exchange; reused when an organization with its code already exists. */
async function partnerOrganization(q: Queryable): Promise<{ id: string; code: string }> {
  const [row] = await q.query<{ id: string; code: string }>(
    `INSERT INTO organizations (code, name, api_enabled, webhooks_enabled, outbox_enabled)
     VALUES ($1, 'Partner Transfers', true, false, true)
     ON CONFLICT (code) DO UPDATE SET updated_at = organizations.updated_at
     RETURNING id, code`,
    [PARTNER_CODE],
  );
  return row as { id: string; code: string };
}

/** Runs inside the caller's transaction, so a failed seed leaves nothing behind. */
export async function seedDemoData(
  q: Queryable,
  organizationId: string,
  now: number = Date.now(),
): Promise<void> {
  const rand = seededRandom(SEED);
  {
    const organization = await findOrganization(q, organizationId);
    const partner = await partnerOrganization(q);
    const demo: Side = {
      id: organization.id,
      code: organization.code,
      customers: await seedCustomers(q, rand, organization.id),
      fleet: await seedFleet(q, rand, organization.id, DEMO_DRIVERS),
    };
    const other: Side = {
      ...partner,
      customers: [],
      fleet: await seedFleet(q, rand, partner.id, PARTNER_DRIVERS),
    };
    await writeBookings(q, planBookings(rand, now, demo, other));
  }
}

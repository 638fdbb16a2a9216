// Helpers shared by the read-API tests: error assertions, organizations linked by the exchange and
// walking every page of a list.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Response, TestService } from '../support/context.js';
import { bookingBody, putBooking } from '../support/feed.js';
import { createTenant, type Tenant } from '../support/tenants.js';

export const ALL_READ = [
  'bookings:read',
  'customers:read',
  'drivers:read',
  'vehicles:read',
  'events:read',
  'pricing:read',
  'passengers:read',
];

/** The originator's pricing of the feed fixture (bookingBody): all of it but the executor's net. */
export const ORIGINATOR_PRICING = (({ net_executor: _executorOnly, ...originator }) => originator)(
  bookingBody().pricing,
);

export function assertError(res: Response, status: number, code: string, details?: Record<string, unknown>) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error.code, code, res.text);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(res.body.error.request_id, res.headers['x-svc-request-id']);
  if (details) assert.deepEqual(res.body.error.details, details);
}

/** The body of an error without its request id: two answers must be identical but for it. */
export function withoutRequestId(res: Response) {
  const { request_id: _ignored, ...error } = res.body.error;
  return { status: res.status, error, contentType: res.headers['content-type'] };
}

/** A fixed instant, `i` seconds before a base, so tests choose the order of rows. */
export const at = (i: number, base = Date.parse('2026-06-01T12:00:00.000Z')) =>
  new Date(base - i * 1000).toISOString();

export interface Walked<T> {
  pages: T[][];
  items: T[];
}

/** Follows next_cursor from the first page to the last, repeating `query` on each page. */
export async function walk<T = any>(
  svc: TestService,
  key: string,
  path: string,
  query: Record<string, string> = {},
  onPage?: (page: number) => Promise<void>,
): Promise<Walked<T>> {
  const pages: T[][] = [];
  let cursor: string | null = null;
  for (let n = 0; n < 1000; n += 1) {
    const qs = new URLSearchParams({ ...query, ...(cursor ? { cursor } : {}) });
    const res = await svc.call('GET', `${path}?${qs}`, { key });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.has_more, res.body.next_cursor !== null);
    pages.push(res.body.data);
    cursor = res.body.next_cursor;
    if (!cursor) return { pages, items: pages.flat() };
    await onPage?.(n);
  }
  throw new Error('too many pages');
}

/** Seeds `n` bookings of `org`, the i-th created i seconds before the base (so newest first). */
export async function seedBookings(svc: TestService, orgId: string, n: number, overrides = {}) {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 1) {
    const id = randomUUID();
    await putBooking(svc, orgId, { created_at: at(i), ...overrides }, id);
    ids.push(id);
  }
  return ids;
}

/** Two companies of the exchange, each with an integration holding `scopes`. */
export async function exchangePair(svc: TestService, scopes = ALL_READ) {
  const originator: Tenant = await createTenant(svc, { scopes });
  const executor: Tenant = await createTenant(svc, { scopes });
  return { originator, executor };
}

/** Pushes a booking `originator` originates and `executor` executes. */
export const putExchanged = (
  svc: TestService,
  originator: Tenant,
  executor: Tenant,
  overrides: Record<string, unknown> = {},
  id: string = randomUUID(),
) =>
  putBooking(
    svc,
    originator.organization.id,
    { executor_organization_id: executor.organization.id, ...overrides },
    id,
  );

// Helpers of the feed tests: bare organizations (no integration needed to push data), the event
// log read with SQL, and error assertions.
import assert from 'node:assert/strict';
import type { Response, TestService } from '../support/context.js';
import { nextCode } from '../support/tenants.js';

export interface Org {
  id: string;
  code: string;
}

export async function newOrg(svc: TestService, flags: { outbox_enabled?: boolean } = {}): Promise<Org> {
  const res = await svc.op('POST', '/organizations', { code: nextCode(), name: 'Traslados Feed', ...flags });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.id, code: res.body.code };
}

export interface EventRow {
  type: string;
  resource_id: string;
  changes: string[];
  previous_status: string | null;
  reference: string | null;
}

/** The whole event log of an organization (order within one millisecond is not defined). */
export function eventsOf(svc: TestService, organizationId: string): Promise<(EventRow & { id: string })[]> {
  return svc.db.query<EventRow & { id: string }>(
    `SELECT id, type, resource_id, changes, previous_status, reference FROM events
     WHERE organization_id = $1 ORDER BY created_at, id`,
    [organizationId],
  );
}

/** Reads an organization's log step by step: each call returns the events not returned before. */
export function eventReader(svc: TestService, organizationId: string) {
  const seen = new Set<string>();
  return async (): Promise<EventRow[]> => {
    const fresh = (await eventsOf(svc, organizationId)).filter((e) => !seen.has(e.id));
    for (const e of fresh) seen.add(e.id);
    return fresh.map(({ id: _id, ...event }) => event);
  };
}

export function assertError(res: Response, status: number, code: string, details?: Record<string, unknown>) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error.code, code, res.text);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(res.body.error.request_id, res.headers['x-svc-request-id']);
  if (details) {
    for (const [k, v] of Object.entries(details)) assert.deepEqual(res.body.error.details?.[k], v, res.text);
  }
}

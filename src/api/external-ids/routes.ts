// GET, PUT and DELETE /bookings/{id}/external-id: one id per integration per booking.
import type { Db, Queryable } from '../../db/db.js';
import { isUuid } from '../../domain/ids.js';
import { notFound } from '../../http/errors.js';
import { identityOf } from '../../http/guard.js';
import { completeWithin, holdsClaim } from '../../http/idempotency.js';
import type { App } from '../../http/kit.js';
import { type Caller, deleteLink, type LinkRow, readLink, writeLink } from './queries.js';
import { BookingPath, Deleted, ExternalIdBody, ExternalIdLink } from './schemas.js';

// Canonical UUID text only; a booking number or anything else names no booking here.
function bookingId(raw: string): string {
  if (!isUuid(raw)) throw notFound();
  return raw.toLowerCase();
}

function callerOf(request: Parameters<typeof identityOf>[0]): Caller {
  const { integration, organization } = identityOf(request);
  return { integrationId: integration.id, organizationId: organization.id };
}

const view = (row: LinkRow) => ({
  id: row.id,
  entity: 'booking' as const,
  external_id: row.external_id,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

export function externalIdRoutes(app: App, deps: { db: Db }): void {
  const path = '/bookings/:id/external-id';

  app.get(
    path,
    {
      schema: { params: BookingPath, response: { 200: ExternalIdLink } },
      config: { scopes: ['bookings:read', 'links:read'] },
    },
    async (request) => {
      const row = await readLink(deps.db, callerOf(request), bookingId(request.params.id));
      if (!row) throw notFound();
      return view(row);
    },
  );

  app.put(
    path,
    {
      schema: { params: BookingPath, body: ExternalIdBody, response: { 200: ExternalIdLink } },
      config: { scopes: ['bookings:read', 'links:write'], idempotency: {} },
    },
    async (request, reply) => {
      const id = bookingId(request.params.id);
      const write = async (q: Queryable) => {
        const row = await writeLink(q, callerOf(request), id, request.body.external_id);
        if (!row) throw notFound();
        const answer = view(row);
        await completeWithin(q, request, reply, answer);
        return answer;
      };
      // With an Idempotency-Key, the link and its record commit together: an answer sent means a
      // record to replay. Without one, the single statement is its own transaction.
      return holdsClaim(request) ? deps.db.tx(write) : write(deps.db);
    },
  );

  app.delete(
    path,
    {
      schema: { params: BookingPath, response: { 200: Deleted } },
      config: { scopes: ['bookings:read', 'links:write'] },
    },
    async (request) => {
      const removed = await deleteLink(deps.db, callerOf(request), bookingId(request.params.id));
      if (!removed) throw notFound();
      return { deleted: true as const };
    },
  );
}

// GET /bookings and GET /bookings/{id}.
import type { Queryable } from '../../db/db.js';
import { bookingView } from '../../domain/booking-view.js';
import { isUuid } from '../../domain/ids.js';
import type { CursorCodec } from '../../http/cursor.js';
import { notFound } from '../../http/errors.js';
import { identityOf } from '../../http/guard.js';
import { type App, viewSerializer } from '../../http/kit.js';
import { Page, readPage } from '../pagination.js';
import { bookingFilters } from './filters.js';
import { bookingByExternalId, findBooking, listBookings } from './queries.js';
import { Booking, BookingIdParams, BookingListQuery } from './schemas.js';

const REFERENCE = /^[0-9]{1,32}$/;

export interface BookingRouteDeps {
  db: Queryable;
  cursors: CursorCodec;
}

export function bookingRoutes(app: App, deps: BookingRouteDeps): void {
  const { db, cursors } = deps;

  app.get(
    '/bookings',
    {
      schema: { querystring: BookingListQuery, response: { 200: Page(Booking) } },
      config: { scopes: ['bookings:read'] },
      serializerCompiler: viewSerializer,
    },
    async (request) => {
      const { organization, integration, scopes } = identityOf(request);
      const reader = { organizationId: organization.id, integrationId: integration.id };
      const { limit, cursor, external_id } = request.query;
      const filters = bookingFilters(request.query);
      const page = await readPage(
        cursors,
        { list: 'bookings', organizationId: organization.id, limit, cursor },
        (after, take) =>
          // The external id names one booking: the other filters do not apply.
          external_id === undefined
            ? listBookings(db, reader, filters, after, take)
            : bookingByExternalId(db, reader, external_id, after),
      );
      return {
        data: page.rows.map((row) => bookingView(row, organization.id, scopes)),
        next_cursor: page.next_cursor,
        has_more: page.has_more,
      };
    },
  );

  app.get(
    '/bookings/:id',
    {
      schema: { params: BookingIdParams, response: { 200: Booking } },
      config: { scopes: ['bookings:read'] },
      serializerCompiler: viewSerializer,
    },
    async (request) => {
      const { organization, integration, scopes } = identityOf(request);
      const { id } = request.params;
      // A value that can name no booking is answered like a missing one.
      const by = isUuid(id) ? { id: id.toLowerCase() } : REFERENCE.test(id) ? { reference: id } : null;
      if (!by) throw notFound();
      const reader = { organizationId: organization.id, integrationId: integration.id };
      const row = await findBooking(db, reader, by);
      if (!row) throw notFound();
      return bookingView(row, organization.id, scopes);
    },
  );
}

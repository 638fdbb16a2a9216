// GET /events: the organization's event log, most recent first.
import type { Queryable } from '../../db/db.js';
import type { CursorCodec } from '../../http/cursor.js';
import { identityOf } from '../../http/guard.js';
import type { App } from '../../http/kit.js';
import { Page, readPage } from '../pagination.js';
import { listEvents } from './queries.js';
import { Event, EventListQuery } from './schemas.js';
import { eventView } from './view.js';

export interface EventRouteDeps {
  db: Queryable;
  cursors: CursorCodec;
}

export function eventRoutes(app: App, deps: EventRouteDeps): void {
  const { db, cursors } = deps;

  app.get(
    '/events',
    {
      schema: { querystring: EventListQuery, response: { 200: Page(Event) } },
      config: { scopes: ['events:read'] },
    },
    async (request) => {
      const { organization } = identityOf(request);
      const { limit, cursor, type, resource_id } = request.query;
      const page = await readPage(
        cursors,
        { list: 'events', organizationId: organization.id, limit, cursor },
        async (after, take) =>
          // A webhook test is never logged: no need to ask the database.
          type === 'webhook.test'
            ? []
            : listEvents(db, organization.id, { type, resource_id: resource_id?.toLowerCase() }, after, take),
      );
      return { data: page.rows.map(eventView), next_cursor: page.next_cursor, has_more: page.has_more };
    },
  );
}

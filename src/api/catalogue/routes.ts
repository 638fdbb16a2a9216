// GET /customers, /drivers, /vehicles and their /{id}: only the caller's organization's rows.
import type { Static, TSchema } from 'typebox';
import type { Queryable } from '../../db/db.js';
import { isUuid } from '../../domain/ids.js';
import type { CursorCodec } from '../../http/cursor.js';
import { notFound } from '../../http/errors.js';
import { identityOf } from '../../http/guard.js';
import type { App } from '../../http/kit.js';
import type { Scope } from '../../http/scopes.js';
import { Page, readPage } from '../pagination.js';
import {
  type CatalogueTable,
  CUSTOMERS,
  DRIVERS,
  findCatalogue,
  listCatalogue,
  VEHICLES,
} from './queries.js';
import { CatalogueIdParams, CatalogueListQuery, Customer, Driver, Vehicle } from './schemas.js';

export interface CatalogueRouteDeps {
  db: Queryable;
  cursors: CursorCodec;
}

interface Resource<S extends TSchema> {
  path: string;
  scope: Scope;
  table: CatalogueTable;
  schema: S;
  view(row: never): Static<S>;
}

interface CustomerRow extends Omit<Static<typeof Customer>, 'group'> {
  group_id: string | null;
  group_name: string | null;
}

export function customerView({ group_id, group_name, ...customer }: CustomerRow): Static<typeof Customer> {
  return { ...customer, group: group_id === null ? null : { id: group_id, name: group_name ?? '' } };
}

const asIs = <T>(row: T) => row;

const RESOURCES = [
  { path: '/customers', scope: 'customers:read', table: CUSTOMERS, schema: Customer, view: customerView },
  { path: '/drivers', scope: 'drivers:read', table: DRIVERS, schema: Driver, view: asIs },
  { path: '/vehicles', scope: 'vehicles:read', table: VEHICLES, schema: Vehicle, view: asIs },
] as Resource<TSchema>[];

function resourceRoutes(app: App, deps: CatalogueRouteDeps, r: Resource<TSchema>): void {
  const { db, cursors } = deps;
  const view = r.view as (row: unknown) => unknown;

  app.get(
    r.path,
    {
      schema: { querystring: CatalogueListQuery, response: { 200: Page(r.schema) } },
      config: { scopes: [r.scope] },
    },
    async (request) => {
      const { organization } = identityOf(request);
      const { limit, cursor, active } = request.query;
      const page = await readPage(
        cursors,
        { list: r.table.list, organizationId: organization.id, limit, cursor },
        (after, take) =>
          listCatalogue<{ id: string; created_at: Date }>(
            db,
            r.table,
            organization.id,
            active === undefined ? undefined : active === 'true',
            after,
            take,
          ),
      );
      return { data: page.rows.map(view), next_cursor: page.next_cursor, has_more: page.has_more };
    },
  );

  app.get(
    `${r.path}/:id`,
    { schema: { params: CatalogueIdParams, response: { 200: r.schema } }, config: { scopes: [r.scope] } },
    async (request) => {
      const { organization } = identityOf(request);
      const { id } = request.params;
      // Not a UUID names nothing: the same 404 as a missing or foreign row.
      const row = isUuid(id) ? await findCatalogue(db, r.table, organization.id, id.toLowerCase()) : null;
      if (!row) throw notFound();
      return view(row);
    },
  );
}

export function catalogueRoutes(app: App, deps: CatalogueRouteDeps): void {
  for (const resource of RESOURCES) resourceRoutes(app, deps, resource);
}

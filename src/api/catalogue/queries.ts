// SQL of the catalogue read API. Each list is served by its (organization_id, created_at DESC,
// id DESC) index, or by the (organization_id, active, ...) one when `active` is given; customers'
// indexes cover only rows not deleted, which is exactly what is listed.
import type { Queryable } from '../../db/db.js';
import type { ListName, Position } from '../../http/cursor.js';
import { afterPosition } from '../pagination.js';

export interface CatalogueTable {
  list: Extract<ListName, 'customers' | 'drivers' | 'vehicles'>;
  /** The table, aliased `t`. */
  from: string;
  columns: string;
  /** Rows that exist for the API besides belonging to the organization. */
  exists: string;
}

export const CUSTOMERS: CatalogueTable = {
  list: 'customers',
  from: 'customers t',
  // Read by primary key for each row kept, whatever the number of groups.
  columns: `t.id, t.external_id, t.name, t.type, t.active, t.group_id,
    (SELECT name FROM customer_groups WHERE id = t.group_id) AS group_name, t.created_at`,
  exists: 't.deleted_at IS NULL',
};

export const DRIVERS: CatalogueTable = {
  list: 'drivers',
  from: 'drivers t',
  columns:
    't.id, t.external_id, t.name, t.nickname, t.phone, t.active, t.status, t.has_app_access, t.created_at',
  exists: 'true',
};

export const VEHICLES: CatalogueTable = {
  list: 'vehicles',
  from: 'vehicles t',
  columns: `t.id, t.external_id, t.plate, t.model, t.nickname, t.category, t.seats, t.luggage,
    t.wheelchair_adapted, t.eco_label, t.propulsion, t.active, t.created_at`,
  exists: 'true',
};

/** Exported for the query-plan script. */
export function cataloguePageSql(
  table: CatalogueTable,
  organizationId: string,
  active: boolean | undefined,
  after: Position | null,
  take: number,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [organizationId, take];
  const where = ['t.organization_id = $1', table.exists];
  if (active !== undefined) {
    params.push(active);
    where.push(`t.active = $${params.length}`);
  }
  where.push(afterPosition(after, params, 't'));
  const sql = `SELECT ${table.columns} FROM ${table.from}
    WHERE ${where.join(' AND ')}
    ORDER BY t.created_at DESC, t.id DESC LIMIT $2`;
  return { sql, params };
}

export function listCatalogue<R>(
  db: Queryable,
  table: CatalogueTable,
  organizationId: string,
  active: boolean | undefined,
  after: Position | null,
  take: number,
): Promise<R[]> {
  const { sql, params } = cataloguePageSql(table, organizationId, active, after, take);
  return db.query<R>(sql, params);
}

export async function findCatalogue<R>(
  db: Queryable,
  table: CatalogueTable,
  organizationId: string,
  id: string,
): Promise<R | null> {
  const [row] = await db.query<R>(
    `SELECT ${table.columns} FROM ${table.from}
     WHERE t.id = $2 AND t.organization_id = $1 AND ${table.exists}`,
    [organizationId, id],
  );
  return row ?? null;
}

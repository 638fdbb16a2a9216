// SQL of the event log. Served by events_list, or events_list_type / events_list_resource when
// filtered; all three are (organization_id, ..., created_at DESC, id DESC).
import type { Queryable } from '../../db/db.js';
import type { Position } from '../../http/cursor.js';
import { afterPosition } from '../pagination.js';

export interface EventRow {
  id: string;
  type: string;
  version: number;
  resource_id: string;
  changes: string[];
  previous_status: string | null;
  reference: string | null;
  created_at: Date;
}

export interface EventFilters {
  type?: string;
  resource_id?: string;
}

/** Exported for the query-plan script. */
export function eventPageSql(
  organizationId: string,
  filters: EventFilters,
  after: Position | null,
  take: number,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [organizationId, take];
  // Only booking events are the log; anything else in the table (a webhook test) never shows.
  const where = ['organization_id = $1', "resource_type = 'booking'", "type <> 'webhook.test'"];
  if (filters.type !== undefined) {
    params.push(filters.type);
    where.push(`type = $${params.length}`);
  }
  if (filters.resource_id !== undefined) {
    params.push(filters.resource_id);
    where.push(`resource_id = $${params.length}`);
  }
  where.push(afterPosition(after, params));
  const sql = `SELECT id, type, version, resource_id, changes, previous_status, reference, created_at
    FROM events WHERE ${where.join(' AND ')}
    ORDER BY created_at DESC, id DESC LIMIT $2`;
  return { sql, params };
}

export function listEvents(
  db: Queryable,
  organizationId: string,
  filters: EventFilters,
  after: Position | null,
  take: number,
): Promise<EventRow[]> {
  const { sql, params } = eventPageSql(organizationId, filters, after, take);
  return db.query<EventRow>(sql, params);
}

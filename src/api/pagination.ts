// Keyset pagination shared by every list: the limit and cursor parameters, the page envelope and
// the walk from a cursor to the next one. Order is always (created_at DESC, id DESC); a list only
// says how to fetch rows after a position, never by offset.
import { type TSchema, Type } from 'typebox';
import type { CursorCodec, ListName, Position } from '../http/cursor.js';
import { Nullable } from '../http/schemas.js';

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 100;

/** Query properties of every list. Above MAX_LIMIT is not an error: it is cut (pageSize). */
export const PageQuery = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, description: `1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT}; more is cut.` }),
  ),
  cursor: Type.Optional(Type.String({ description: 'The next_cursor of the previous page.' })),
};

export const Page = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), next_cursor: Nullable(Type.String()), has_more: Type.Boolean() });

export function pageSize(limit: number | undefined): number {
  return Math.min(limit ?? DEFAULT_LIMIT, MAX_LIMIT);
}

export interface PageRequest {
  list: ListName;
  organizationId: string;
  limit?: number;
  cursor?: string;
}

export interface PageOf<R> {
  rows: R[];
  next_cursor: string | null;
  has_more: boolean;
}

/**
 * Reads one page: decodes the cursor (400 invalid_cursor), asks `fetch` for one row more than the
 * page holds so it knows whether another page exists, and signs the position of the last row kept.
 */
export async function readPage<R extends { created_at: Date; id: string }>(
  cursors: CursorCodec,
  request: PageRequest,
  fetch: (after: Position | null, take: number) => Promise<R[]>,
): Promise<PageOf<R>> {
  const size = pageSize(request.limit);
  const after =
    request.cursor === undefined
      ? null
      : await cursors.decode(request.list, request.organizationId, request.cursor);
  const fetched = await fetch(after, size + 1);
  const rows = fetched.slice(0, size);
  const last = rows.at(-1);
  if (fetched.length <= size || !last) return { rows, next_cursor: null, has_more: false };
  const next = await cursors.encode(request.list, request.organizationId, {
    createdAt: last.created_at,
    id: last.id,
  });
  return { rows, next_cursor: next, has_more: true };
}

/**
 * The keyset condition "strictly after this position" in (created_at DESC, id DESC) order, with
 * its parameters appended to `params`. A row comparison lets the planner use it as an index bound.
 */
export function afterPosition(after: Position | null, params: unknown[], alias = ''): string {
  if (!after) return 'true';
  params.push(after.createdAt, after.id);
  const col = alias ? `${alias}.` : '';
  return `(${col}created_at, ${col}id) < ($${params.length - 1}, $${params.length})`;
}

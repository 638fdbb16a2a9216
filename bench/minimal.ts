// The minimal server: the least a server must do to answer the read endpoints from the database.
// Bare node:http and pg (a pool of 10, named prepared statements, pg's own type parsing but for
// bigint and numeric as numbers, as the service reads them), the project's own SQL (bookingPageSql,
// findBooking, cataloguePageSql) and views (bookingView, customerView), then JSON.stringify; for one
// fixed organization and integration with every read scope. No framework, no authentication, no
// rate limits, no validation, and cursors neither signed nor checked (the payload of the API's
// cursor is read as is). The API over this server is the price of everything the contract asks on
// top of the database work and the serialization, and of how the service does that work.
// Started by the read benchmark (bench/run.ts) with its MinimalConfig as JSON in BENCH_CONFIG.
import { createServer, type ServerResponse } from 'node:http';
import pg from 'pg';
import { findBooking, listBookings } from '../src/api/bookings/queries.js';
import { CUSTOMERS, listCatalogue } from '../src/api/catalogue/queries.js';
import { customerView } from '../src/api/catalogue/routes.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../src/api/pagination.js';
import type { Queryable } from '../src/db/db.js';
import { bookingView } from '../src/domain/booking-view.js';
import type { Position } from '../src/http/cursor.js';

export interface MinimalConfig {
  databaseUrl: string;
  organizationId: string;
  integrationId: string;
  /** Answered as is (re-serialized) to GET /integrations/me. */
  identity: unknown;
  port: number;
}

const SCOPES = ['bookings:read', 'customers:read', 'pricing:read', 'passengers:read'];
const PREFIX = '/api/v1';

/** The position in an API cursor, unchecked: the payload part is base64url JSON { t, i }. */
function position(cursor: string | null): Position | null {
  if (!cursor) return null;
  const payload = JSON.parse(Buffer.from(cursor.split('.')[0] ?? '', 'base64url').toString('utf8'));
  return { createdAt: new Date(payload.t), id: payload.i };
}

const unsignedCursor = (last: { created_at: Date; id: string }) =>
  Buffer.from(JSON.stringify({ l: 'bookings', t: last.created_at.getTime(), i: last.id })).toString(
    'base64url',
  );

function page<R extends { created_at: Date; id: string }>(
  rows: R[],
  size: number,
  view: (row: R) => unknown,
) {
  const kept = rows.slice(0, size);
  const last = kept.at(-1);
  const more = rows.length > size && last !== undefined;
  return { data: kept.map(view), next_cursor: more ? unsignedCursor(last) : null, has_more: more };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** pg as its documentation shows it, with a name for each statement text. */
function plainPg(url: string): Queryable & { close(): Promise<void> } {
  const number = (v: string) => Number(v);
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === 20 || oid === 1700 ? number : pg.types.getTypeParser(oid, format)) as never,
    },
  });
  const names = new Map<string, string>();
  return {
    async query<T>(text: string, values?: readonly unknown[]) {
      let name = names.get(text);
      if (name === undefined) {
        name = `m${names.size}`;
        names.set(text, name);
      }
      return (await pool.query({ name, text, values: values as unknown[] })).rows as T[];
    },
    async exec(text: string) {
      await pool.query(text);
    },
    close: () => pool.end(),
  };
}

const config = JSON.parse(process.env.BENCH_CONFIG!) as MinimalConfig;
const db = plainPg(config.databaseUrl);
const org = config.organizationId;
const reader = { organizationId: org, integrationId: config.integrationId };

async function answer(path: string, query: URLSearchParams, res: ServerResponse): Promise<void> {
  const size = Math.min(Number(query.get('limit') ?? DEFAULT_LIMIT), MAX_LIMIT);
  const after = position(query.get('cursor'));
  if (path === '/integrations/me') return send(res, 200, config.identity);
  if (path === '/bookings') {
    const rows = await listBookings(db, reader, {}, after, size + 1);
    return send(
      res,
      200,
      page(rows, size, (row) => bookingView(row, org, SCOPES)),
    );
  }
  if (path.startsWith('/bookings/')) {
    const row = await findBooking(db, reader, { id: path.slice('/bookings/'.length) });
    return row ? send(res, 200, bookingView(row, org, SCOPES)) : send(res, 404, {});
  }
  if (path === '/customers') {
    type Row = Parameters<typeof customerView>[0] & { created_at: Date };
    const rows = await listCatalogue<Row>(db, CUSTOMERS, org, undefined, after, size + 1);
    return send(res, 200, page(rows, size, customerView));
  }
  send(res, 404, {});
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://minimal');
  answer(url.pathname.slice(PREFIX.length), url.searchParams, res).catch((error) => {
    process.stderr.write(`${error instanceof Error ? error.stack : error}\n`);
    send(res, 500, {});
  });
});
server.keepAliveTimeout = 72_000;
server.listen(config.port, '127.0.0.1', () => process.stdout.write('ready\n'));
process.once('SIGTERM', () => {
  server.close(() => db.close().finally(() => process.exit(0)));
  server.closeAllConnections();
});

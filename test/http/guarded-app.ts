// A small public-style app for tests of the kit and the guard: createHttpApp + installGuard on a
// service's dependencies, with test-only routes whose scopes and templates the tests choose.
import assert from 'node:assert/strict';
import type { Deps } from '../../src/apps/deps.js';
import { guardDeps } from '../../src/apps/public.js';
import { createPostgresDb, type Db } from '../../src/db/db.js';
import { AppError } from '../../src/http/errors.js';
import { installGuard } from '../../src/http/guard.js';
import { type App, createHttpApp } from '../../src/http/kit.js';
import { inject, type Response } from '../support/context.js';

export const PREFIX = '/api/v1';

/** A failure as the database driver raises it: SQL, a table name and a stack in the error. */
export class FakeDatabaseError extends Error {
  readonly code = '42P01';
  readonly table = 'api_keys';
  constructor() {
    super('relation "api_keys" does not exist in SELECT prefix FROM api_keys WHERE id = $1');
  }
}

/**
 * A database whose connection is gone. On PostgreSQL a real pool after end(); on the embedded
 * database a stand-in raising what a closed PGlite raises, because booting one costs seconds.
 */
export async function closedDatabase(): Promise<Db> {
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    const db = createPostgresDb({ url, max: 1 });
    await db.close();
    return db;
  }
  const closed = () => Promise.reject(new Error('PGlite is closed'));
  const db: Db = {
    kind: 'pglite',
    query: closed,
    exec: closed,
    tx: closed,
    listen: closed,
    withPlansKept: () => db,
    close: async () => {},
  };
  return db;
}

export async function buildGuardedApp(deps: Deps): Promise<App> {
  const app = createHttpApp({ name: 'public', logger: deps.logger });
  installGuard(app, guardDeps(deps));
  await app.register(
    async (api) => {
      const ok = async () => ({ ok: true });
      api.get('/things/:id', { config: { scopes: ['bookings:read'] } }, ok);
      api.delete('/things/:id', { config: { scopes: ['bookings:read'] } }, ok);
      api.get('/things', { config: { scopes: ['bookings:read'] } }, ok);
      api.get('/linked', { config: { scopes: ['bookings:read', 'links:read'] } }, ok);
      api.get('/open', { config: { scopes: [] } }, ok);
      api.get('/spare', { config: { scopes: [] } }, ok);
      api.get('/boom', { config: { scopes: [] } }, async () => {
        throw new FakeDatabaseError();
      });
      // A limit of its own inside a route, like the webhook test endpoint's.
      api.get('/busy', { config: { scopes: [] } }, async () => {
        throw new AppError('rate_limited', { retry_after: 7 });
      });
    },
    { prefix: PREFIX },
  );
  await app.ready();
  return app;
}

export interface CallOptions {
  key?: string;
  ip?: string;
  headers?: Record<string, string>;
}

export function call(app: App, method: string, url: string, options: CallOptions = {}): Promise<Response> {
  const { key, ...rest } = options;
  return inject(app, method, url, rest, key ? `Bearer ${key}` : undefined);
}

/** The contract's error envelope, with the request id of the header. */
export function assertError(res: Response, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.error?.code, code, res.text);
  const keys = Object.keys(res.body.error).sort();
  const expected = ['code', 'message', 'request_id', ...(res.body.error.details ? ['details'] : [])].sort();
  assert.deepEqual(keys, expected);
  assert.deepEqual(Object.keys(res.body), ['error']);
  assert.equal(typeof res.body.error.message, 'string');
  assert.ok(res.body.error.message.length > 0);
  assert.match(String(res.headers['x-svc-request-id']), /^req_[A-Za-z0-9_-]+$/);
  assert.equal(res.body.error.request_id, res.headers['x-svc-request-id']);
}

export function assertNoRateHeaders(res: Response): void {
  assert.equal(res.headers['x-ratelimit-limit'], undefined);
  assert.equal(res.headers['x-ratelimit-remaining'], undefined);
}

export function assertRateHeaders(res: Response, limit: number, remaining: number): void {
  assert.equal(res.headers['x-ratelimit-limit'], String(limit), `limit of ${res.status} ${res.text}`);
  assert.equal(
    res.headers['x-ratelimit-remaining'],
    String(remaining),
    `remaining of ${res.status} ${res.text}`,
  );
}

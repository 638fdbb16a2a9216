// A whole service around a fresh database for one test file: embedded PGlite by default, or a
// schema of its own on the PostgreSQL server named by TEST_DATABASE_URL, with rate-limit state in
// memory or, under TEST_REDIS_URL, in Redis under a prefix of its own.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after } from 'node:test';
import type { Deps } from '../../src/apps/deps.js';
import { buildOperatorApp, OPERATOR_PREFIX } from '../../src/apps/operator.js';
import { buildPublicApp, PUBLIC_PREFIX } from '../../src/apps/public.js';
import { type Config, loadConfig } from '../../src/config.js';
import { createPgliteDb, createPostgresDb, type Db } from '../../src/db/db.js';
import { migrate } from '../../src/db/migrate.js';
import { createIdentityCache } from '../../src/http/auth.js';
import { createCursorCodec } from '../../src/http/cursor.js';
import type { App } from '../../src/http/kit.js';
import { createMetrics } from '../../src/http/metrics.js';
import { createLogger } from '../../src/logger.js';
import { createMemoryStore } from '../../src/ratelimit/memory.js';
import { createRedisStore } from '../../src/ratelimit/redis.js';
import type { RateLimitStore } from '../../src/ratelimit/store.js';
import { createSecretBox } from '../../src/security/secrets.js';
import type { Resolver } from '../../src/security/url-guard.js';
import { assertMatchesContract } from './contract.js';
import { pgliteTemplate } from './pglite-template.js';

export const OPERATOR_TOKEN = 'test-operator-token-0123456789abcdef';
export const MASTER_KEY = Buffer.alloc(32, 7);
export const usingServer = Boolean(process.env.TEST_DATABASE_URL);

export interface Clock {
  now(): number;
  advance(ms: number): void;
}

export function manualClock(start = Date.now()): Clock {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}

export async function openTestDb(
  options: { connectionTimeoutMs?: number } = {},
): Promise<{ db: Db; drop(): Promise<void> }> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) {
    // Loaded from the migrated template; migrate() then only confirms every migration is applied.
    const db = await createPgliteDb(null, await pgliteTemplate());
    await migrate(db);
    return { db, drop: () => db.close() };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = createPostgresDb({ url, max: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  const db = createPostgresDb({ url, schema, max: 5, ...options });
  await migrate(db);
  return {
    db,
    async drop() {
      await db.close();
      await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
      await admin.close();
    },
  };
}

/** Under Redis, two limiters opened with one `prefix` share their buckets, like two API processes. */
export function openTestLimiter(clock: Clock, prefix?: string): RateLimitStore {
  const url = process.env.TEST_REDIS_URL;
  if (!url) return createMemoryStore(clock.now);
  return createRedisStore({
    url,
    prefix: prefix ?? `svc-test:${randomBytes(6).toString('hex')}:`,
    now: clock.now,
  });
}

export interface Response<T = any> {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: T;
  text: string;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  /** Sent as is, instead of JSON-encoding `body`. */
  payload?: string | Buffer;
  ip?: string;
  /**
   * Why this answer is not held against the published document (svc.call checks every other one);
   * only for a request the document cannot describe.
   */
  unchecked?: string;
}

export interface TestService {
  db: Db;
  deps: Deps;
  api: App;
  operator: App;
  clock: Clock;
  config: Config;
  /** Everything the service logged, one JSON line each. */
  logs: string[];
  /** A request to the public API; the answer must be one the published document describes. */
  call<T = any>(method: string, path: string, options?: CallOptions): Promise<Response<T>>;
  op<T = any>(method: string, path: string, body?: unknown): Promise<Response<T>>;
  close(): Promise<void>;
}

/** One request through `app.inject`, the answer's body parsed as JSON when it is JSON. */
export async function inject(app: App, method: string, url: string, options: CallOptions, auth?: string) {
  const headers: Record<string, string> = { ...options.headers };
  if (auth !== undefined) headers.authorization = auth;
  let payload: string | Buffer | undefined = options.payload;
  if (payload === undefined && options.body !== undefined) {
    payload = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await app.inject({
    method: method as never,
    url,
    headers,
    payload,
    remoteAddress: options.ip ?? '127.0.0.1',
  });
  let body: unknown;
  try {
    body = res.body.length ? JSON.parse(res.body) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body, text: res.body } as Response;
}

/** `resolve`, when given, replaces DNS for the webhook url guard (tests have no real DNS). */
export async function startService(
  env: Record<string, string> = {},
  resolve?: Resolver,
): Promise<TestService> {
  const config = loadConfig({ SVC_LOG_LEVEL: 'info', ...env });
  const clock = manualClock();
  const { db, drop } = await openTestDb({ connectionTimeoutMs: config.dbPoolWaitMs });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const deps: Deps = {
    config,
    db,
    logger: createLogger(config.logLevel, sink),
    identities: createIdentityCache(db, config.authCacheTtlMs, clock.now),
    limiter: openTestLimiter(clock),
    metrics: createMetrics(),
    cursors: createCursorCodec({
      db,
      masterKey: MASTER_KEY,
      refreshMs: config.authCacheTtlMs,
      now: clock.now,
    }),
    secrets: createSecretBox(MASTER_KEY),
    ...(resolve ? { resolve } : {}),
    now: clock.now,
  };
  const api = await buildPublicApp(deps);
  const operator = await buildOperatorApp(deps, OPERATOR_TOKEN);
  await api.ready();
  await operator.ready();
  return {
    db,
    deps,
    api,
    operator,
    clock,
    config,
    logs,
    async call(method, path, options = {}) {
      const auth = options.key === null ? undefined : options.key ? `Bearer ${options.key}` : undefined;
      const res = await inject(api, method, PUBLIC_PREFIX + path, options, auth);
      if (!options.unchecked) assertMatchesContract(method, path, res);
      return res;
    },
    op(method, path, body) {
      return inject(operator, method, OPERATOR_PREFIX + path, { body }, `Bearer ${OPERATOR_TOKEN}`);
    },
    async close() {
      await api.close();
      await operator.close();
      await deps.limiter.close();
      await drop();
    },
  };
}

/** The service of a whole test file: started at once (top-level await), closed after its last test. */
export async function serviceForFile(
  env: Record<string, string> = {},
  resolve?: Resolver,
): Promise<TestService> {
  const svc = await startService(env, resolve);
  after(() => svc.close());
  return svc;
}

// One small interface over a PostgreSQL server (pg.Pool) and embedded PostgreSQL (PGlite).
// Same SQL, same migrations, same triggers on both.
import { createHash } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { parseTimestamptz } from './timestamps.js';

export type Row = Record<string, unknown>;

export interface Queryable {
  query<T = Row>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs fn in one transaction; rolls back when it throws. */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * Calls `onNotify` on each NOTIFY of `channel` (LISTEN). Best effort: a lost connection is
   * re-established in the background, so callers also poll. Resolves to a function that stops.
   */
  listen(channel: string, onNotify: (detail?: string) => void): Promise<() => Promise<void>>;
  /**
   * A pool of `max` connections of its own on the same database, on which each statement keeps the
   * plan it got at its first run on a connection (PostgreSQL's generic plan). PostgreSQL otherwise
   * plans a prepared statement again at every run whenever its generic plan looks dearer than the
   * plans made for the values given, which for a statement of many parts costs more than running
   * it. For statements that run many times a second and are written so that one plan serves all
   * their values (the delivery engine's). A plan kept is made
   * once, perhaps on an empty queue (a new deployment, a database just restored), where reading the
   * whole table looks cheapest, and would then be kept while the queue grows: on these connections
   * the planner reads a table whole only where no index serves (enable_seqscan off), so every
   * plan reads by key however small the tables were when it was made. JIT compilation is off on
   * them: a plan that must read a small table whole (the workers', the partitions') is costed above
   * `jit_above_cost` with sequential scans off, and PostgreSQL then compiled each run of the beat's
   * statements, 170 to 270 ms of a core for a statement that runs in a millisecond, every second in
   * every worker (auto_explain, PostgreSQL 15). The embedded database
   * has one connection: it answers with itself, and closing the answer leaves it open.
   */
  withPlansKept(max: number): Db;
  close(): Promise<void>;
}

const INT8 = 20;
const NUMERIC = 1700;
const TIMESTAMPTZ = 1184;
const toNumber = (v: string) => Number(v);

export interface PostgresOptions {
  url: string;
  /** Tests give each file its own schema so they can share one server. */
  schema?: string;
  /** PostgreSQL cancels a statement that runs longer (ms). */
  statementTimeoutMs?: number;
  /** A query waiting longer than this for a free connection fails at once (ms); 0 waits forever. */
  connectionTimeoutMs?: number;
  max?: number;
  /** Told when an idle connection breaks (the server restarted, a network cut). */
  onIdleError?: (error: Error) => void;
  /** Every statement runs its generic plan (see Db.withPlansKept). */
  plansKept?: boolean;
}

/** How long an idle connection of the pool stays open. */
export const IDLE_TIMEOUT_MS = 300_000;

export function createPostgresDb(options: PostgresOptions): Db {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    // Without a bound, a stalled database queues every request behind the pool for as long as
    // the stall lasts; with it they fail fast and the service stays answerable.
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 0,
    // A connection carries its prepared statements: one closed after a few quiet seconds (pg's
    // default is 10) costs a new backend and every statement planned again, at the moment traffic
    // comes back. Idle connections are cheap to keep; they close after five quiet minutes.
    idleTimeoutMillis: IDLE_TIMEOUT_MS,
    options:
      [
        options.schema ? `-c search_path=${options.schema}` : '',
        options.statementTimeoutMs ? `-c statement_timeout=${options.statementTimeoutMs}` : '',
        options.plansKept ? '-c plan_cache_mode=force_generic_plan -c enable_seqscan=off -c jit=off' : '',
      ]
        .filter(Boolean)
        .join(' ') || undefined,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8 || oid === NUMERIC
          ? toNumber
          : oid === TIMESTAMPTZ && format !== 'binary'
            ? parseTimestamptz
            : pg.types.getTypeParser(oid, format)) as never,
    },
  });
  // An idle client that loses its connection must not crash the process; the pool drops it.
  pool.on('error', (error) => options.onIdleError?.(error));
  // Every query runs as a named prepared statement: each connection parses and plans a text once
  // and then only binds parameters, which is most of the database's work for a small read.
  const names = new Map<string, string>();
  const statement = (text: string, values?: readonly unknown[]) => {
    let name = names.get(text);
    if (name === undefined) {
      name = `s${createHash('sha1').update(text).digest('base64url').slice(0, 20)}`;
      names.set(text, name);
    }
    return { name, text, values: values as unknown[] };
  };
  return {
    kind: 'postgres',
    async query<T>(sql: string, params?: readonly unknown[]) {
      const result = await pool.query(statement(sql, params));
      return result.rows as T[];
    },
    async tx<T>(fn: (q: Queryable) => Promise<T>) {
      const client = await pool.connect();
      // A connection lost while the transaction waits on our code (a database restart) is an
      // 'error' event on the checked-out client: it must fail the transaction, not the process.
      const lost = (error: Error) => options.onIdleError?.(error);
      client.on('error', lost);
      let result: T;
      try {
        await client.query('BEGIN');
        const q: Queryable = {
          async query<R>(sql: string, params?: readonly unknown[]) {
            return (await client.query(statement(sql, params))).rows as R[];
          },
          async exec(sql: string) {
            await client.query(sql);
          },
        };
        result = await fn(q);
        await client.query('COMMIT');
      } catch (error) {
        // A connection whose ROLLBACK failed is in an unknown state: destroy it rather than hand
        // it to the next request inside a broken transaction.
        const broken = await client.query('ROLLBACK').then(
          () => undefined,
          (rollbackError: Error) => rollbackError,
        );
        client.off('error', lost);
        client.release(broken);
        throw error;
      }
      client.off('error', lost);
      client.release();
      return result;
    },
    async exec(sql: string) {
      await pool.query(sql);
    },
    listen: listenerOnServer(options.url, options.schema),
    withPlansKept: (max) => createPostgresDb({ ...options, max, plansKept: true }),
    async close() {
      await pool.end();
    },
  };
}

const RELISTEN_MS = 1000;

/** A notification's payload: the schema it was sent from, then what it tells (after a space), if anything. */
function splitPayload(payload: string | undefined): [string | undefined, string | undefined] {
  if (!payload) return [undefined, undefined];
  const space = payload.indexOf(' ');
  return space < 0 ? [payload, undefined] : [payload.slice(0, space), payload.slice(space + 1)];
}

/**
 * One connection outside the pool holds every LISTEN of a Db (a worker listens on three channels:
 * three connections would be two too many), and comes back when lost. Notifications carry the
 * schema they were sent from (`current_schema()`): channels are shared by the whole database, so a
 * service kept in a schema of its own wakes only for its own work.
 */
function listenerOnServer(url: string, schema?: string) {
  const handlers = new Map<string, Set<(detail?: string) => void>>();
  let client: pg.Client | null = null;
  /** The channels `client` listens on. */
  let listened = new Set<string>();
  let connecting: Promise<void> | null = null;
  let timer: NodeJS.Timeout | undefined;
  /** Tells every handler: a wake-up that throws is the caller's failure, not the connection's. */
  const tell = (channel: string, detail?: string) => {
    for (const handler of handlers.get(channel) ?? []) {
      try {
        handler(detail);
      } catch {}
    }
  };
  /**
   * LISTENs on the channels with handlers that the connection does not listen on yet, one statement
   * at a time on the connection (callers that listen together queue here, not on the client).
   */
  let queue: Promise<void> = Promise.resolve();
  const listenAll = (c: pg.Client) => {
    const next = queue.then(async () => {
      for (const channel of handlers.keys()) {
        if (listened.has(channel)) continue;
        listened.add(channel);
        await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      }
    });
    queue = next.catch(() => {});
    return next;
  };
  const connect = async () => {
    const c = new pg.Client({ connectionString: url });
    c.on('notification', (message) => {
      const [from, detail] = splitPayload(message.payload);
      if (schema && from && from !== schema) return;
      tell(message.channel, detail);
    });
    const retry = () => {
      if (client === c) client = null;
      c.end().catch(() => {});
      if (handlers.size > 0 && !timer) timer = setTimeout(reconnect, RELISTEN_MS);
      timer?.unref();
    };
    c.on('error', retry);
    try {
      await c.connect();
      listened = new Set();
      await listenAll(c);
      client = c;
    } catch {
      retry();
      return;
    }
    // Whatever was notified while no one listened is found by the callers' next poll; a wake-up
    // now makes that poll immediate.
    for (const channel of handlers.keys()) tell(channel);
  };
  function reconnect() {
    timer = undefined;
    if (handlers.size === 0) return;
    connecting = connect().finally(() => {
      connecting = null;
    });
  }
  return async (channel: string, onNotify: (detail?: string) => void) => {
    const set = handlers.get(channel) ?? new Set();
    set.add(onNotify);
    handlers.set(channel, set);
    if (connecting) await connecting;
    if (client) await listenAll(client).catch(() => {});
    else if (!timer) {
      reconnect();
      await connecting;
    }
    return async () => {
      set.delete(onNotify);
      if (set.size === 0 && handlers.get(channel) === set) {
        handlers.delete(channel);
        listened.delete(channel);
        const c = client;
        const unlisten = queue
          .then(() => c?.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`))
          .catch(() => {});
        queue = unlisten.then(() => {});
        await unlisten;
      }
      if (handlers.size === 0) {
        clearTimeout(timer);
        timer = undefined;
        const c = client;
        client = null;
        await c?.end().catch(() => {});
      }
    };
  };
}

/** dataDir null keeps the database in memory (tests); `from`, a dumped data directory, starts it. */
export async function createPgliteDb(dataDir: string | null, from?: Blob): Promise<Db> {
  // One options object: PGlite ignores the second argument when the first is not a string.
  const lite = new PGlite({
    dataDir: dataDir ?? undefined,
    loadDataDir: from,
    parsers: { [INT8]: toNumber, [NUMERIC]: toNumber, [TIMESTAMPTZ]: parseTimestamptz },
  });
  await lite.waitReady;
  const db: Db = {
    kind: 'pglite',
    async query<T>(sql: string, params?: readonly unknown[]) {
      return (await lite.query<T>(sql, params as unknown[])).rows;
    },
    tx<T>(fn: (q: Queryable) => Promise<T>) {
      return lite.transaction(async (t) =>
        fn({
          async query<R>(sql: string, params?: readonly unknown[]) {
            return (await t.query<R>(sql, params as unknown[])).rows;
          },
          async exec(sql: string) {
            await t.exec(sql);
          },
        }),
      );
    },
    async exec(sql: string) {
      await lite.exec(sql);
    },
    async listen(channel, onNotify) {
      const stop = await lite.listen(channel, (payload) => onNotify(splitPayload(payload)[1]));
      return async () => {
        await stop();
      };
    },
    withPlansKept: () => ({ ...db, async close() {} }),
    async close() {
      await lite.close();
    },
  };
  return db;
}

/** PostgreSQL error codes the application turns into client errors. */
export const PgCode = {
  uniqueViolation: '23505',
  foreignKeyViolation: '23503',
  checkViolation: '23514',
} as const;

export function pgErrorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function pgConstraint(error: unknown): string | undefined {
  const constraint = (error as { constraint?: unknown } | null)?.constraint;
  return typeof constraint === 'string' ? constraint : undefined;
}

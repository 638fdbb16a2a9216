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
  max?: number;
}

export function createPostgresDb(options: PostgresOptions): Db {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    options:
      [
        options.schema ? `-c search_path=${options.schema}` : '',
        options.statementTimeoutMs ? `-c statement_timeout=${options.statementTimeoutMs}` : '',
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
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => {});
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
        const result = await fn(q);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    async exec(sql: string) {
      await pool.query(sql);
    },
    async close() {
      await pool.end();
    },
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
  return {
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
    async close() {
      await lite.close();
    },
  };
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

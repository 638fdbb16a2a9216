// Plain SQL files in migrations/, applied in name order, each in its own transaction, recorded in
// schema_migrations with the SHA-256 of the file. Every step holds one advisory lock, the
// bookkeeping table's creation included, so several processes may start at once on an empty
// database. A file changed after it was applied stops the start: the database no longer matches
// what the code says it is.
//
// Then engine.sql, the delivery engine's functions whole (CREATE OR REPLACE), whenever it differs
// from what was applied last: the functions in force are the file's, and migrations hold only the
// schema.
//
// A migration whose first line is `-- svc-migrate: stop-the-fleet` changes what running code
// relies on: it is refused while processes of an earlier build run (runningFleet), naming them.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Db, Queryable } from './db.js';

export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
const ENGINE_FILE = fileURLToPath(new URL('./engine.sql', import.meta.url));
/** engine.sql's row in schema_migrations (no migration file has this name). */
const ENGINE_ROW = '~engine.sql';
const LOCK_ID = 734_110_901;
const STOP_THE_FLEET = /^-- svc-migrate: stop-the-fleet\s*$/m;
/** A worker seen this recently is taken to run (its beat comes every SVC_WEBHOOK_POLL_MS). */
const RUNNING_WITHIN_S = 30;

export class MigrationMismatchError extends Error {}
/** A migration that needs the processes of an earlier build stopped, refused while they run. */
export class FleetRunningError extends Error {}

/** The build a process runs: the last migration its code knows. */
export async function buildName(dir = MIGRATIONS_DIR): Promise<string> {
  const names = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  return names.at(-1) ?? 'none';
}

/**
 * What says processes of an earlier build run on this database: delivery workers whose beat was
 * seen lately, sessions named as the earlier build's `svc worker` named them, and leases held by no
 * worker that beats (an earlier build's, which does not beat). The embedded database has one
 * process: none.
 */
async function runningFleet(db: Db, q: Queryable): Promise<string[]> {
  if (db.kind === 'pglite') return [];
  const found: string[] = [];
  const [registry] = await q.query<{ workers: string | null }>(
    "SELECT to_regclass('delivery_workers')::text AS workers",
  );
  if (registry?.workers) {
    const rows = await q.query<{ host: string; pid: number; build: string; ago: number }>(
      `SELECT host, pid, build, round(extract(epoch FROM now() - seen_at))::int AS ago
       FROM delivery_workers WHERE seen_at > now() - make_interval(secs => $1) ORDER BY host, pid`,
      [RUNNING_WITHIN_S],
    );
    for (const r of rows)
      found.push(`worker pid ${r.pid} on ${r.host} (build ${r.build}, seen ${r.ago} s ago)`);
  }
  const sessions = await q.query<{ pid: number; addr: string | null; name: string }>(
    `SELECT pid, client_addr::text AS addr, application_name AS name FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid()
       AND application_name = 'svc worker' || coalesce(' ' || nullif(current_schema(), 'public'), '')`,
  );
  for (const s of sessions)
    found.push(`an earlier build's svc worker (session ${s.pid} from ${s.addr ?? 'local'})`);
  const [leases] = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM delivery_queue q
     WHERE q.lease_owner IS NOT NULL AND q.lease_until > now()
       ${registry?.workers ? 'AND NOT EXISTS (SELECT 1 FROM delivery_workers w WHERE w.id = q.lease_owner)' : ''}`,
  );
  if ((leases?.n ?? 0) > 0)
    found.push(`${leases?.n} deliveries leased by processes that do not beat (an earlier build)`);
  return found;
}

const checksum = (sql: string) => createHash('sha256').update(sql).digest('hex');

const lock = (q: Queryable) => q.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);

/**
 * Creates the bookkeeping table, or adds the checksum column to one made before checksums were
 * kept and records the checksum of each applied file once, as the file is now. Returns what each
 * applied migration's checksum is.
 */
async function prepareBookkeeping(db: Db, files: Map<string, string>): Promise<Map<string, string>> {
  return db.tx(async (q) => {
    await lock(q);
    await q.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    );
    ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text`);
    const rows = await q.query<{ name: string; checksum: string | null }>(
      'SELECT name, checksum FROM schema_migrations',
    );
    const applied = new Map<string, string>();
    for (const row of rows) {
      const file = files.get(row.name);
      // A migration applied by a newer release and unknown to this one: nothing to compare.
      if (file === undefined) continue;
      if (row.checksum === null) {
        await q.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1 AND checksum IS NULL', [
          row.name,
          checksum(file),
        ]);
        applied.set(row.name, checksum(file));
      } else {
        applied.set(row.name, row.checksum);
      }
    }
    return applied;
  });
}

async function readMigrations(dir: string): Promise<Map<string, string>> {
  const names = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const files = new Map<string, string>();
  for (const name of names) files.set(name, await readFile(dir + name, 'utf8'));
  return files;
}

/** The migrations of this build that the database has not applied, in order. Writes nothing. */
export async function pendingMigrations(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = await readMigrations(dir);
  const [table] = await db.query<{ name: string | null }>(
    "SELECT to_regclass('schema_migrations')::text AS name",
  );
  if (!table?.name) return [...files.keys()];
  const applied = new Set(
    (await db.query<{ name: string }>('SELECT name FROM schema_migrations')).map((row) => row.name),
  );
  return [...files.keys()].filter((name) => !applied.has(name));
}

/**
 * Applies the pending migrations, then engine.sql when it changed (`engine`: null leaves the
 * functions alone, for tests of migrations of their own). Answers the migrations applied.
 */
export async function migrate(
  db: Db,
  dir = MIGRATIONS_DIR,
  engine: string | null = dir === MIGRATIONS_DIR ? ENGINE_FILE : null,
): Promise<string[]> {
  const files = await readMigrations(dir);

  const known = await prepareBookkeeping(db, files);
  for (const [name, sum] of known) {
    if (sum !== checksum(files.get(name) as string)) {
      throw new MigrationMismatchError(
        `migration ${name} was changed after it was applied; restore the applied text and add a new migration instead`,
      );
    }
  }

  const applied: string[] = [];
  for (const [name, sql] of files) {
    if (known.has(name)) continue;
    const ran = await db.tx(async (q) => {
      await lock(q);
      // Another process may have applied it while this one waited for the lock.
      const done = await q.query('SELECT 1 FROM schema_migrations WHERE name = $1', [name]);
      if (done.length > 0) return false;
      if (STOP_THE_FLEET.test(sql.split('\n', 1)[0] ?? '')) {
        const running = await runningFleet(db, q);
        if (running.length > 0) {
          throw new FleetRunningError(
            `migration ${name} needs every process of the earlier build stopped, and these still run: ${running.join('; ')}. ` +
              'Stop them (svc serve and svc worker), run svc migrate again, then start the new build.',
          );
        }
      }
      await q.exec(sql);
      await q.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [name, checksum(sql)]);
      return true;
    });
    if (ran) applied.push(name);
  }
  if (engine) await applyEngine(db, await readFile(engine, 'utf8'));
  return applied;
}

/** engine.sql, applied when it differs from the text applied last. */
async function applyEngine(db: Db, sql: string): Promise<void> {
  const sum = checksum(sql);
  const [current] = await db.query<{ checksum: string }>(
    'SELECT checksum FROM schema_migrations WHERE name = $1',
    [ENGINE_ROW],
  );
  if (current?.checksum === sum) return;
  await db.tx(async (q) => {
    await lock(q);
    // Another process may have applied it while this one waited for the lock.
    const [now] = await q.query<{ checksum: string }>(
      'SELECT checksum FROM schema_migrations WHERE name = $1',
      [ENGINE_ROW],
    );
    if (now?.checksum === sum) return;
    await q.exec(sql);
    await q.query(
      `INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()`,
      [ENGINE_ROW, sum],
    );
  });
}

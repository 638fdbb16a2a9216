// Plain SQL files in migrations/, applied in name order, each in its own transaction, recorded in
// schema_migrations with the SHA-256 of the file. Every step holds one advisory lock, the
// bookkeeping table's creation included, so several processes may start at once on an empty
// database. A file changed after it was applied stops the start: the database no longer matches
// what the code says it is.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Db, Queryable } from './db.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
const LOCK_ID = 734_110_901;

export class MigrationMismatchError extends Error {}

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

export async function migrate(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
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
      await q.exec(sql);
      await q.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [name, checksum(sql)]);
      return true;
    });
    if (ran) applied.push(name);
  }
  return applied;
}

// Empty databases and migration folders for tests of the migrations themselves. Each helper adds
// what must be undone to `cleanups`, which the test file runs after its last test.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPgliteDb, createPostgresDb, type Db } from '../../src/db/db.js';
import { pgliteEmpty } from './pglite-template.js';

export type Cleanups = (() => Promise<void>)[];

/**
 * `count` connections to one empty database: schemas of their own on PostgreSQL
 * (TEST_DATABASE_URL), one PGlite otherwise (loaded from the dump of a bare initdb, which is what
 * a first start finds).
 */
export async function emptyDatabase(count: number, cleanups: Cleanups): Promise<Db[]> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) {
    const db = await createPgliteDb(null, await pgliteEmpty());
    cleanups.push(() => db.close());
    return Array.from({ length: count }, () => db);
  }
  const schema = `m_${randomBytes(6).toString('hex')}`;
  const admin = createPostgresDb({ url, max: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  const dbs = Array.from({ length: count }, () => createPostgresDb({ url, schema, max: 2 }));
  cleanups.push(async () => {
    for (const db of dbs) await db.close();
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
  });
  return dbs;
}

/** A folder of migration files (name to SQL), as `migrate(db, dir)` takes it. */
export async function migrationsDir(files: Record<string, string>, cleanups: Cleanups): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-migrations-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  for (const [name, sql] of Object.entries(files)) await writeFile(join(dir, name), sql);
  return `${dir}/`;
}

// The read benchmark's data set, loaded through the database with set-based INSERT ... SELECT FROM
// generate_series, every value derived from the row number: the same options give the same rows.
// The runner (bench/run.ts) makes it again whenever the database holds another one.
import { createPostgresDb, type Db } from '../src/db/db.js';
import { migrate } from '../src/db/migrate.js';
import { insertBookings } from './lib/bookings.js';
import { loadCatalogue } from './lib/catalogue.js';
import { makePlan } from './lib/plan.js';
import { createDatabase } from './lib/proc.js';
import { int, log, round } from './lib/report.js';

/** Bump when the generator changes what it writes: the runner then regenerates old data sets. */
export const DATASET_VERSION = 1;
/** Bookings per INSERT: memory stays flat however large the data set. */
const BATCH = 50_000;

export interface Dataset {
  version: number;
  bookings: number;
  organizations: number;
  largestOrganization: { id: string; code: string; bookings: number };
  seconds: number;
}

/** The data set of the database at `url` (created when missing), made again when it holds another. */
export async function ensureDataset(url: string, bookings: number, organizations: number): Promise<Dataset> {
  await createDatabase(url, false);
  const db = createPostgresDb({ url, max: 2 });
  try {
    const [table] = await db.query<{ t: string | null }>(
      `SELECT to_regclass('public.bench_dataset')::text AS t`,
    );
    const [found] = table?.t ? await db.query<{ info: Dataset }>('SELECT info FROM bench_dataset') : [];
    const info = found?.info;
    if (
      info?.version !== DATASET_VERSION ||
      info.bookings !== bookings ||
      info.organizations !== organizations
    )
      return await generate(db, { bookings, organizations });
    // Migrations added since the load run here, not in the API, whose start-up they would slow.
    await migrate(db);
    return info;
  } finally {
    await db.close();
  }
}

/**
 * The secondary indexes of bookings are dropped during the load and built once at the end: one
 * sort per index instead of a million random insertions into each. Constraint indexes stay.
 */
async function secondaryIndexes(db: Db): Promise<{ name: string; definition: string }[]> {
  return db.query<{ name: string; definition: string }>(
    `SELECT i.indexname AS name, i.indexdef AS definition FROM pg_indexes i
     WHERE i.schemaname = 'public' AND i.tablename = 'bookings'
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)
     ORDER BY i.indexname`,
  );
}

async function generate(db: Db, options: { bookings: number; organizations: number }): Promise<Dataset> {
  log(`generating ${int(options.bookings)} bookings`);
  const plan = makePlan(options);
  const started = performance.now();
  await db.exec('DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public');
  await migrate(db);
  await loadCatalogue(db, plan);
  const indexes = await secondaryIndexes(db);
  for (const index of indexes) await db.exec(`DROP INDEX ${index.name}`);
  for (let first = 0; first < plan.bookings; first += BATCH) {
    const last = Math.min(first + BATCH, plan.bookings) - 1;
    await insertBookings(db, plan, first, last);
    log(`bookings: ${int(last + 1)} of ${int(plan.bookings)}`);
  }
  for (const index of indexes) await db.exec(index.definition);
  await db.exec('VACUUM ANALYZE');
  const largest = plan.organizations[0]!;
  const [org] = await db.query<{ id: string }>('SELECT id FROM organizations WHERE code = $1', [
    largest.code,
  ]);
  const dataset: Dataset = {
    version: DATASET_VERSION,
    bookings: plan.bookings,
    organizations: plan.organizations.length,
    largestOrganization: { id: org!.id, code: largest.code, bookings: largest.bookings },
    seconds: round((performance.now() - started) / 1000),
  };
  // Written last: a data set without this row is unfinished and the runner makes it again.
  await db.exec('CREATE TABLE bench_dataset (info jsonb NOT NULL)');
  await db.query('INSERT INTO bench_dataset (info) VALUES ($1)', [JSON.stringify(dataset)]);
  log(`loaded ${int(plan.bookings)} bookings in ${dataset.seconds} s`);
  return dataset;
}

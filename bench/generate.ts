// Loads the benchmark data set through the database: set-based INSERT ... SELECT FROM generate_series,
// every value derived from the row number, so the same options always give the same data.
//
//   node --import tsx bench/generate.ts [--bookings 1000000] [--organizations 200]
//        [--database-url postgres://...] [--data-dir bench/data] [--reset] [--batch 50000]
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createPgliteDb, createPostgresDb, type Db } from '../src/db/db.js';
import { migrate } from '../src/db/migrate.js';
import { insertBookings } from './lib/bookings.js';
import { type CatalogueCounts, loadCatalogue } from './lib/catalogue.js';
import { makePlan } from './lib/plan.js';

/** Bump when the generator changes what it writes: the runner then regenerates old data sets. */
export const DATASET_VERSION = 1;

export interface GenerateOptions {
  bookings: number;
  organizations: number;
  batch?: number;
  /** Where progress and timings go (stderr by default). */
  out?: NodeJS.WriteStream;
}

export interface Dataset {
  version: number;
  bookings: number;
  organizations: number;
  largestOrganization: { id: string; code: string; bookings: number };
  catalogue: CatalogueCounts;
  seconds: {
    schema: number;
    catalogue: number;
    bookings: number;
    indexes: number;
    analyze: number;
    total: number;
  };
}

/** Opens the benchmark database the way the service does (same layout under a data dir). */
export async function openBenchDb(target: { databaseUrl?: string; dataDir?: string }): Promise<Db> {
  if (target.databaseUrl) return createPostgresDb({ url: target.databaseUrl, max: 2 });
  if (!target.dataDir) throw new Error('give --database-url or --data-dir');
  return createPgliteDb(join(target.dataDir, 'pglite'));
}

/** Removes an embedded data directory's database, keeping its master key. */
export async function removePgliteData(dataDir: string): Promise<void> {
  await rm(join(dataDir, 'pglite'), { recursive: true, force: true });
}

/** The data set a database holds, or null when it holds none (or an unfinished one). */
export async function readDataset(db: Db): Promise<Dataset | null> {
  const [exists] = await db.query<{ t: string | null }>(
    `SELECT to_regclass('public.bench_dataset')::text AS t`,
  );
  if (!exists?.t) return null;
  const [row] = await db.query<{ info: Dataset }>('SELECT info FROM bench_dataset');
  return row?.info ?? null;
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

export async function generate(db: Db, options: GenerateOptions): Promise<Dataset> {
  const out = options.out ?? process.stderr;
  const batch = options.batch ?? 50_000;
  const plan = makePlan({ bookings: options.bookings, organizations: options.organizations });
  const clock = () => performance.now() / 1000;
  const t0 = clock();

  await db.exec('DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public');
  await migrate(db);
  const t1 = clock();

  const catalogue = await loadCatalogue(db, plan);
  const t2 = clock();
  out.write(
    `catalogue: ${catalogue.organizations} organizations, ${catalogue.customers} customers, ` +
      `${catalogue.drivers} drivers, ${catalogue.vehicles} vehicles in ${(t2 - t1).toFixed(1)} s\n`,
  );

  const indexes = await secondaryIndexes(db);
  for (const index of indexes) await db.exec(`DROP INDEX ${index.name}`);
  for (let first = 0; first < plan.bookings; first += batch) {
    const last = Math.min(first + batch, plan.bookings) - 1;
    await insertBookings(db, plan, first, last);
    out.write(`bookings: ${(last + 1).toLocaleString('en')} of ${plan.bookings.toLocaleString('en')}\n`);
  }
  const t3 = clock();

  for (const index of indexes) await db.exec(index.definition);
  const t4 = clock();
  await db.exec('VACUUM ANALYZE');
  const t5 = clock();

  const largest = plan.organizations[0];
  const [org] = await db.query<{ id: string }>('SELECT id FROM organizations WHERE code = $1', [
    largest?.code,
  ]);
  const dataset: Dataset = {
    version: DATASET_VERSION,
    bookings: plan.bookings,
    organizations: plan.organizations.length,
    largestOrganization: {
      id: org?.id as string,
      code: largest?.code as string,
      bookings: largest?.bookings ?? 0,
    },
    catalogue,
    seconds: {
      schema: round(t1 - t0),
      catalogue: round(t2 - t1),
      bookings: round(t3 - t2),
      indexes: round(t4 - t3),
      analyze: round(t5 - t4),
      total: round(t5 - t0),
    },
  };
  // Written last: a data set without this row is unfinished and the runner makes it again.
  await db.exec('CREATE TABLE bench_dataset (info jsonb NOT NULL)');
  await db.query('INSERT INTO bench_dataset (info) VALUES ($1)', [JSON.stringify(dataset)]);
  out.write(
    `loaded ${plan.bookings.toLocaleString('en')} bookings in ${dataset.seconds.total} s ` +
      `(bookings ${dataset.seconds.bookings} s, indexes ${dataset.seconds.indexes} s, ` +
      `vacuum analyze ${dataset.seconds.analyze} s)\n`,
  );
  return dataset;
}

const round = (s: number) => Math.round(s * 10) / 10;

async function cli(): Promise<void> {
  const { values } = parseArgs({
    options: {
      bookings: { type: 'string', default: '1000000' },
      organizations: { type: 'string', default: '200' },
      'database-url': { type: 'string' },
      'data-dir': { type: 'string' },
      reset: { type: 'boolean', default: false },
      batch: { type: 'string', default: '50000' },
    },
  });
  const target = { databaseUrl: values['database-url'], dataDir: values['data-dir'] };
  if (!target.databaseUrl && !target.dataDir) throw new Error('give --database-url or --data-dir');
  if (target.dataDir && !target.databaseUrl && values.reset) await removePgliteData(target.dataDir);
  const db = await openBenchDb(target);
  try {
    const [{ n } = { n: 0 }] = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public' AND tablename = 'organizations'`,
    );
    if (n > 0 && !values.reset) {
      const [rows] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM organizations');
      if ((rows?.n ?? 0) > 0) throw new Error('the database already holds data: add --reset to replace it');
    }
    const dataset = await generate(db, {
      bookings: Number(values.bookings),
      organizations: Number(values.organizations),
      batch: Number(values.batch),
    });
    process.stdout.write(`${JSON.stringify(dataset, null, 2)}\n`);
  } finally {
    await db.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  cli().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}

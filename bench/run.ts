// npm run bench [-- --db postgres|pglite|both --duration 10 --connections 64 --bookings N ...]
//
// For each database: make the data set when missing, start the API as operators do, load every
// read endpoint, load the ceiling server with the same bytes, and record the results.
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migrate } from '../src/db/migrate.js';
import {
  DATASET_VERSION,
  type Dataset,
  generate,
  openBenchDb,
  readDataset,
  removePgliteData,
} from './generate.js';
import { createKey, type Database, startApi } from './lib/api.js';
import { freePort, startChild } from './lib/child.js';
import { type LoadOptions, type LoadResult, runLoad } from './lib/load.js';
import {
  type DatabaseKind,
  deepVsFirst,
  type EndpointResult,
  evaluateTargets,
  fraction,
  latestResults,
  machine,
  type RunResult,
  renderBenchmarks,
  saveResult,
} from './lib/report.js';
import {
  capture,
  type DeepCursor,
  deepCursor,
  type Endpoint,
  fallbackEndpoints,
  readApiAvailable,
  readEndpoints,
} from './lib/scenario.js';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const RESULTS = join(ROOT, 'bench', 'results');
/** PGlite takes the full size too: about 4 minutes to load, flat memory (bench/README.md). */
const DEFAULT_BOOKINGS: Record<DatabaseKind, number> = { postgres: 1_000_000, pglite: 1_000_000 };

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'both' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    bookings: { type: 'string' },
    organizations: { type: 'string', default: '200' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/svc_bench' },
    'data-dir': { type: 'string', default: join(ROOT, 'bench', 'data') },
    'skip-build': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
    profile: { type: 'string' },
    endpoints: { type: 'string' },
  },
});

const log = (line: string) => process.stderr.write(`${line}\n`);

function positive(name: string, raw: string | undefined): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
  return n;
}

/** Creates the benchmark database on the server when it does not exist yet. */
async function ensureServerDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) {
      log(`creating database ${name}`);
      await client.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
    }
  } finally {
    await client.end();
  }
}

/** The data set the database holds, made (again) when it is missing or of another size. */
async function ensureDataset(database: Database, bookings: number, organizations: number): Promise<Dataset> {
  const target = database.kind === 'postgres' ? { databaseUrl: database.url } : { dataDir: database.dataDir };
  if (database.kind === 'postgres') await ensureServerDatabase(database.url);
  let db = await openBenchDb(target);
  try {
    const found = await readDataset(db);
    if (
      found &&
      found.version === DATASET_VERSION &&
      found.bookings === bookings &&
      found.organizations === organizations
    ) {
      log(`${database.kind}: data set of ${bookings.toLocaleString('en')} bookings already loaded`);
      // Migrations added since the load run here, not in the API process: an index built over a
      // million rows would show in the API's start-up time and (PGlite) in its peak memory.
      const applied = await migrate(db);
      if (applied.length > 0) log(`${database.kind}: applied ${applied.join(', ')}`);
      return found;
    }
    log(`${database.kind}: generating ${bookings.toLocaleString('en')} bookings`);
    if (database.kind === 'pglite') {
      await db.close();
      await removePgliteData(database.dataDir);
      db = await openBenchDb(target);
    }
    return await generate(db, { bookings, organizations });
  } finally {
    await db.close();
  }
}

interface Measured {
  endpoints: EndpointResult[];
  readApi: boolean;
  deep: DeepCursor | null;
  startupRssMb: number | null;
  peakRssMb: number | null;
}

async function measure(database: Database, dataset: Dataset, load: Omit<LoadOptions, 'url' | 'headers'>) {
  const api = await startApi(ROOT, database, args.profile && resolve(args.profile));
  const captures: Record<string, Awaited<ReturnType<typeof capture>>> = {};
  const apiResults = new Map<string, LoadResult & { peakRssMb: number | null }>();
  let endpoints: Endpoint[];
  let readApi: boolean;
  let deep: DeepCursor | null = null;
  let key: string;
  const startupRssMb = await api.child.rssMb();
  try {
    key = await createKey(api, dataset.largestOrganization.id);
    readApi = await readApiAvailable(api.baseUrl, key);
    if (readApi) {
      deep = await deepCursor(api.baseUrl, key, dataset.largestOrganization.bookings);
      log(`deep cursor: ${deep.rows} rows in, ${deep.requests} requests, ${deep.seconds} s`);
      endpoints = await readEndpoints(api.baseUrl, key, deep);
    } else {
      log('the read API does not answer yet: loading GET /integrations/me only');
      endpoints = fallbackEndpoints();
    }
    const only = args.endpoints?.split(',');
    if (only) endpoints = endpoints.filter((e) => only.includes(e.name));
    for (const e of endpoints) {
      captures[e.path] = await capture(`${api.baseUrl}${e.path}`, key);
      const result = await runLoad({ ...load, url: `${api.baseUrl}${e.path}`, headers: auth(key) });
      apiResults.set(e.name, { ...result, peakRssMb: await api.child.peakRssMb() });
      log(`api     ${e.label}: ${line(result)}`);
    }
  } finally {
    await api.child.stop();
  }
  const peakRssMb = Math.max(...[...apiResults.values()].map((r) => r.peakRssMb ?? 0)) || null;

  // The ceiling answers the same paths below the same prefix, so the requests are identical.
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  const port = await freePort();
  const prefixed = Object.fromEntries(Object.entries(captures).map(([p, c]) => [`/api/v1${p}`, c]));
  await writeFile(join(dir, 'captures.json'), JSON.stringify(prefixed));
  const ceilingUrl = `http://127.0.0.1:${port}/api/v1`;
  const ceiling = await startChild({
    args: ['--import', 'tsx', join(ROOT, 'bench', 'ceiling.ts'), join(dir, 'captures.json'), String(port)],
    env: { PATH: process.env.PATH },
    cwd: ROOT,
    ready: async () => (await fetch(`${ceilingUrl}/integrations/me`)).status === 200,
  });
  const results: EndpointResult[] = [];
  try {
    for (const e of endpoints) {
      const result = await runLoad({ ...load, url: `${ceilingUrl}${e.path}`, headers: auth(key) });
      log(`ceiling ${e.label}: ${line(result)}`);
      const apiResult = apiResults.get(e.name) as LoadResult & { peakRssMb: number | null };
      results.push({
        name: e.name,
        label: e.label,
        responseBytes: Buffer.from(captures[e.path]?.body ?? '', 'base64').length,
        api: apiResult,
        ceiling: result,
        fractionOfCeiling: fraction(apiResult, result),
      });
    }
  } finally {
    await ceiling.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return { endpoints: results, readApi, deep, startupRssMb, peakRssMb } satisfies Measured;
}

/** The cursor itself is a signed secret of one run: worthless later, so it is not kept. */
function withoutCursor(deep: DeepCursor | null): Omit<DeepCursor, 'cursor'> | null {
  if (!deep) return null;
  const { cursor: _cursor, ...rest } = deep;
  return rest;
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const line = (r: LoadResult) =>
  `${r.requestsPerSecond} req/s, p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms` +
  (r.failures > 0 ? `, ${r.failures} FAILURES` : '');

async function main(): Promise<void> {
  const kinds: DatabaseKind[] =
    args.db === 'both'
      ? ['postgres', 'pglite']
      : args.db === 'postgres' || args.db === 'pglite'
        ? [args.db]
        : [];
  if (kinds.length === 0) throw new Error('--db must be postgres, pglite or both');
  const load = {
    connections: positive('connections', args.connections),
    duration: positive('duration', args.duration),
    warmup: Number(args.warmup) || 0,
  };
  const organizations = positive('organizations', args.organizations);

  if (!args['skip-build']) {
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }

  for (const kind of kinds) {
    const bookings = args.bookings ? positive('bookings', args.bookings) : DEFAULT_BOOKINGS[kind];
    const database: Database =
      kind === 'postgres' ? { kind, url: args['database-url'] } : { kind, dataDir: args['data-dir'] };
    if (kind === 'pglite') await mkdir(args['data-dir'], { recursive: true });
    const dataset = await ensureDataset(database, bookings, organizations);
    const m = await measure(database, dataset, load);
    const partial: Omit<RunResult, 'targets'> = {
      database: kind,
      date: new Date().toISOString(),
      machine: machine(),
      options: load,
      dataset,
      readApi: m.readApi,
      deepCursor: withoutCursor(m.deep),
      api: { startupRssMb: m.startupRssMb, peakRssMb: m.peakRssMb },
      endpoints: m.endpoints,
      deepVsFirst: deepVsFirst(m.endpoints),
    };
    const result: RunResult = { ...partial, targets: evaluateTargets(partial) };
    if (args['dry-run']) {
      process.stdout.write(`${renderBenchmarks([result])}\n`);
    } else {
      await mkdir(RESULTS, { recursive: true });
      log(`saved ${await saveResult(RESULTS, result)}`);
    }
  }
  if (!args['dry-run']) {
    // The reading of the figures (what holds each endpoint back) is written by hand and kept.
    const analysis = await readFile(join(ROOT, 'bench', 'analysis.md'), 'utf8').catch(() => '');
    const markdown = [renderBenchmarks(await latestResults(RESULTS)), analysis].filter(Boolean).join('\n');
    await writeFile(join(ROOT, 'BENCHMARKS.md'), markdown);
    process.stdout.write(markdown);
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});

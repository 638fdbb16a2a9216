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
import type { Capture } from './ceiling.js';
import {
  DATASET_VERSION,
  type Dataset,
  generate,
  openBenchDb,
  readDataset,
  removePgliteData,
} from './generate.js';
import { createKey, type Database, newSecrets, startApi } from './lib/api.js';
import { type LoadOptions, type LoadResult, median, runLoad } from './lib/load.js';
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
  type Summary,
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
import { keepOwnSections } from './lib/sections.js';
import { type ServerName, type ServerSet, serverSet } from './lib/servers.js';
import { sectionOf, withSection } from './lib/webhook-report.js';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const RESULTS = join(ROOT, 'bench', 'results');
/** The largest organization then holds 20,000 bookings; --bookings 1000000 for the full size. */
const DEFAULT_BOOKINGS: Record<DatabaseKind, number> = { postgres: 200_000, pglite: 200_000 };

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'both' },
    duration: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    connections: { type: 'string', default: '64' },
    bookings: { type: 'string' },
    organizations: { type: 'string', default: '200' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/svc_bench' },
    'data-dir': { type: 'string', default: join(ROOT, 'bench', 'data') },
    'skip-build': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
    'report-only': { type: 'boolean', default: false },
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

/** The round whose rate is the median stands for the server; every round's rate is kept. */
function summarize(rounds: (LoadResult & { cpuUs: number | null })[]): Summary {
  const cpu = rounds.flatMap((r) => (r.cpuUs === null ? [] : [r.cpuUs / Math.max(1, r.requests)]));
  const rates = rounds.map((r) => r.requestsPerSecond);
  const mid = median(rates);
  const closest = rounds.reduce((a, b) =>
    Math.abs(b.requestsPerSecond - mid) < Math.abs(a.requestsPerSecond - mid) ? b : a,
  );
  return {
    ...closest,
    requestsPerSecond: Math.round(mid),
    latencyMs: { ...closest.latencyMs, p99: median(rounds.map((r) => r.latencyMs.p99)) },
    failures: rounds.reduce((n, r) => n + r.failures, 0),
    rounds: rates,
    cpuUsPerRequest: cpu.length > 0 ? Math.round(median(cpu)) : null,
  };
}

async function measure(
  database: Database,
  dataset: Dataset,
  load: Omit<LoadOptions, 'url' | 'headers'>,
  rounds: number,
): Promise<Measured> {
  const secrets = newSecrets();
  const profileDir = args.profile && resolve(args.profile);
  const first = await startApi(ROOT, database, secrets, profileDir);
  const startupRssMb = await first.child.rssMb();
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  let peakRssMb = 0;
  const notePeak = async (child: { peakRssMb(): Promise<number | null> }) => {
    peakRssMb = Math.max(peakRssMb, (await child.peakRssMb()) ?? 0);
  };
  let servers: ServerSet | null = null;
  try {
    const key = await createKey(first, dataset.largestOrganization.id);
    const readApi = await readApiAvailable(first.baseUrl, key);
    let endpoints: Endpoint[];
    let deep: DeepCursor | null = null;
    if (readApi) {
      deep = await deepCursor(first.baseUrl, key, dataset.largestOrganization.bookings);
      log(`deep cursor: ${deep.rows} rows in, ${deep.requests} requests, ${deep.seconds} s`);
      endpoints = await readEndpoints(first.baseUrl, key, deep);
    } else {
      log('the read API does not answer yet: loading GET /integrations/me only');
      endpoints = fallbackEndpoints();
    }
    const only = args.endpoints?.split(',');
    if (only) endpoints = endpoints.filter((e) => only.includes(e.name));
    const captures: Record<string, Capture> = {};
    for (const e of [...endpoints, { path: '/integrations/me' }]) {
      captures[e.path] = await capture(`${first.baseUrl}${e.path}`, key);
    }
    const identity = JSON.parse(
      Buffer.from(captures['/integrations/me']?.body ?? '', 'base64').toString('utf8'),
    ) as { integration: { id: string } };

    servers = await serverSet(
      {
        root: ROOT,
        database,
        secrets,
        dir,
        captures,
        profileDir,
        baselineRoot: args.baseline && resolve(args.baseline),
        minimal: {
          organizationId: dataset.largestOrganization.id,
          integrationId: identity.integration.id,
          identity,
        },
      },
      { baseUrl: first.baseUrl, child: first.child },
    );
    servers.onApiStop(notePeak);

    // Rounds: every server loads every endpoint once per round, in an order that turns each round,
    // so that a slow patch of the machine does not fall on one server only.
    const runs = new Map<string, (LoadResult & { cpuUs: number | null })[]>();
    const names = servers.names;
    for (let round = 0; round < rounds; round += 1) {
      const order = names.map((_, i) => names[(i + round) % names.length] as ServerName);
      for (const name of order) {
        const server = await servers.use(name);
        for (const e of endpoints) {
          const url = `${server.baseUrl}${e.path}`;
          if (load.warmup > 0)
            await runLoad({ ...load, duration: load.warmup, warmup: 0, url, headers: auth(key) });
          const before = await server.child.cpuUs();
          const measured = await runLoad({ ...load, warmup: 0, url, headers: auth(key) });
          const after = await server.child.cpuUs();
          const result = { ...measured, cpuUs: before === null || after === null ? null : after - before };
          runs.set(`${name} ${e.name}`, [...(runs.get(`${name} ${e.name}`) ?? []), result]);
          if (name === 'api') await notePeak(server.child);
          log(`round ${round + 1} ${name.padEnd(8)} ${e.label}: ${line(result)}`);
        }
      }
    }
    const summary = (name: ServerName, e: Endpoint) => {
      const r = runs.get(`${name} ${e.name}`);
      return r ? summarize(r) : null;
    };

    // Latency at half the API's measured maximum, requests sent at a fixed rate (open model): at
    // saturation every server's latency is only its queue. The minimal server gets the same rate.
    const halfLoad = new Map<string, { rate: number; api: number; minimal: number | null }>();
    for (const name of ['api', 'minimal'] as const) {
      const server = await servers.use(name);
      for (const e of endpoints) {
        const rate = Math.max(1, Math.round((summary('api', e)?.requestsPerSecond ?? 0) / 2));
        const result = await runLoad({
          ...load,
          rate,
          url: `${server.baseUrl}${e.path}`,
          headers: auth(key),
        });
        log(`half load ${name.padEnd(8)} ${e.label} at ${rate} req/s: ${line(result)}`);
        const entry = halfLoad.get(e.name) ?? { rate, api: 0, minimal: null };
        if (name === 'api') {
          entry.api = result.latencyMs.p99;
          await notePeak(server.child);
        } else entry.minimal = result.latencyMs.p99;
        halfLoad.set(e.name, entry);
      }
    }

    const results: EndpointResult[] = endpoints.map((e) => {
      const api = summary('api', e) as Summary;
      const ceiling = summary('ceiling', e) as Summary;
      const minimal = summary('minimal', e);
      const baseline = summary('baseline', e);
      return {
        name: e.name,
        label: e.label,
        responseBytes: Buffer.from(captures[e.path]?.body ?? '', 'base64').length,
        api: { ...api, peakRssMb },
        ceiling,
        minimal,
        baseline,
        fractionOfCeiling: fraction(api, ceiling),
        fractionOfMinimal: minimal ? fraction(api, minimal) : null,
        cpuShareOfMinimal:
          minimal?.cpuUsPerRequest && api.cpuUsPerRequest
            ? Math.round((minimal.cpuUsPerRequest / api.cpuUsPerRequest) * 1000) / 1000
            : null,
        fractionOfBaseline: baseline ? fraction(api, baseline) : null,
        halfLoad: halfLoad.get(e.name) ?? null,
      };
    });
    return { endpoints: results, readApi, deep, startupRssMb, peakRssMb: peakRssMb || null };
  } finally {
    await servers?.stop();
    await first.child.stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

/** The cursor itself is a signed secret of one run: worthless later, so it is not kept. */
function withoutCursor(deep: DeepCursor | null): Omit<DeepCursor, 'cursor'> | null {
  if (!deep) return null;
  const { cursor: _cursor, ...rest } = deep;
  return rest;
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const line = (r: LoadResult & { cpuUs?: number | null }) =>
  `${r.requestsPerSecond} req/s, p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms` +
  (r.cpuUs ? `, ${Math.round(r.cpuUs / Math.max(1, r.requests))} µs CPU/request` : '') +
  (r.failures > 0 ? `, ${r.failures} FAILURES` : '');

async function main(): Promise<void> {
  const kinds: DatabaseKind[] =
    args.db === 'both'
      ? ['postgres', 'pglite']
      : args.db === 'postgres' || args.db === 'pglite'
        ? [args.db]
        : [];
  if (kinds.length === 0) throw new Error('--db must be postgres, pglite or both');
  if (args['report-only']) {
    await writeBenchmarks();
    return;
  }
  const load = {
    connections: positive('connections', args.connections),
    duration: positive('duration', args.duration),
    warmup: Number(args.warmup) || 0,
  };
  const organizations = positive('organizations', args.organizations);
  const rounds = positive('rounds', args.rounds);

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
    const m = await measure(database, dataset, load, rounds);
    const partial: Omit<RunResult, 'targets'> = {
      database: kind,
      date: new Date().toISOString(),
      machine: machine(),
      options: { ...load, rounds, baseline: args.baseline ?? null },
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
  if (!args['dry-run']) await writeBenchmarks();
}

/**
 * BENCHMARKS.md from the newest result of each database and the reading of the figures, which is
 * written by hand and kept (bench/analysis.md). The "Webhook delivery" section, written by
 * `npm run bench:webhooks`, is kept as it is, and so are "Soak" and "Kill burst".
 */
async function writeBenchmarks(): Promise<void> {
  const file = join(ROOT, 'BENCHMARKS.md');
  const analysis = await readFile(join(ROOT, 'bench', 'analysis.md'), 'utf8').catch(() => '');
  const previous = await readFile(file, 'utf8').catch(() => '');
  const kept = sectionOf(previous);
  const markdown = [renderBenchmarks(await latestResults(RESULTS)), analysis].filter(Boolean).join('\n');
  await writeFile(file, keepOwnSections(previous, kept ? withSection(markdown, kept) : markdown));
  process.stdout.write(markdown);
}

main().catch((error) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});

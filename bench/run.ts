// npm run bench [-- --db postgres|pglite|both --rounds 3 --duration 3 --baseline ../other ...]
//
// The read API against the minimal server (bench/minimal.ts: the same SQL and views on bare
// node:http and pg) on the same data set, interleaved: every server loads every endpoint once per
// round, the order turning each round, and medians of the rounds are reported.
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { migrate } from '../src/db/migrate.js';
import {
  DATASET_VERSION,
  type Dataset,
  generate,
  openBenchDb,
  readDataset,
  removePgliteData,
} from './generate.js';
import { type LoadResult, runLoad } from './lib/load.js';
import {
  type Child,
  call,
  type Database,
  ensureDatabase,
  freePort,
  type Service,
  service,
  startChild,
  startServe,
} from './lib/proc.js';
import {
  barChart,
  int,
  log,
  machine,
  median,
  pct,
  positive,
  RESULTS,
  ROOT,
  readNewest,
  saveNewest,
  type Target,
  table,
  targetTable,
  writeSection,
} from './lib/report.js';
import { deepCursor, type Endpoint, readEndpoints } from './lib/scenario.js';

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'postgres' },
    duration: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    connections: { type: 'string', default: '64' },
    bookings: { type: 'string', default: '200000' },
    organizations: { type: 'string', default: '200' },
    endpoints: { type: 'string' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/svc_bench' },
    'data-dir': { type: 'string', default: join(ROOT, 'bench', 'data') },
    'skip-build': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
  },
});

const SCOPES = [
  'bookings:read',
  'customers:read',
  'drivers:read',
  'vehicles:read',
  'pricing:read',
  'passengers:read',
];
type ServerName = 'api' | 'minimal' | 'baseline';

interface EndpointResult {
  name: string;
  label: string;
  /** Per server: req/s of each round, the median, median CPU µs per request and p99 ms. */
  servers: Partial<
    Record<
      ServerName,
      { rounds: number[]; perSecond: number; cpuUs: number; p99Ms: number; failures: number }
    >
  >;
  ofMinimal: number;
  ofBaseline: number | null;
}

interface ReadsResult {
  database: Database['kind'];
  date: string;
  machine: ReturnType<typeof machine>;
  options: { connections: number; duration: number; warmup: number; rounds: number; baseline: string | null };
  dataset: Dataset;
  endpoints: EndpointResult[];
}

/** The data set the database holds, made again when missing or of another size. */
async function ensureDataset(database: Database, bookings: number, organizations: number): Promise<Dataset> {
  const target = database.kind === 'postgres' ? { databaseUrl: database.url } : { dataDir: database.dataDir };
  if (database.kind === 'postgres') await ensureDatabase(database.url);
  else await mkdir(database.dataDir, { recursive: true });
  let db = await openBenchDb(target);
  try {
    const found = await readDataset(db);
    if (
      found?.version === DATASET_VERSION &&
      found.bookings === bookings &&
      found.organizations === organizations
    ) {
      // Migrations added since the load run here, not in the API, whose start-up they would slow.
      await migrate(db);
      return found;
    }
    log(`${database.kind}: generating ${int(bookings)} bookings`);
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

/**
 * The servers of a run, started when first used. On PGlite the database lives inside the process
 * that opens it, so starting one server stops the other.
 */
function servers(s: Service, database: Database, minimalConfig: string) {
  const running = new Map<ServerName, { child: Child; baseUrl: string }>();
  const start = async (name: ServerName) => {
    if (name === 'minimal') {
      const port = await freePort();
      const child = await startChild({
        args: ['--import', 'tsx', 'bench/minimal.ts', minimalConfig, String(port)],
        cwd: ROOT,
        env: { PATH: process.env.PATH, NODE_ENV: 'production' },
        ready: (output) => output.includes('ready'),
      });
      return { child, baseUrl: `http://127.0.0.1:${port}/api/v1` };
    }
    const root = name === 'baseline' ? resolve(args.baseline as string) : ROOT;
    return { child: await startServe({ ...s, root }), baseUrl: s.baseUrl };
  };
  return {
    async use(name: ServerName) {
      for (const [other, r] of running) {
        // The API and the baseline listen on the same port; on PGlite only one opens the database.
        if (other !== name && (database.kind === 'pglite' || (other !== 'minimal' && name !== 'minimal'))) {
          await r.child.stop();
          running.delete(other);
        }
      }
      const r = running.get(name) ?? (await start(name));
      running.set(name, r);
      return r;
    },
    async stop() {
      for (const r of running.values()) await r.child.stop();
    },
  };
}

async function measure(database: Database, dataset: Dataset): Promise<EndpointResult[]> {
  const s = await service(ROOT, database);
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  const minimalConfig = join(dir, 'minimal.json');
  const set = servers(s, database, minimalConfig);
  try {
    const api = await set.use('api');
    const organizationId = dataset.largestOrganization.id;
    const op = <T>(path: string, body: unknown) =>
      call<T>(`${s.operatorUrl}${path}`, 'POST', s.operatorToken, body);
    const integration = await op<{ id: string }>(`/organizations/${organizationId}/integrations`, {
      name: 'Benchmark',
      kind: 'bi',
      scopes: SCOPES,
    });
    const { key } = await op<{ key: string }>(`/integrations/${integration.id}/keys`, {
      name: 'benchmark',
      scopes: SCOPES,
      environment: 'live',
    });
    const deep = await deepCursor(api.baseUrl, key, dataset.largestOrganization.bookings);
    let endpoints: Endpoint[] = await readEndpoints(api.baseUrl, key, deep);
    const only = args.endpoints?.split(',');
    if (only) endpoints = endpoints.filter((e) => only.includes(e.name));
    const identity = await call<unknown>(`${api.baseUrl}/integrations/me`, 'GET', key);
    const target =
      database.kind === 'postgres' ? { databaseUrl: database.url } : { dataDir: database.dataDir };
    await writeFile(
      minimalConfig,
      JSON.stringify({ ...target, organizationId, integrationId: integration.id, identity }),
    );

    const names: ServerName[] = ['api', 'minimal', ...(args.baseline ? (['baseline'] as const) : [])];
    const rounds = positive('rounds', args.rounds);
    const runs = new Map<string, (LoadResult & { cpuUs: number })[]>();
    const headers = { authorization: `Bearer ${key}` };
    const load = { connections: positive('connections', args.connections), headers };
    for (let round = 0; round < rounds; round++) {
      // The order turns each round, so that a slow patch of the machine does not fall on one server.
      for (const name of names.map((_, i) => names[(i + round) % names.length] as ServerName)) {
        const server = await set.use(name);
        for (const e of endpoints) {
          const url = `${server.baseUrl}${e.path}`;
          const warmup = Number(args.warmup);
          if (warmup > 0) await runLoad({ ...load, url, duration: warmup });
          const before = (await server.child.cpuMs()) ?? 0;
          const r = await runLoad({ ...load, url, duration: positive('duration', args.duration) });
          const cpuUs = Math.round(
            ((((await server.child.cpuMs()) ?? 0) - before) * 1000) / Math.max(1, r.requests),
          );
          runs.set(`${name} ${e.name}`, [...(runs.get(`${name} ${e.name}`) ?? []), { ...r, cpuUs }]);
          log(
            `round ${round + 1} ${name.padEnd(8)} ${e.label}: ${r.requestsPerSecond} req/s, p99 ${r.p99Ms} ms, ${cpuUs} µs CPU/request${r.failures ? `, ${r.failures} FAILURES` : ''}`,
          );
        }
      }
    }
    return endpoints.map((e) => {
      const summary = (name: ServerName) => {
        const r = runs.get(`${name} ${e.name}`);
        if (!r) return undefined;
        const rates = r.map((x) => x.requestsPerSecond);
        return {
          rounds: rates,
          perSecond: Math.round(median(rates)),
          cpuUs: Math.round(median(r.map((x) => x.cpuUs))),
          p99Ms: median(r.map((x) => x.p99Ms)),
          failures: r.reduce((n, x) => n + x.failures, 0),
        };
      };
      const servers = { api: summary('api'), minimal: summary('minimal'), baseline: summary('baseline') };
      const share = (other?: { perSecond: number }) =>
        other
          ? Math.round(((servers.api?.perSecond ?? 0) / Math.max(1, other.perSecond)) * 1000) / 1000
          : null;
      return {
        name: e.name,
        label: e.label,
        servers,
        ofMinimal: share(servers.minimal) ?? 0,
        ofBaseline: share(servers.baseline),
      };
    });
  } finally {
    await set.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Issue 42's goals, on PostgreSQL. */
function targets(r: ReadsResult): Target[] {
  const goal = (name: string, label: string, share: number): Target => {
    const e = r.endpoints.find((x) => x.name === name);
    return {
      name: label,
      goal: `>= ${pct(share)} of the minimal server`,
      value: e ? pct(e.ofMinimal) : 'not measured',
      met: e ? e.ofMinimal >= share : null,
    };
  };
  return [
    goal('bookings_first_page', 'GET /bookings?limit=25', 1),
    goal('booking_by_id', 'GET /bookings/{id}', 0.9),
  ];
}

function render(r: ReadsResult): string {
  const d = r.dataset;
  const baseline = r.options.baseline !== null;
  return [
    `**${r.database === 'postgres' ? 'PostgreSQL' : 'Embedded (PGlite)'}**, ${r.date.slice(0, 16).replace('T', ' ')} UTC, ` +
      `${r.machine.cpus} cores (${r.machine.cpuModel}), load average at the start ${r.machine.loadAverage.join(' / ')}; ` +
      `${int(d.bookings)} bookings (largest organization ${int(d.largestOrganization.bookings)}); ${r.options.connections} connections, ` +
      `${r.options.rounds} round(s) of ${r.options.warmup} s warm-up + ${r.options.duration} s, medians.`,
    '',
    table(
      [
        'Endpoint',
        'API req/s',
        'minimal req/s',
        'API of minimal',
        'CPU µs/request (API / minimal)',
        'p99 ms (API / minimal)',
        ...(baseline ? ['API of baseline'] : []),
      ],
      r.endpoints.map((e) => [
        e.label,
        int(e.servers.api?.perSecond ?? 0),
        int(e.servers.minimal?.perSecond ?? 0),
        pct(e.ofMinimal),
        `${e.servers.api?.cpuUs ?? '-'} / ${e.servers.minimal?.cpuUs ?? '-'}`,
        `${e.servers.api?.p99Ms ?? '-'} / ${e.servers.minimal?.p99Ms ?? '-'}`,
        ...(baseline ? [pct(e.ofBaseline)] : []),
      ]),
    ),
    '',
    targetTable(targets(r)),
    '',
    `![reads](bench/results/reads-${r.database}.svg)`,
  ].join('\n');
}

async function main(): Promise<void> {
  const kinds = args.db === 'both' ? (['postgres', 'pglite'] as const) : [args.db];
  if (!args['skip-build']) {
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  for (const kind of kinds) {
    const database: Database =
      kind === 'postgres'
        ? { kind, url: args['database-url'] }
        : kind === 'pglite'
          ? { kind, dataDir: args['data-dir'] }
          : (() => {
              throw new Error('--db must be postgres, pglite or both');
            })();
    const dataset = await ensureDataset(
      database,
      positive('bookings', args.bookings),
      positive('organizations', args.organizations),
    );
    const endpoints = await measure(database, dataset);
    const result: ReadsResult = {
      database: database.kind,
      date: new Date().toISOString(),
      machine: machine(),
      options: {
        connections: positive('connections', args.connections),
        duration: positive('duration', args.duration),
        warmup: Number(args.warmup),
        rounds: positive('rounds', args.rounds),
        baseline: args.baseline ?? null,
      },
      dataset,
      endpoints,
    };
    process.stdout.write(`${render(result)}\n`);
    if (args['dry-run']) continue;
    await mkdir(RESULTS, { recursive: true });
    log(`saved ${await saveNewest(`reads-${kind}`, result)}`);
    await barChart(
      `reads-${kind}.svg`,
      `Read API as a share of the minimal server (${kind === 'postgres' ? 'PostgreSQL' : 'PGlite'})`,
      endpoints.map((e) => ({
        label: e.label.replace(/&cursor=.*/, ' (deep page)'),
        value: e.ofMinimal * 100,
        text: pct(e.ofMinimal),
        ...(e.name === 'bookings_first_page'
          ? { target: 100 }
          : e.name === 'booking_by_id'
            ? { target: 90 }
            : {}),
      })),
    );
  }
  if (args['dry-run']) return;
  const saved = await Promise.all(
    (['postgres', 'pglite'] as const).map((k) => readNewest<ReadsResult>(`reads-${k}`)),
  );
  await writeSection('## Reads: record', saved.flatMap((r) => (r ? [render(r)] : [])).join('\n\n'));
}

main().catch((error) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});

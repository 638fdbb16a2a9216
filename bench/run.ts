// npm run bench [-- --rounds 3 --duration 3 --baseline ../other ...]   (bench/README.md)
//
// The read API against the minimal server (bench/minimal.ts: the same SQL and views on bare
// node:http and pg) on the same PostgreSQL data set, interleaved: every server loads every
// endpoint once per round, the order turning each round, and the medians of the rounds count.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { migrate } from '../src/db/migrate.js';
import { DATASET_VERSION, type Dataset, generate, openBenchDb, readDataset } from './generate.js';
import {
  type Child,
  call,
  createDatabase,
  freePort,
  type Service,
  service,
  startChild,
  startServe,
} from './lib/proc.js';
import * as r from './lib/report.js';
import { readEndpoints } from './lib/scenario.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    baseline: { type: 'string' },
    connections: { type: 'string', default: '64' },
    bookings: { type: 'string', default: '200000' },
    organizations: { type: 'string', default: '200' },
    endpoints: { type: 'string' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/svc_bench' },
    'skip-build': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
  },
});
const url = args['database-url'];
const options = {
  connections: r.positive('connections', args.connections),
  duration: r.positive('duration', args.duration),
  warmup: Number(args.warmup) || 0,
  rounds: r.positive('rounds', args.rounds),
  baseline: args.baseline ?? null,
};
const SCOPES = [
  'bookings:read',
  'customers:read',
  'drivers:read',
  'vehicles:read',
  'pricing:read',
  'passengers:read',
];
type ServerName = 'api' | 'minimal' | 'baseline';
type Summary = { rounds: number[]; perSecond: number; cpuUs: number; p99Ms: number; failures: number };

interface EndpointResult {
  name: string;
  label: string;
  servers: Partial<Record<ServerName, Summary>>;
  ofMinimal: number;
  ofBaseline: number | null;
}

interface ReadsResult {
  date: string;
  machine: ReturnType<typeof r.machine>;
  options: typeof options;
  dataset: Dataset;
  endpoints: EndpointResult[];
}

interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  connections: number;
  /** Seconds measured. */
  duration: number;
}

interface LoadResult {
  requestsPerSecond: number;
  p99Ms: number;
  requests: number;
  /** Answers other than 2xx, plus connection errors and time-outs: a valid run has none. */
  failures: number;
}

/** One closed-model run: each connection sends its next request when the last is answered. */
async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const r = await autocannon({ ...options, timeout: 10 });
  return {
    requestsPerSecond: Math.round(r.requests.total / r.duration),
    p99Ms: r.latency.p99,
    requests: r.requests.total,
    failures: r.non2xx + r.errors + r.timeouts,
  };
}

/** The data set the database holds, made again when missing or of another size. */
async function ensureDataset(bookings: number, organizations: number): Promise<Dataset> {
  await createDatabase(url, false);
  const db = openBenchDb(url);
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
    r.log(`generating ${r.int(bookings)} bookings`);
    return await generate(db, { bookings, organizations });
  } finally {
    await db.close();
  }
}

/** The servers, started when first used; the API and the baseline share a port, so one stops the other. */
function servers(s: Service, minimalConfig: string) {
  const running = new Map<ServerName, { child: Child; baseUrl: string }>();
  const start = async (name: ServerName) => {
    if (name !== 'minimal') {
      const root = name === 'baseline' ? resolve(args.baseline as string) : r.ROOT;
      return { child: await startServe({ ...s, root }), baseUrl: s.baseUrl };
    }
    const port = await freePort();
    const child = await startChild({
      args: ['--import', 'tsx', 'bench/minimal.ts', minimalConfig, String(port)],
      cwd: r.ROOT,
      env: { PATH: process.env.PATH, NODE_ENV: 'production' },
      ready: (output) => output.includes('ready'),
    });
    return { child, baseUrl: `http://127.0.0.1:${port}/api/v1` };
  };
  return {
    async use(name: ServerName) {
      const other = running.get(name === 'api' ? 'baseline' : 'api');
      if (name !== 'minimal' && other) {
        await other.child.stop();
        running.delete(name === 'api' ? 'baseline' : 'api');
      }
      const server = running.get(name) ?? (await start(name));
      running.set(name, server);
      return server;
    },
    stop: () => Promise.all([...running.values()].map((x) => x.child.stop())),
  };
}

function summary(runs: (LoadResult & { cpuUs: number })[] | undefined): Summary | undefined {
  if (!runs) return undefined;
  const rates = runs.map((x) => x.requestsPerSecond);
  return {
    rounds: rates,
    perSecond: Math.round(r.median(rates)),
    cpuUs: Math.round(r.median(runs.map((x) => x.cpuUs))),
    p99Ms: r.median(runs.map((x) => x.p99Ms)),
    failures: runs.reduce((n, x) => n + x.failures, 0),
  };
}

async function measure(dataset: Dataset): Promise<EndpointResult[]> {
  const s = await service(r.ROOT, { kind: 'postgres', url });
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  const set = servers(s, join(dir, 'minimal.json'));
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
    const only = args.endpoints?.split(',');
    const endpoints = (await readEndpoints(api.baseUrl, key, dataset.largestOrganization.bookings)).filter(
      (e) => !only || only.includes(e.name),
    );
    const identity = await call<unknown>(`${api.baseUrl}/integrations/me`, 'GET', key);
    const config = { databaseUrl: url, organizationId, integrationId: integration.id, identity };
    await writeFile(join(dir, 'minimal.json'), JSON.stringify(config));

    const names: ServerName[] = ['api', 'minimal', ...(args.baseline ? (['baseline'] as const) : [])];
    const runs = new Map<string, (LoadResult & { cpuUs: number })[]>();
    const load = { connections: options.connections, headers: { authorization: `Bearer ${key}` } };
    for (let round = 0; round < options.rounds; round++) {
      // The order turns each round, so that a slow patch of the machine does not fall on one server.
      for (const name of names.map((_, i) => names[(i + round) % names.length] as ServerName)) {
        const server = await set.use(name);
        for (const e of endpoints) {
          const target = `${server.baseUrl}${e.path}`;
          if (options.warmup > 0) await runLoad({ ...load, url: target, duration: options.warmup });
          const before = (await server.child.cpuMs()) ?? 0;
          const x = await runLoad({ ...load, url: target, duration: options.duration });
          const cpuUs = Math.round(
            ((((await server.child.cpuMs()) ?? 0) - before) * 1000) / Math.max(1, x.requests),
          );
          runs.set(`${name} ${e.name}`, [...(runs.get(`${name} ${e.name}`) ?? []), { ...x, cpuUs }]);
          r.log(
            `round ${round + 1} ${name} ${e.label}: ${x.requestsPerSecond} req/s, ${cpuUs} µs CPU/request`,
          );
          if (x.failures > 0) r.log(`  ${x.failures} FAILURES`);
        }
      }
    }
    return endpoints.map((e) => {
      const [api, minimal, baseline] = names.map((n) => summary(runs.get(`${n} ${e.name}`)));
      const share = (other?: Summary) =>
        other ? r.round((api?.perSecond ?? 0) / Math.max(1, other.perSecond), 3) : null;
      return {
        ...e,
        servers: { api, minimal, baseline },
        ofMinimal: share(minimal) ?? 0,
        ofBaseline: share(baseline),
      };
    });
  } finally {
    await set.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Issue 42's goals. */
function targets(result: ReadsResult): r.Target[] {
  const goal = (name: string, label: string, share: number): r.Target => {
    const e = result.endpoints.find((x) => x.name === name);
    const value = e ? r.pct(e.ofMinimal) : 'not measured';
    return {
      name: label,
      goal: `>= ${r.pct(share)} of the minimal server`,
      value,
      met: e ? e.ofMinimal >= share : null,
    };
  };
  return [
    goal('bookings_first_page', 'GET /bookings?limit=25', 1),
    goal('booking_by_id', 'GET /bookings/{id}', 0.9),
  ];
}

function render(x: ReadsResult): string {
  const d = x.dataset;
  const o = x.options;
  const pair = (e: EndpointResult, f: (s: Summary) => number) =>
    `${e.servers.api ? f(e.servers.api) : '-'} / ${e.servers.minimal ? f(e.servers.minimal) : '-'}`;
  return [
    `PostgreSQL, ${x.date.slice(0, 16).replace('T', ' ')} UTC, ${x.machine.cpus} cores (${x.machine.cpuModel}), ` +
      `load average at the start ${x.machine.loadAverage.join(' / ')}; ${r.int(d.bookings)} bookings (largest ` +
      `organization ${r.int(d.largestOrganization.bookings)}); ${o.connections} connections, ${o.rounds} round(s) of ` +
      `${o.warmup} s warm-up + ${o.duration} s, medians. Written by \`npm run bench\`.`,
    '',
    r.table(
      `Endpoint|API req/s|minimal req/s|API of minimal|CPU µs/request (API / minimal)|p99 ms (API / minimal)${
        o.baseline ? '|API of baseline' : ''
      }`,
      x.endpoints.map((e) => [
        e.label,
        r.int(e.servers.api?.perSecond ?? 0),
        r.int(e.servers.minimal?.perSecond ?? 0),
        r.pct(e.ofMinimal),
        pair(e, (s) => s.cpuUs),
        pair(e, (s) => s.p99Ms),
        ...(o.baseline ? [r.pct(e.ofBaseline)] : []),
      ]),
    ),
    '',
    r.targetTable(targets(x)),
    '',
    '![reads](bench/results/reads.svg)',
  ].join('\n');
}

async function main(): Promise<void> {
  r.build(args['skip-build']);
  const dataset = await ensureDataset(
    r.positive('bookings', args.bookings),
    r.positive('organizations', args.organizations),
  );
  const result: ReadsResult = {
    date: new Date().toISOString(),
    machine: r.machine(),
    options,
    dataset,
    endpoints: await measure(dataset),
  };
  process.stdout.write(`${render(result)}\n`);
  if (args['dry-run']) return;
  await mkdir(r.RESULTS, { recursive: true });
  r.log(`saved ${await r.saveNewest('reads', result)}`);
  await r.barChart(
    'reads.svg',
    'Read API as a share of the minimal server (PostgreSQL)',
    result.endpoints.map((e) => ({
      label: e.label,
      value: e.ofMinimal * 100,
      text: r.pct(e.ofMinimal),
      ...(e.name === 'bookings_first_page'
        ? { target: 100 }
        : e.name === 'booking_by_id'
          ? { target: 90 }
          : {}),
    })),
  );
  await r.writeSection('## Reads: record', render(result));
}

r.runMain(main);

// npm run bench [-- --rounds 3 --duration 3 --baseline ../other ...]   (bench/README.md)
//
// The read API against the minimal server (bench/minimal.ts: the same SQL and views on bare
// node:http and pg) on the same PostgreSQL data set, interleaved: every server loads every
// endpoint once per round, the order turning each round, and the medians of the rounds count.
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import { type Dataset, ensureDataset } from './generate.js';
import {
  type Child,
  call,
  createIntegration,
  freePort,
  type Service,
  service,
  startScript,
  startServe,
} from './lib/proc.js';
import * as r from './lib/report.js';
import type { MinimalConfig } from './minimal.js';

const o = r.cli(
  {
    duration: 3,
    warmup: 1,
    rounds: 3,
    baseline: '',
    connections: 64,
    bookings: 200_000,
    organizations: 200,
    databaseUrl: 'postgres://postgres@127.0.0.1:5432/svc_bench',
  },
  { bookings: 20_000, rounds: 1, duration: 1, warmup: 0 },
);
const SCOPES = [
  'bookings:read',
  'customers:read',
  'drivers:read',
  'vehicles:read',
  'pricing:read',
  'passengers:read',
];
/** Issue 42's goals: the API's rate at this share of the minimal server's or more. */
const GOALS: Record<string, number> = { bookings_first_page: 1, booking_by_id: 0.9 };
const PAGE = 25;

type Summary = { rounds: number[]; perSecond: number; cpuUs: number; p99Ms: number; failures: number };
type Endpoint = { name: string; path: string; label: string };
type EndpointResult = Endpoint & {
  servers: { api?: Summary; minimal?: Summary; baseline?: Summary };
  ofMinimal: number;
  ofBaseline: number | null;
};

/**
 * The endpoints loaded, with their inputs (a cursor deep in the list, a booking id from that page)
 * obtained through the API itself: cursors are signed and cannot be made up. The bookings list is
 * walked 100 rows at a time until 2,000 pages of 25 lie behind, or as deep as the organization's
 * list allows while leaving a full page after the cursor.
 */
async function endpoints(baseUrl: string, key: string, listLength: number): Promise<Endpoint[]> {
  const target = Math.min(2000 * PAGE, Math.floor((listLength - PAGE) / 100) * 100);
  let [cursor, rows] = ['', 0];
  type ListPage = { data: { id: string }[]; next_cursor: string | null };
  while (rows < target) {
    const after = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const page = await call<ListPage>(`${baseUrl}/bookings?limit=100${after}`, 'GET', key);
    if (!page.next_cursor) break;
    [cursor, rows] = [page.next_cursor, rows + page.data.length];
  }
  if (!cursor) throw new Error('the bookings list is too short for a deep page');
  const deep = `/bookings?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`;
  const id = (await call<ListPage>(`${baseUrl}${deep}`, 'GET', key)).data[0]?.id;
  if (!id) throw new Error('the deep page is empty');
  return [
    { name: 'identity', path: '/integrations/me', label: 'GET /integrations/me' },
    { name: 'bookings_first_page', path: `/bookings?limit=${PAGE}`, label: `GET /bookings?limit=${PAGE}` },
    {
      name: 'bookings_deep_page',
      path: deep,
      label: `GET /bookings?limit=${PAGE}, ${rows / PAGE} pages deep`,
    },
    { name: 'booking_by_id', path: `/bookings/${id}`, label: 'GET /bookings/{id}' },
    { name: 'customers_first_page', path: '/customers', label: 'GET /customers' },
  ];
}

/** One closed-model run: each connection sends its next request when the last is answered. */
async function load(url: string, key: string, seconds: number, child: Child) {
  const headers = { authorization: `Bearer ${key}` };
  const before = (await child.cpuMs()) ?? 0;
  const x = await autocannon({ url, headers, connections: o.connections, duration: seconds, timeout: 10 });
  const cpuMs = ((await child.cpuMs()) ?? 0) - before;
  return {
    perSecond: Math.round(x.requests.total / x.duration),
    cpuUs: Math.round((cpuMs * 1000) / Math.max(1, x.requests.total)),
    p99Ms: x.latency.p99,
    /** Answers other than 2xx, plus connection errors and time-outs: a valid run has none. */
    failures: x.non2xx + x.errors + x.timeouts,
  };
}

async function measure(dataset: Dataset): Promise<EndpointResult[]> {
  const url = o.databaseUrl;
  const s = await service(url);
  const servers: { name: string; child: Child; baseUrl: string }[] = [];
  try {
    servers.push({ name: 'api', child: await startServe(s), baseUrl: s.baseUrl });
    const organizationId = dataset.largestOrganization.id;
    const { id: integrationId, key } = await createIntegration(s, organizationId, 'bi', SCOPES);
    const list = await endpoints(s.baseUrl, key, dataset.largestOrganization.bookings);
    const identity = await call<unknown>(`${s.baseUrl}/integrations/me`, 'GET', key);
    const port = await freePort();
    const config: MinimalConfig = { databaseUrl: url, organizationId, integrationId, identity, port };
    const minimal = await startScript('minimal.ts', config);
    servers.push({ name: 'minimal', child: minimal, baseUrl: `http://127.0.0.1:${port}/api/v1` });
    if (o.baseline) {
      // Another build on ports of its own, with the same keys and data.
      const other: Service = { ...(await service(url, {}, s)), root: resolve(o.baseline) };
      servers.push({ name: 'baseline', child: await startServe(other), baseUrl: other.baseUrl });
    }
    const runs = new Map<string, Awaited<ReturnType<typeof load>>[]>();
    for (const server of r.turns(servers, o.rounds)) {
      for (const e of list) {
        const target = `${server.baseUrl}${e.path}`;
        if (o.warmup > 0) await load(target, key, o.warmup, server.child);
        const x = await load(target, key, o.duration, server.child);
        runs.set(`${server.name} ${e.name}`, [...(runs.get(`${server.name} ${e.name}`) ?? []), x]);
        r.log(`${server.name} ${e.label}: ${x.perSecond} req/s, ${x.cpuUs} µs CPU/request`);
        if (x.failures > 0) r.log(`  ${x.failures} FAILURES`);
      }
    }
    return list.map((e) => {
      const summary = (name: string): Summary | undefined => {
        const mine = runs.get(`${name} ${e.name}`);
        const failures = mine?.reduce((n, x) => n + x.failures, 0) ?? 0;
        return mine && { rounds: mine.map((x) => x.perSecond), ...r.medians(mine), failures };
      };
      const [api, minimal, baseline] = ['api', 'minimal', 'baseline'].map(summary);
      const share = (other?: Summary) =>
        other ? r.round(api!.perSecond / Math.max(1, other.perSecond), 3) : null;
      return {
        ...e,
        servers: { api, minimal, baseline },
        ofMinimal: share(minimal) ?? 0,
        ofBaseline: share(baseline),
      };
    });
  } finally {
    await Promise.all(servers.map((x) => x.child.stop()));
  }
}

async function main(): Promise<void> {
  const dataset = await ensureDataset(o.databaseUrl, o.bookings, o.organizations);
  const result = {
    date: new Date().toISOString(),
    machine: r.machine(),
    options: o,
    dataset,
    endpoints: await measure(dataset),
  };
  const pair = ({ servers: s }: EndpointResult, f: (s: Summary) => number) =>
    `${s.api ? f(s.api) : '-'} / ${s.minimal ? f(s.minimal) : '-'}`;
  const targets = result.endpoints.flatMap((e): r.Target[] => {
    const goal = GOALS[e.name];
    return goal
      ? [[e.label, `>= ${r.pct(goal)} of the minimal server`, r.pct(e.ofMinimal), e.ofMinimal >= goal]]
      : [];
  });
  const markdown = [
    `PostgreSQL, ${r.conditions(result.date, result.machine, 'npm run bench')} ${r.int(dataset.bookings)} bookings ` +
      `(largest organization ${r.int(dataset.largestOrganization.bookings)}); ${o.connections} connections, ` +
      `${o.rounds} round(s) of ${o.warmup} s warm-up + ${o.duration} s, medians.`,
    '',
    r.table(
      `Endpoint|API req/s|minimal req/s|API of minimal|CPU µs/request (API / minimal)|p99 ms (API / minimal)${
        o.baseline ? '|API of baseline' : ''
      }`,
      result.endpoints.map((e) => [
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
    r.targetTable(targets),
    '',
    '![reads](bench/results/reads.svg)',
  ].join('\n');
  const bars = result.endpoints.map((e) => ({
    label: e.label,
    value: e.ofMinimal * 100,
    text: r.pct(e.ofMinimal),
    target: (GOALS[e.name] ?? 0) * 100,
  }));
  const chart = { file: 'reads.svg', title: 'Read API as a share of the minimal server (PostgreSQL)', bars };
  await r.publish(o, { name: 'reads', heading: '## Reads: record', result, markdown, charts: [chart] });
}

r.runMain(o, main);

// Results: the JSON kept in bench/results, the targets, and BENCHMARKS.md made from the latest
// result of each database.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Dataset } from '../generate.js';
import type { LoadResult } from './load.js';
import type { DeepCursor } from './scenario.js';

export type DatabaseKind = 'postgres' | 'pglite';

/**
 * One server on one endpoint over the rounds: the median round, every round's rate, and the median
 * CPU time the server's process spent per request (user + system, from /proc): unlike the rate, it
 * hardly moves when other work shares the machine.
 */
export type Summary = LoadResult & { rounds?: number[]; cpuUsPerRequest?: number | null };

export interface EndpointResult {
  name: string;
  label: string;
  responseBytes: number;
  api: Summary & { peakRssMb: number | null };
  ceiling: Summary;
  /** The minimal server (bench/minimal.ts); absent from results older than it. */
  minimal?: Summary | null;
  /** The API of another build, when the run was given --baseline. */
  baseline?: Summary | null;
  /** API req/s over ceiling req/s. */
  fractionOfCeiling: number;
  /** API req/s over minimal server req/s. */
  fractionOfMinimal?: number | null;
  /** Minimal server CPU per request over the API's: the share of the minimal server's rate when CPU-bound. */
  cpuShareOfMinimal?: number | null;
  fractionOfBaseline?: number | null;
  /** p99 with requests sent at half the API's maximum rate (open model), API and minimal server. */
  halfLoad?: { rate: number; api: number; minimal: number | null } | null;
}

export interface Target {
  name: string;
  goal: string;
  value: string;
  met: boolean | null;
}

export interface RunResult {
  database: DatabaseKind;
  date: string;
  machine: { cpus: number; cpuModel: string; memoryGb: number; node: string; kernel: string };
  options: {
    connections: number;
    duration: number;
    warmup: number;
    rounds?: number;
    baseline?: string | null;
  };
  dataset: Dataset;
  readApi: boolean;
  deepCursor: Omit<DeepCursor, 'cursor'> | null;
  api: { startupRssMb: number | null; peakRssMb: number | null };
  endpoints: EndpointResult[];
  /** Deep page req/s over first page req/s. */
  deepVsFirst: number | null;
  targets: Target[];
}

export function machine(): RunResult['machine'] {
  const all = cpus();
  return {
    cpus: all.length,
    cpuModel: all[0]?.model.trim() ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    kernel: release(),
  };
}

const pct = (x: number) => `${Math.round(x * 1000) / 10}%`;
const ratio = (a: number, b: number) => (b > 0 ? Math.round((a / b) * 1000) / 1000 : 0);

export function fraction(api: LoadResult, ceiling: LoadResult): number {
  return ratio(api.requestsPerSecond, ceiling.requestsPerSecond);
}

export function deepVsFirst(endpoints: EndpointResult[]): number | null {
  const first = endpoints.find((e) => e.name === 'bookings_first_page');
  const deep = endpoints.find((e) => e.name === 'bookings_deep_page');
  return first && deep ? ratio(deep.api.requestsPerSecond, first.api.requestsPerSecond) : null;
}

/** The goals set for the read API (on PostgreSQL); null where the run did not measure it. */
export function evaluateTargets(r: Omit<RunResult, 'targets'>): Target[] {
  const byName = (name: string) => r.endpoints.find((e) => e.name === name);
  const ofMinimal = (name: string, goal: number, label: string): Target => {
    const share = byName(name)?.fractionOfMinimal;
    const cpu = byName(name)?.cpuShareOfMinimal;
    return {
      name: label,
      goal: `>= ${pct(goal)} of the minimal server`,
      value: share == null ? 'not measured' : `${pct(share)}${cpu == null ? '' : ` (by CPU: ${pct(cpu)})`}`,
      met: share == null ? null : share >= goal,
    };
  };
  const identity = byName('identity');
  const reads = r.endpoints.filter((e) => e.name !== 'identity' && e.halfLoad);
  const worst = reads.length > 0 ? Math.max(...reads.map((e) => e.halfLoad?.api ?? 0)) : null;
  return [
    ofMinimal('bookings_first_page', 1, 'GET /bookings?limit=25'),
    ofMinimal('bookings_deep_page', 1, 'GET /bookings?limit=25, deep page'),
    ofMinimal('booking_by_id', 0.9, 'GET /bookings/{id}'),
    {
      name: 'GET /integrations/me',
      goal: '>= 95% of the baseline build (unchanged within noise)',
      value: identity?.fractionOfBaseline == null ? 'not measured' : pct(identity.fractionOfBaseline),
      met: identity?.fractionOfBaseline == null ? null : identity.fractionOfBaseline >= 0.95,
    },
    {
      name: 'Deep page against the first page',
      goal: '>= 95%',
      value: r.deepVsFirst === null ? 'not measured' : pct(r.deepVsFirst),
      met: r.deepVsFirst === null ? null : r.deepVsFirst >= 0.95,
    },
    {
      name: 'p99 at half the maximum rate (worst read endpoint)',
      goal: '<= 50 ms',
      value: worst === null ? 'not measured' : `${worst} ms`,
      met: worst === null ? null : worst <= 50,
    },
    {
      name: 'API peak RSS',
      goal: '<= 250 MB',
      value: r.api.peakRssMb === null ? 'not measured' : `${r.api.peakRssMb} MB`,
      met: r.api.peakRssMb === null ? null : r.api.peakRssMb <= 250,
    },
  ];
}

export async function saveResult(dir: string, result: RunResult): Promise<string> {
  const file = join(dir, `${result.database}-${result.date.slice(0, 10)}.json`);
  await writeFile(file, `${JSON.stringify(result, null, 2)}\n`);
  return file;
}

/** The newest result of each database in `dir`. */
export async function latestResults(dir: string): Promise<RunResult[]> {
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.json'));
  const latest = new Map<string, RunResult>();
  for (const file of files) {
    const r = JSON.parse(await readFile(join(dir, file), 'utf8')) as RunResult;
    const seen = latest.get(r.database);
    if (!seen || seen.date < r.date) latest.set(r.database, r);
  }
  return ['postgres', 'pglite'].flatMap((d) => latest.get(d) ?? []);
}

const NAMES: Record<DatabaseKind, string> = { postgres: 'PostgreSQL', pglite: 'Embedded (PGlite)' };
const mark = (met: boolean | null) => (met === null ? 'not measured' : met ? 'met' : 'MISSED');
const int = (n: number) => n.toLocaleString('en');

const share = (x: number | null | undefined) => (x == null ? '-' : pct(x));
const rate = (x: Summary | null | undefined) => (x ? int(x.requestsPerSecond) : '-');

export function endpointTable(r: RunResult): string {
  const baseline = r.endpoints.some((e) => e.baseline);
  const rows = r.endpoints.map((e) =>
    [
      e.label,
      rate(e.api),
      ...(baseline ? [rate(e.baseline), share(e.fractionOfBaseline)] : []),
      rate(e.minimal),
      share(e.fractionOfMinimal),
      `${e.api.cpuUsPerRequest ?? '-'} / ${e.minimal?.cpuUsPerRequest ?? '-'}`,
      share(e.cpuShareOfMinimal),
      rate(e.ceiling),
      share(e.fractionOfCeiling),
      `${e.api.latencyMs.p99} / ${e.minimal?.latencyMs.p99 ?? '-'}`,
      e.halfLoad ? int(e.halfLoad.rate) : '-',
      e.halfLoad ? `${e.halfLoad.api} / ${e.halfLoad.minimal ?? '-'}` : '-',
      int(e.responseBytes),
      e.api.failures + (e.minimal?.failures ?? 0),
    ].join(' | '),
  );
  return [
    `| Endpoint | API req/s | ${baseline ? 'baseline req/s | API of baseline | ' : ''}minimal req/s | ` +
      'API of minimal | CPU µs/request (API / minimal) | API of minimal by CPU | ceiling req/s | API of ceiling | p99 ms at 64 conn. (API / minimal) | ' +
      'half load req/s | p99 ms at half load (API / minimal) | body bytes | failures |',
    `|---|---:|${baseline ? '---:|---:|' : ''}---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|`,
    ...rows.map((row) => `| ${row} |`),
  ].join('\n');
}

export function targetTable(r: RunResult): string {
  return [
    '| Target | Goal | Measured | |',
    '|---|---|---|---|',
    ...r.targets.map((t) => `| ${t.name} | ${t.goal} | ${t.value} | ${mark(t.met)} |`),
  ].join('\n');
}

function section(r: RunResult): string {
  const d = r.dataset;
  const deep = r.deepCursor
    ? `Deep cursor: ${int(d.largestOrganization.bookings)} bookings in the organization, cursor after ` +
      `${int(r.deepCursor.rows)} rows (${int(r.deepCursor.pages)} pages of 25), reached in ${r.deepCursor.requests} ` +
      `requests of 100 in ${r.deepCursor.seconds} s.`
    : 'The read API did not answer: only GET /integrations/me was loaded.';
  const goals =
    r.database === 'postgres'
      ? 'Targets (set for PostgreSQL):'
      : 'The targets are set for PostgreSQL; shown here for comparison only:';
  return [
    `## ${NAMES[r.database]}`,
    '',
    `Run ${r.date.slice(0, 16).replace('T', ' ')} UTC on ${r.machine.cpus} cores (${r.machine.cpuModel}), ` +
      `${r.machine.memoryGb} GB, Node ${r.machine.node}, Linux ${r.machine.kernel}. ` +
      `${r.options.connections} connections; ${r.options.rounds ?? 1} round(s) of ${r.options.warmup} s warm-up ` +
      `then ${r.options.duration} s per endpoint and server, medians of the rounds` +
      `${r.options.baseline ? `; baseline: the API built from \`${r.options.baseline}\`` : ''}.`,
    '',
    `Data set: ${int(d.bookings)} bookings over ${int(d.organizations)} organizations ` +
      `(largest: ${int(d.largestOrganization.bookings)}), ${int(d.catalogue.customers)} customers, ` +
      `${int(d.catalogue.drivers)} drivers, ${int(d.catalogue.vehicles)} vehicles; generated in ${d.seconds.total} s. ` +
      deep,
    '',
    endpointTable(r),
    '',
    `API RSS after start: ${r.api.startupRssMb ?? '-'} MB, peak over the run: ${r.api.peakRssMb ?? '-'} MB.`,
    '',
    goals,
    '',
    targetTable(r),
    '',
  ].join('\n');
}

export function renderBenchmarks(results: RunResult[]): string {
  return [
    '# Benchmarks',
    '',
    'Throughput and latency of the read API, measured by `npm run bench` (see bench/README.md for what',
    'it does and how to run it). This file is regenerated by every run from the newest result of each',
    'database in bench/results/, followed by bench/analysis.md; edit that file, not this one.',
    '',
    'Method: the API runs as `node bin/svc.js serve` in a child process; autocannon, in the runner process',
    'on the same machine, keeps 64 connections busy with one request each. Two references are loaded in',
    'the same run, in rounds that alternate with the API (medians of the rounds are shown):',
    '- the **minimal server** (bench/minimal.ts): bare node:http and pg with named statements running the',
    "  project's own SQL and booking view for one fixed organization, then JSON.stringify; no framework,",
    '  authentication, limits, validation or cursor signing. "API of minimal" is what the API keeps of it;',
    '- the **ceiling** (bench/ceiling.ts): a bare node:http server answering with the exact bytes the API',
    '  answered, doing no other work: the most any Node.js server could deliver here.',
    "Latency is also measured at half the API's maximum rate, requests sent at a fixed rate (open model,",
    'one due every 1/rate s, latency from when it was due: bench/lib/load.ts):',
    'at saturation latency is only the queue. Load generator, servers and database share the same cores,',
    'so absolute numbers depend on the machine; the ratios travel better. The key is one of the largest',
    'organization with every read scope (prices and passenger data included); rate limits are lifted',
    '(100,000,000 per window, one-second window) so the limiter works on every request without refusing one.',
    '',
    ...(results.length > 0
      ? results.map(section)
      : ['No results yet: run `npm run bench` on a quiet machine to fill this file.', '']),
  ].join('\n');
}

// Results: the JSON kept in bench/results, the targets, and BENCHMARKS.md made from the latest
// result of each database.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Dataset } from '../generate.js';
import type { LoadResult } from './load.js';
import type { DeepCursor } from './scenario.js';

export type DatabaseKind = 'postgres' | 'pglite';

export interface EndpointResult {
  name: string;
  label: string;
  responseBytes: number;
  api: LoadResult & { peakRssMb: number | null };
  ceiling: LoadResult;
  /** API req/s over ceiling req/s. */
  fractionOfCeiling: number;
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
  options: { connections: number; duration: number; warmup: number };
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
  const share = (name: string, goal: number, label: string): Target => {
    const e = byName(name);
    return {
      name: label,
      goal: `>= ${pct(goal)} of ceiling`,
      value: e ? pct(e.fractionOfCeiling) : 'not measured',
      met: e ? e.fractionOfCeiling >= goal : null,
    };
  };
  const reads = r.endpoints.filter((e) => e.name !== 'identity');
  const worstP99 = reads.length > 0 ? Math.max(...reads.map((e) => e.api.latencyMs.p99)) : null;
  return [
    share('booking_by_id', 0.35, 'GET /bookings/{id}'),
    share('bookings_first_page', 0.25, 'GET /bookings first page of 25'),
    {
      name: `Deep page (${r.deepCursor?.pages.toLocaleString('en') ?? '-'} pages in)`,
      goal: '>= 95% of first page',
      value: r.deepVsFirst === null ? 'not measured' : pct(r.deepVsFirst),
      met: r.deepVsFirst === null ? null : r.deepVsFirst >= 0.95,
    },
    {
      name: `p99 latency at ${r.options.connections} connections (worst read endpoint)`,
      goal: '<= 50 ms',
      value: worstP99 === null ? 'not measured' : `${worstP99} ms`,
      met: worstP99 === null ? null : worstP99 <= 50,
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

export function endpointTable(r: RunResult): string {
  const rows = r.endpoints.map(
    (e) =>
      `| ${e.label} | ${int(e.api.requestsPerSecond)} | ${e.api.latencyMs.p50} | ${e.api.latencyMs.p99} | ` +
      `${e.api.peakRssMb ?? '-'} | ${int(e.ceiling.requestsPerSecond)} | ${pct(e.fractionOfCeiling)} | ` +
      `${int(e.responseBytes)} | ${e.api.failures} |`,
  );
  return [
    '| Endpoint | req/s | p50 ms | p99 ms | API peak RSS MB | ceiling req/s | of ceiling | body bytes | failures |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
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
      `${r.options.connections} connections, ${r.options.warmup} s warm-up then ${r.options.duration} s per endpoint.`,
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
    'on the same machine, keeps a fixed number of connections busy with one request each. The ceiling is',
    'a bare node:http server answering the same requests with the exact bytes the API answered (headers',
    'and body captured from a real response) and no other work, loaded the same way on the same machine:',
    'it is the most any Node.js server could deliver here, so "of ceiling" is the share of that budget',
    'the API keeps after authentication, rate limiting, the query and serialization. Load generator, API',
    'and database share the same cores, so absolute numbers depend on the machine; the ratios travel better.',
    'The key is one of the largest organization with every read scope (prices and passenger data included);',
    'rate limits are lifted (100,000,000 per window, one-second window) so the limiter works on every',
    'request without ever refusing one.',
    '',
    ...(results.length > 0
      ? results.map(section)
      : ['No results yet: run `npm run bench` on a quiet machine to fill this file.', '']),
  ].join('\n');
}

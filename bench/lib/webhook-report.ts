// Results of the webhook delivery benchmark: the JSON kept in bench/results, the targets, the
// tables, and the "Webhook delivery" section of BENCHMARKS.md.
//
// The JSON deliberately has no top-level `database` field: bench/lib/report.ts#latestResults reads
// every JSON file of bench/results and keys the read API's results by that field.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export type DbKind = 'postgres' | 'pglite';

/** null: beyond the wait (a delivery that had not arrived when the phase stopped waiting). */
export interface Percentiles {
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
}

export interface CpuShare {
  /** CPU ms per delivery, by process (over the burst, feed writes included). */
  serve: number | null;
  workers: number | null;
  postgres: number | null;
}

export interface BurstResult {
  events: number;
  expected: number;
  delivered: number;
  duplicates: number;
  /** TLS handshakes the receiver completed during the burst: connections the senders opened. */
  newTlsConnections: number;
  feedFailures: number;
  feedSeconds: number;
  feedEventsPerSecond: number;
  /** From the first arrival to the last. */
  firstToLastSeconds: number;
  deliveriesPerSecond: number;
  /** Arrivals after the last feed write answered, over the time from then to the last arrival. */
  afterFeed: { deliveries: number; seconds: number; deliveriesPerSecond: number } | null;
  cpuMsPerDelivery: CpuShare;
  /** PostgreSQL transactions committed in the service's database per delivery (autocommit statements count one each). */
  xactsPerDelivery: number | null;
  /** The same over the drain only (after the last feed write answered), per delivery arrived then. */
  drain: { cpuMsPerDelivery: CpuShare; xactsPerDelivery: number | null } | null;
  complete: boolean;
}

export interface LatencyResult {
  targetEventsPerSecond: number;
  seconds: number;
  events: number;
  achievedEventsPerSecond: number;
  expected: number;
  delivered: number;
  feedFailures: number;
  /** arrival - the moment the feed's PUT answered (the commit happened before: a lower bound). */
  fromCommitMs: Percentiles;
  /** arrival - the moment the PUT was sent (an upper bound of commit to arrival). */
  fromSendMs: Percentiles;
  /** arrival (wall clock) - the booking's created_at (now() of the feed's transaction: before the commit). */
  fromTxStartMs: Percentiles;
  /** the event's published stamp (created_at, database clock) - PUT answered, ms. */
  commitToPublishMs: Percentiles;
  /** arrival (wall clock) - the event's published stamp. */
  publishToArrivalMs: Percentiles;
  feedAnswerMs: Percentiles;
  complete: boolean;
}

export interface ConfigurationResult {
  name: string;
  label: string;
  /** `svc worker` processes beside `svc serve`. */
  workerProcesses: number;
  /** Delivery workers in all: the one inside serve plus the worker processes. */
  deliveryWorkers: number;
  /** Most attempts in flight at once: min(workers x SVC_WEBHOOK_CONCURRENCY, webhooks x per-webhook limit). */
  inFlightLimit: number;
  latency: LatencyResult;
  /** The same at a rate the service sustains, for reference (no target). */
  lowRateLatency: LatencyResult | null;
  burst: BurstResult;
  /** The ceiling measured right after this configuration's burst, at its in-flight limit. */
  ceiling: CeilingResult;
  /** Burst deliveries/s over the ceiling's requests/s. */
  ofCeiling: number;
  /** Deliveries/s after the feed ended over the ceiling's requests/s. */
  afterFeedOfCeiling: number | null;
}

export interface CeilingResult {
  concurrency: number;
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  latencyMs: { p50: number; p99: number };
  failures: number;
  bodies: number;
  bodyBytes: number;
}

export interface Target {
  name: string;
  goal: string;
  value: string;
  met: boolean | null;
}

export interface WebhookRunResult {
  benchmark: 'webhook-delivery';
  db: DbKind;
  date: string;
  machine: { cpus: number; cpuModel: string; memoryGb: number; node: string; kernel: string };
  loadAverage: { start: number[]; end: number[] };
  settings: {
    webhooks: number;
    scopes: string[];
    feedConcurrency: number;
    burstEvents: number;
    latencyEventsPerSecond: number;
    latencySeconds: number;
    /** How long a phase waits for its deliveries after its last feed write answered. */
    waitMs: number;
    lowEventsPerSecond: number;
    lowSeconds: number;
    workerConcurrency: number;
    concurrencyPerWebhook: number;
    webhookTimeoutMs: number;
  };
  configurations: ConfigurationResult[];
  /** Configurations not run because the run's time budget was spent. */
  skipped: string[];
  targets: Target[];
}

const pct = (x: number) => `${Math.round(x * 1000) / 10}%`;
const int = (n: number) => Math.round(n).toLocaleString('en');
let waitLabel = 'the wait';
const ms = (n: number | null) =>
  n === null ? `> ${waitLabel}` : n >= 100 ? String(Math.round(n)) : String(Math.round(n * 10) / 10);
const num = (n: number | null, digits = 2) =>
  n === null ? '-' : String(Math.round(n * 10 ** digits) / 10 ** digits);
const mark = (met: boolean | null) => (met === null ? 'not measured' : met ? 'met' : 'MISSED');

/** `missing` values never arrived: they count as larger than every measured one. */
export function percentiles(values: number[], missing = 0): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length + missing;
  const at = (p: number) => {
    const i = Math.min(n - 1, Math.floor(p * n));
    return i < sorted.length ? Math.round((sorted[i] as number) * 10) / 10 : null;
  };
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
}

export const RATIO_GOAL = 0.5;
export const P50_GOAL_MS = 50;
export const P99_GOAL_MS = 250;

export function evaluateTargets(configurations: ConfigurationResult[]): Target[] {
  return configurations.flatMap((c) => [
    {
      name: `${c.label}: deliveries/s`,
      goal: `>= ${pct(RATIO_GOAL)} of ceiling`,
      value: pct(c.ofCeiling),
      met: c.burst.complete ? c.ofCeiling >= RATIO_GOAL : false,
    },
    {
      name: `${c.label}: p50 commit to arrival at ${c.latency.targetEventsPerSecond} events/s`,
      goal: `<= ${P50_GOAL_MS} ms`,
      value: `${ms(c.latency.fromCommitMs.p50)} ms`,
      met: c.latency.fromCommitMs.p50 !== null && c.latency.fromCommitMs.p50 <= P50_GOAL_MS,
    },
    {
      name: `${c.label}: p99 commit to arrival at ${c.latency.targetEventsPerSecond} events/s`,
      goal: `<= ${P99_GOAL_MS} ms`,
      value: `${ms(c.latency.fromCommitMs.p99)} ms`,
      met: c.latency.fromCommitMs.p99 !== null && c.latency.fromCommitMs.p99 <= P99_GOAL_MS,
    },
  ]);
}

export async function saveWebhookResult(dir: string, r: WebhookRunResult): Promise<string> {
  const file = join(dir, `webhooks-${r.db}-${r.date.slice(0, 10)}.json`);
  await writeFile(file, `${JSON.stringify(r, null, 2)}\n`);
  return file;
}

const NAMES: Record<DbKind, string> = { postgres: 'PostgreSQL', pglite: 'Embedded (PGlite)' };

export function renderRun(r: WebhookRunResult): string {
  const s = r.settings;
  waitLabel = `${Math.round(s.waitMs / 1000)} s`;
  const when = `${r.date.slice(0, 16).replace('T', ' ')} UTC`;
  const m = r.machine;
  const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(' / ');
  const throughput = r.configurations.map((c) => {
    const b = c.burst;
    const after = b.afterFeed;
    return (
      `| ${c.label} | ${c.inFlightLimit} | ${int(b.events)} | ${int(b.delivered)}${b.complete ? '' : ` of ${int(b.expected)}`} | ` +
      `${int(b.feedEventsPerSecond)} | **${int(b.deliveriesPerSecond)}** | **${pct(c.ofCeiling)}** | ` +
      `${after ? `${int(after.deliveriesPerSecond)} (${int(after.deliveries)} in ${after.seconds} s)` : '-'} | ` +
      `${c.afterFeedOfCeiling === null ? '-' : pct(c.afterFeedOfCeiling)} | ${int(c.ceiling.requestsPerSecond)} | ` +
      `${b.newTlsConnections} | ${b.duplicates} |`
    );
  });
  const cpu = (x: CpuShare) => `${num(x.serve)} / ${num(x.workers)} / ${num(x.postgres)}`;
  const cost = r.configurations.map((c) => {
    const b = c.burst;
    return (
      `| ${c.label} | ${cpu(b.cpuMsPerDelivery)} | ${num(b.xactsPerDelivery, 1)} | ` +
      `${b.drain ? cpu(b.drain.cpuMsPerDelivery) : '-'} | ${b.drain ? num(b.drain.xactsPerDelivery, 1) : '-'} |`
    );
  });
  const latencyRow = (c: ConfigurationResult, l: LatencyResult) =>
    `| ${c.label} | ${l.targetEventsPerSecond} (${l.achievedEventsPerSecond} sent) | ` +
    `${int(l.delivered)}${l.complete ? '' : ` of ${int(l.expected)}`} | ` +
    `**${ms(l.fromCommitMs.p50)}** | ${ms(l.fromCommitMs.p90)} | **${ms(l.fromCommitMs.p99)}** | ${ms(l.fromCommitMs.max)} | ` +
    `${ms(l.fromTxStartMs.p50)} / ${ms(l.fromTxStartMs.p99)} | ${ms(l.fromSendMs.p50)} / ${ms(l.fromSendMs.p99)} | ` +
    `${ms(l.commitToPublishMs.p50)} / ${ms(l.commitToPublishMs.p99)} | ` +
    `${ms(l.publishToArrivalMs.p50)} / ${ms(l.publishToArrivalMs.p99)} | ${ms(l.feedAnswerMs.p50)} / ${ms(l.feedAnswerMs.p99)} |`;
  const latency = r.configurations.flatMap((c) => [
    latencyRow(c, c.latency),
    ...(c.lowRateLatency ? [latencyRow(c, c.lowRateLatency)] : []),
  ]);
  const ceilings = r.configurations.map(
    ({ label, ceiling: c }) =>
      `| after ${label} | ${c.concurrency} | ${int(c.requestsPerSecond)} | ${ms(c.latencyMs.p50)} | ${ms(c.latencyMs.p99)} | ` +
      `${int(c.bodies)} bodies of ${int(c.bodyBytes)} B (mean) | ${c.failures} |`,
  );
  const targets = r.targets.map((t) => `| ${t.name} | ${t.goal} | ${t.value} | ${mark(t.met)} |`);
  return [
    `### ${NAMES[r.db]}`,
    '',
    `Run ${when} on ${m.cpus} cores (${m.cpuModel}), ${m.memoryGb} GB, Node ${m.node}. Load average ` +
      `(1/5/15 min) ${load(r.loadAverage.start)} at the start, ${load(r.loadAverage.end)} at the end. ` +
      `${s.webhooks} webhooks (all events) of one integration, scopes ${s.scopes.join(', ')}; ` +
      `SVC_WEBHOOK_CONCURRENCY=${s.workerConcurrency}, SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK=${s.concurrencyPerWebhook}, ` +
      `SVC_WEBHOOK_TIMEOUT_MS=${s.webhookTimeoutMs}. Burst: ${int(s.burstEvents)} booking creations through the feed, ` +
      `${s.feedConcurrency} PUTs in flight; latency: one PUT every ${Math.round(1000 / s.latencyEventsPerSecond)} ms ` +
      `(open model) for ${s.latencySeconds} s.`,
    '',
    'Throughput (burst; "of ceiling" against the ceiling at the same in-flight limit):',
    '',
    '| Configuration | in flight max | events | deliveries | feed events/s | deliveries/s, first to last arrival | of ceiling | after the feed ended: deliveries/s (n) | of ceiling | ceiling req/s | new TLS connections | duplicates |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...throughput,
    '',
    'Cost per delivery: CPU ms of serve / svc workers / PostgreSQL backends, and PostgreSQL transactions, over the whole burst (feed writes included) and over the drain after the feed ended:',
    '',
    '| Configuration | CPU ms, whole burst | xacts, whole burst | CPU ms, drain | xacts, drain |',
    '|---|---:|---:|---:|---:|',
    ...cost,
    '',
    `Commit to arrival, ms ("p50 ... max": arrival minus the feed PUT's answer, a lower bound; ` +
      '"from tx start": arrival minus the booking\'s created_at, i.e. now() of the feed transaction, an upper bound; ' +
      `"answer to publish" is negative when the PUT's answer reached the client after the event was already published). ` +
      `The target rate is ${s.latencyEventsPerSecond} events/s (${s.latencyEventsPerSecond * s.webhooks} deliveries/s) for ${s.latencySeconds} s` +
      (s.lowEventsPerSecond > 0
        ? `; ${s.lowEventsPerSecond} events/s for ${s.lowSeconds} s is shown for reference.`
        : '.'),
    '',
    '| Configuration | events/s | deliveries | p50 | p90 | p99 | max | from tx start p50 / p99 | from send p50 / p99 | answer to publish p50 / p99 | publish to arrival p50 / p99 | feed PUT p50 / p99 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...latency,
    '',
    "Ceiling (plain undici Pool in its own process, the burst's delivered requests, same receiver, measured right after each burst with the service idle):",
    '',
    '| Measured | concurrency | req/s | p50 ms | p99 ms | bodies | failures |',
    '|---|---:|---:|---:|---:|---|---:|',
    ...ceilings,
    '',
    r.db === 'postgres' ? 'Targets:' : 'The targets are set for PostgreSQL; shown here for comparison only:',
    '',
    '| Target | Goal | Measured | |',
    '|---|---|---|---|',
    ...targets,
    ...(r.skipped.length > 0 ? ['', `Not run (time budget spent): ${r.skipped.join(', ')}.`] : []),
  ].join('\n');
}

const METHOD = `## Webhook delivery

Measured by \`npm run bench:webhooks\` (bench/webhooks.ts; see bench/README.md). This section is
rewritten by that command from the newest \`bench/results/webhooks-<db>-<date>.json\` of each
database, followed by bench/webhooks-analysis.md.

Method: \`node bin/svc.js serve\` (APIs and the embedded delivery worker) and, on PostgreSQL, 1 or 2
\`node bin/svc.js worker\` processes beside it, all built from dist, on a fresh database. An HTTPS
receiver (keep-alive, test CA's localhost certificate, 200 as soon as the body is in) runs in the
benchmark process and records each arrival. Booking creations go through the platform feed
(\`PUT /operator/v1/organizations/{org}/bookings/{id}\`); each is one event, fanned out to every
webhook. **deliveries/s** counts first attempts from the first arrival to the last of a burst;
**of ceiling** divides it by what a plain undici \`Pool\` in its own process achieves POSTing the
same captured requests (headers and bodies) to the same receiver at the engine's in-flight limit.
**Commit to arrival** is the arrival time minus the moment the feed's PUT answered: the commit
happened before the answer, so this is a lower bound of the true figure by the time the answer took
to reach the client; "from send" (arrival minus the moment the PUT was sent) is an upper bound.
"Commit to publish" compares the event's stamp (\`created_at\`, set by the publisher, database clock)
with the moment the PUT answered (same machine, millisecond clocks). CPU ms per delivery is read
from /proc over the burst (feed writes included; PostgreSQL counts only the backends connected to
the benchmark database). Everything shares 2 cores with other work: read the load average.
`;

/** The newest result of each database among the webhook results in `dir`. */
export async function latestWebhookResults(dir: string, files: string[]): Promise<WebhookRunResult[]> {
  const latest = new Map<DbKind, WebhookRunResult>();
  for (const file of files.filter((f) => /^webhooks-.*\.json$/.test(f))) {
    const r = JSON.parse(await readFile(join(dir, file), 'utf8')) as WebhookRunResult;
    if (r.benchmark !== 'webhook-delivery') continue;
    const seen = latest.get(r.db);
    if (!seen || seen.date < r.date) latest.set(r.db, r);
  }
  return (['postgres', 'pglite'] as const).flatMap((d) => latest.get(d) ?? []);
}

export function renderSection(results: WebhookRunResult[], analysis: string): string {
  return [METHOD, ...results.map(renderRun), analysis.trim()].filter(Boolean).join('\n\n');
}

/** Where the "## Webhook delivery" section of BENCHMARKS.md lies (up to the next "## "), if it is there. */
function sectionBounds(markdown: string): { start: number; end: number } | null {
  const heading = '## Webhook delivery';
  const start = markdown.search(/^## Webhook delivery\s*$/m);
  if (start < 0) return null;
  const next = markdown.slice(start + heading.length).search(/^## /m);
  return { start, end: next < 0 ? markdown.length : start + heading.length + next };
}

/** The "## Webhook delivery" section of BENCHMARKS.md, for a writer of the rest of the file to keep. */
export function sectionOf(markdown: string): string | null {
  const bounds = sectionBounds(markdown);
  return bounds ? markdown.slice(bounds.start, bounds.end) : null;
}

/** Replaces the "## Webhook delivery" section of BENCHMARKS.md, or appends it. */
export function withSection(markdown: string, section: string): string {
  const bounds = sectionBounds(markdown);
  if (!bounds) return `${markdown.replace(/\s*$/, '')}\n\n${section.trim()}\n`;
  const after = markdown.slice(bounds.end);
  return `${markdown.slice(0, bounds.start)}${section.trim()}\n${after ? `\n${after}` : ''}`;
}

// Results of the webhook delivery benchmark: the JSON kept in bench/results, the targets, the
// tables, and the "Webhook delivery" section of BENCHMARKS.md.
//
// The JSON deliberately has no top-level `database` field: bench/lib/report.ts#latestResults reads
// every JSON file of bench/results and keys the read API's results by that field.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { median } from './load.js';

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
  /** PostgreSQL transactions per delivery over the phase (feed writes included); null when not counted. */
  xactsPerDelivery?: number | null;
  /** CPU ms per delivery from the phase's first write to its last arrival (feed writes included). */
  cpuMsPerDelivery?: CpuShare;
  complete: boolean;
}

/** Events queued while nothing delivered, then the delivering processes started. */
export interface DrainResult {
  events: number;
  expected: number;
  delivered: number;
  duplicates: number;
  feedFailures: number;
  /** How long queuing the events took (the feed alone). */
  queueSeconds: number;
  /** From starting the delivering processes to the first arrival (process start-up). */
  startToFirstSeconds: number;
  firstToLastSeconds: number;
  /** Arrivals from the first to the last, over that time. */
  deliveriesPerSecond: number;
  /** CPU ms per delivery from the first arrival to the last. */
  cpuMsPerDelivery: CpuShare;
  /** Transactions from the delivering processes' start to their stop, per delivery. */
  xactsPerDelivery: number | null;
  complete: boolean;
}

/** The drain to receivers that answer slowly: the attempts in flight set its pace. */
export interface SlowDrainResult extends DrainResult {
  webhooks: number;
  /** How long the receiver took to answer each delivery. */
  answerMs: number;
  /** min(processes delivering x SVC_WEBHOOK_CONCURRENCY, webhooks x per-webhook bound). */
  inFlightLimit: number;
  /** What that bound allows: inFlightLimit deliveries every answerMs. */
  boundPerSecond: number;
}

export interface ConfigurationResult {
  /** The graphile-worker + undici reference, or the engine (absent in runs before the reference). */
  kind?: 'reference' | 'engine';
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
  drain?: DrainResult | null;
  /** The engine on PostgreSQL (absent in runs before it). */
  slowDrain?: SlowDrainResult | null;
  /** The ceiling measured right after this configuration's burst, at its in-flight limit. */
  ceiling: CeilingResult;
  /** Burst deliveries/s over the ceiling's requests/s. */
  ofCeiling: number;
  /** Deliveries/s after the feed ended over the ceiling's requests/s. */
  afterFeedOfCeiling: number | null;
  /** With several rounds: what each gave of the headline figures (the rest are their medians). */
  rounds?: RoundFigures[];
}

export interface RoundFigures {
  drain: number | null;
  burst: number;
  /** p99 commit to arrival and feed write at the latency phase's rate, ms. */
  p99: number | null;
  feedP99: number | null;
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
  /** PostgreSQL's autovacuum setting during the run (the bench vacuums between phases either way). */
  autovacuum?: string;
  settings: {
    webhooks: number;
    scopes: string[];
    feedConcurrency: number;
    burstEvents: number;
    drainEvents?: number;
    latencyEventsPerSecond: number;
    latencySeconds: number;
    /** How long a phase waits for its deliveries after its last feed write answered. */
    waitMs: number;
    lowEventsPerSecond: number;
    lowSeconds: number;
    settleSeconds?: number;
    quick?: boolean;
    /** Rounds of every configuration; each figure is the median of its rounds. */
    rounds?: number;
    workerConcurrency: number;
    concurrencyPerWebhook: number;
    webhookTimeoutMs: number;
    reference?: {
      graphileWorker: string;
      schema: string;
      concurrency: number;
      localQueueSize: number;
      completeJobBatchDelayMs: number;
    };
  };
  /** The graphile-worker + undici reference (PostgreSQL only; null when not run). */
  reference?: ConfigurationResult | null;
  /** The reference in more than one process (kind 'reference'), then the engine's configurations. */
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

/** The targets of the delivery engine (issue 15), against the reference in the same run. */
export const DRAIN_GOAL = 1;
export const P99_GOAL_MS = 50;
export const FEED_P99_GOAL_MS = 50;
export const XACTS_GOAL = 0.5;

/** x as a share of the reference's y; null when either is missing. */
export const shareOf = (x: number | null | undefined, y: number | null | undefined) =>
  x === null || x === undefined || !y ? null : Math.round((x / y) * 1000) / 1000;

/**
 * The drain of `c` as a share of the reference's, round by round (each configuration runs right
 * after the reference within a round, so a pair shares the machine's pace of that moment); null
 * unless both have the same rounds, more than one, each with a drain.
 */
export function roundShares(c: ConfigurationResult, reference: ConfigurationResult | null): number[] | null {
  const [mine, ref] = [c.rounds ?? [], reference?.rounds ?? []];
  if (mine.length < 2 || mine.length !== ref.length) return null;
  const shares = mine.map((r, i) => shareOf(r.drain, ref[i]?.drain));
  return shares.every((x): x is number => x !== null) ? shares : null;
}

/** The worse of a configuration's transactions per delivery over the burst and the drain. */
export function worstXacts(c: ConfigurationResult): number | null {
  const values = [c.burst.xactsPerDelivery, c.drain?.xactsPerDelivery].filter(
    (x): x is number => typeof x === 'number',
  );
  return values.length === 0 ? null : Math.max(...values);
}

export function evaluateTargets(
  db: DbKind,
  reference: ConfigurationResult | null,
  configurations: ConfigurationResult[],
): Target[] {
  const targets: Target[] = [];
  const byName = (name: string) => configurations.find((c) => c.name === name);
  const refDrain = reference?.drain?.deliveriesPerSecond ?? null;
  for (const name of ['embedded', 'workers-1']) {
    const c = byName(name);
    if (!c) continue;
    const ofMedians = shareOf(c.drain?.deliveriesPerSecond, refDrain);
    const figures = `${int(c.drain?.deliveriesPerSecond ?? 0)} of ${int(refDrain ?? 0)}/s`;
    // With rounds, the share is taken within each round and the median of those shares decides:
    // the machine's pace moves between rounds, and the medians of each side may come from rounds
    // of different paces.
    const shares = reference ? roundShares(c, reference) : null;
    const share = shares ? median(shares) : ofMedians;
    targets.push({
      name: `${c.label}: drain deliveries/s`,
      goal: `>= ${pct(DRAIN_GOAL)} of the reference`,
      value:
        share === null
          ? `${int(c.drain?.deliveriesPerSecond ?? 0)}/s, no reference`
          : shares
            ? `${pct(share)}, the median of the rounds' shares (${shares.map(pct).join(' / ')}); the medians' ratio ${pct(ofMedians ?? 0)} (${figures})`
            : `${pct(share)} (${figures})`,
      met: share === null ? null : c.drain?.complete ? share >= DRAIN_GOAL : false,
    });
  }
  const embedded = byName('embedded');
  if (embedded) {
    const l = embedded.latency;
    targets.push(
      {
        name: `${embedded.label}: p99 commit to arrival at ${l.targetEventsPerSecond} events/s`,
        goal: `<= ${P99_GOAL_MS} ms`,
        value: l.fromCommitMs.p99 === null ? 'beyond the wait' : `${ms(l.fromCommitMs.p99)} ms`,
        met: l.fromCommitMs.p99 !== null && l.fromCommitMs.p99 <= P99_GOAL_MS,
      },
      {
        name: `${embedded.label}: feed PUT p99 at ${l.targetEventsPerSecond} events/s`,
        goal: `<= ${FEED_P99_GOAL_MS} ms`,
        value: `${ms(l.feedAnswerMs.p99)} ms`,
        met: l.feedAnswerMs.p99 !== null && l.feedAnswerMs.p99 <= FEED_P99_GOAL_MS,
      },
    );
  }
  for (const c of configurations) {
    if (c.kind === 'reference') continue;
    const worst = worstXacts(c);
    targets.push({
      name: `${c.label}: PostgreSQL transactions per delivery (worse of burst and drain)`,
      goal: `<= ${XACTS_GOAL}`,
      value: worst === null ? 'not counted' : String(worst),
      met: db === 'postgres' && worst !== null ? worst <= XACTS_GOAL : null,
    });
  }
  const one = byName('workers-1');
  const two = byName('workers-2');
  /** Burst and drain deliveries/s of `a`, then of `b`. */
  const scaling = (a: ConfigurationResult, b: ConfigurationResult) =>
    `burst ${int(a.burst.deliveriesPerSecond)} -> ${int(b.burst.deliveriesPerSecond)}/s` +
    (a.drain && b.drain
      ? `, drain ${int(a.drain.deliveriesPerSecond)} -> ${int(b.drain.deliveriesPerSecond)}/s`
      : '');
  // What a second process gives the reference on the same machine, for comparison.
  const refTwo = byName('reference-2');
  const refScaling =
    reference && refTwo ? `; the reference, 1 -> 2 processes: ${scaling(reference, refTwo)}` : '';
  if (one && two) {
    const burstUp = two.burst.deliveriesPerSecond > one.burst.deliveriesPerSecond;
    const drainUp =
      two.drain && one.drain ? two.drain.deliveriesPerSecond > one.drain.deliveriesPerSecond : null;
    targets.push({
      name: 'A second svc worker adds throughput (burst and drain)',
      goal: '2 workers > 1 worker',
      value: scaling(one, two) + refScaling,
      met: drainUp === null ? burstUp : burstUp && drainUp,
    });
    if (one.slowDrain && two.slowDrain) {
      const [a, b] = [one.slowDrain, two.slowDrain];
      targets.push({
        name: `A second svc worker adds throughput to slow receivers (${a.webhooks} webhooks answering in ${a.answerMs} ms)`,
        goal: '2 workers > 1 worker',
        value: `slow drain ${int(a.deliveriesPerSecond)} -> ${int(b.deliveriesPerSecond)}/s (bound ${int(a.boundPerSecond)} -> ${int(b.boundPerSecond)}/s)`,
        met: a.complete && b.complete && b.deliveriesPerSecond > a.deliveriesPerSecond,
      });
    }
  }
  return targets;
}

export async function saveWebhookResult(dir: string, r: WebhookRunResult): Promise<string> {
  const file = join(dir, `webhooks-${r.db}-${r.date.slice(0, 10)}.json`);
  await writeFile(file, `${JSON.stringify(r, null, 2)}\n`);
  return file;
}

const NAMES: Record<DbKind, string> = { postgres: 'PostgreSQL', pglite: 'Embedded (PGlite)' };

/** Every configuration of a run, the reference first. */
const all = (r: WebhookRunResult) => [...(r.reference ? [r.reference] : []), ...r.configurations];
const sharePct = (x: number | null) => (x === null ? '-' : pct(x));
const xacts = (x: number | null | undefined) => (x === null || x === undefined ? '-' : num(x, 2));

/**
 * One run's tables. `reference`: the reference the shares are taken of (the run's own; for PGlite,
 * PostgreSQL's newest, since PGlite cannot host graphile-worker).
 */
export function renderRun(
  r: WebhookRunResult,
  reference: ConfigurationResult | null = r.reference ?? null,
): string {
  const s = r.settings;
  waitLabel = `${Math.round(s.waitMs / 1000)} s`;
  const when = `${r.date.slice(0, 16).replace('T', ' ')} UTC`;
  const m = r.machine;
  const load = (l: number[]) => l.map((x) => x.toFixed(1)).join(' / ');
  const configs = all(r);
  const refNote = reference && !r.reference ? ' (PostgreSQL reference)' : '';
  const against = configs.map((c) => {
    const l = c.latency;
    return (
      `| ${c.label} | **${int(c.drain?.deliveriesPerSecond ?? 0)}** | **${sharePct(shareOf(c.drain?.deliveriesPerSecond, reference?.drain?.deliveriesPerSecond))}** | ` +
      `${int(c.burst.deliveriesPerSecond)} | ${sharePct(shareOf(c.burst.deliveriesPerSecond, reference?.burst.deliveriesPerSecond))} | ` +
      `${ms(l.fromCommitMs.p50)} / **${ms(l.fromCommitMs.p99)}** | **${ms(l.feedAnswerMs.p99)}** | ` +
      `${xacts(c.burst.xactsPerDelivery)} / ${xacts(c.drain?.xactsPerDelivery)} / ${xacts(l.xactsPerDelivery)} |`
    );
  });
  const throughput = configs.map((c) => {
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
  const drains = configs.flatMap((c) => {
    const d = c.drain;
    if (!d) return [];
    return [
      `| ${c.label} | ${int(d.events)} | ${int(d.delivered)}${d.complete ? '' : ` of ${int(d.expected)}`} | ${d.queueSeconds} | ` +
        `${d.startToFirstSeconds} | ${d.firstToLastSeconds} | **${int(d.deliveriesPerSecond)}** | ` +
        `${cpu(d.cpuMsPerDelivery)} | ${xacts(d.xactsPerDelivery)} | ${d.duplicates} |`,
    ];
  });
  const slowDrains = configs.flatMap((c) => {
    const d = c.slowDrain;
    if (!d) return [];
    return [
      `| ${c.label} | ${c.deliveryWorkers} | ${d.inFlightLimit} | ${int(d.delivered)}${d.complete ? '' : ` of ${int(d.expected)}`} | ` +
        `${d.firstToLastSeconds} | **${int(d.deliveriesPerSecond)}** | ${int(d.boundPerSecond)} | ` +
        `**${pct(d.deliveriesPerSecond / d.boundPerSecond)}** | ${cpu(d.cpuMsPerDelivery)} | ${xacts(d.xactsPerDelivery)} | ${d.duplicates} |`,
    ];
  });
  const slow = configs.find((c) => c.slowDrain)?.slowDrain;
  const cost = configs.map((c) => {
    const b = c.burst;
    return (
      `| ${c.label} | ${cpu(b.cpuMsPerDelivery)} | ${xacts(b.xactsPerDelivery)} | ` +
      `${b.drain ? cpu(b.drain.cpuMsPerDelivery) : '-'} | ${b.drain ? xacts(b.drain.xactsPerDelivery) : '-'} |`
    );
  });
  const latencyRow = (c: ConfigurationResult, l: LatencyResult) => {
    const isRef = c.kind === 'reference';
    return (
      `| ${c.label} | ${l.targetEventsPerSecond} (${l.achievedEventsPerSecond} sent) | ` +
      `${int(l.delivered)}${l.complete ? '' : ` of ${int(l.expected)}`} | ` +
      `**${ms(l.fromCommitMs.p50)}** | ${ms(l.fromCommitMs.p90)} | **${ms(l.fromCommitMs.p99)}** | ${ms(l.fromCommitMs.max)} | ` +
      `${ms(l.fromTxStartMs.p50)} / ${ms(l.fromTxStartMs.p99)} | ${ms(l.fromSendMs.p50)} / ${ms(l.fromSendMs.p99)} | ` +
      (isRef
        ? '- | - | '
        : `${ms(l.commitToPublishMs.p50)} / ${ms(l.commitToPublishMs.p99)} | ` +
          `${ms(l.publishToArrivalMs.p50)} / ${ms(l.publishToArrivalMs.p99)} | `) +
      `${ms(l.feedAnswerMs.p50)} / ${ms(l.feedAnswerMs.p99)} | ` +
      `${l.cpuMsPerDelivery ? cpu(l.cpuMsPerDelivery) : '-'} | ${xacts(l.xactsPerDelivery)} |`
    );
  };
  const latency = configs.flatMap((c) => [
    latencyRow(c, c.latency),
    ...(c.lowRateLatency ? [latencyRow(c, c.lowRateLatency)] : []),
  ]);
  const ceilings = configs.map(
    ({ label, ceiling: c }) =>
      `| after ${label} | ${c.concurrency} | ${int(c.requestsPerSecond)} | ${ms(c.latencyMs.p50)} | ${ms(c.latencyMs.p99)} | ` +
      `${int(c.bodies)} bodies of ${int(c.bodyBytes)} B (mean) | ${c.failures} |`,
  );
  const targets = r.targets.map((t) => `| ${t.name} | ${t.goal} | ${t.value} | ${mark(t.met)} |`);
  const ref = s.reference;
  return [
    `### ${NAMES[r.db]}${s.quick ? ' (quick smoke run: figures not comparable)' : ''}`,
    '',
    `Run ${when} on ${m.cpus} cores (${m.cpuModel}), ${m.memoryGb} GB, Node ${m.node}. Load average ` +
      `(1/5/15 min) ${load(r.loadAverage.start)} at the start, ${load(r.loadAverage.end)} at the end. ` +
      `${s.webhooks} webhooks (all events) of one integration, scopes ${s.scopes.join(', ')}; ` +
      `SVC_WEBHOOK_CONCURRENCY=${s.workerConcurrency}, SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK=${s.concurrencyPerWebhook}, ` +
      `SVC_WEBHOOK_TIMEOUT_MS=${s.webhookTimeoutMs}. Burst: ${int(s.burstEvents)} booking creations through the feed, ` +
      `${s.feedConcurrency} writes in flight; drain: ${int(s.drainEvents ?? 0)} events queued, then delivered; ` +
      `latency: one write every ${Math.round(1000 / s.latencyEventsPerSecond)} ms ` +
      `(open model) for ${s.latencySeconds} s.` +
      ((s.rounds ?? 1) > 1
        ? ` ${s.rounds} rounds, each on an empty database; every figure is the median of its rounds.`
        : '') +
      (r.autovacuum
        ? ` PostgreSQL's autovacuum ${r.autovacuum}; the bench vacuums the database after each configuration's ` +
          'warm-up and before each of its drains is queued.'
        : '') +
      (r.reference && ref
        ? ` Reference: graphile-worker ${ref.graphileWorker} (schema \`${ref.schema}\`, ${ref.concurrency} jobs in flight, ` +
          `local queue of ${ref.localQueueSize}, completeJobBatchDelay ${ref.completeJobBatchDelayMs}) + undici.`
        : ''),
    '',
    `Against the reference${refNote} ("of ref": deliveries/s as a share of the reference's in the same phase; ` +
      `transactions per delivery over the burst / the drain / the latency phase, feed writes included except in the drain):`,
    '',
    `| Configuration | drain deliveries/s | of ref | burst deliveries/s | of ref | commit to arrival p50 / p99 at ${s.latencyEventsPerSecond} events/s, ms | feed write p99, ms | xacts per delivery: burst / drain / latency |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...against,
    '',
    "Drain (events queued while nothing delivered; the delivering processes then started; deliveries/s from the first arrival to the last; CPU ms of serve / workers / PostgreSQL backends per delivery over the same span; transactions from the processes' start to their stop):",
    '',
    '| Configuration | events | deliveries | queued in, s | start to first arrival, s | first to last, s | deliveries/s | CPU ms | xacts per delivery | duplicates |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...drains,
    '',
    ...(slow
      ? [
          `Slow drain (the same drain to ${slow.webhooks} webhooks of another organization whose receiver answers ` +
            `${slow.answerMs} ms after each body arrived: the attempts in flight set the pace, not the cores; ` +
            `"the bound" is what min(processes delivering x SVC_WEBHOOK_CONCURRENCY, webhooks x per-webhook bound) ` +
            `attempts in flight allow, one every ${slow.answerMs} ms each):`,
          '',
          '| Configuration | processes delivering | in flight max | deliveries | first to last, s | deliveries/s | the bound, deliveries/s | of the bound | CPU ms | xacts per delivery | duplicates |',
          '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
          ...slowDrains,
          '',
        ]
      : []),
    'Throughput (burst; "of ceiling" against the ceiling at the same in-flight limit):',
    '',
    '| Configuration | in flight max | events | deliveries | feed events/s | deliveries/s, first to last arrival | of ceiling | after the feed ended: deliveries/s (n) | of ceiling | ceiling req/s | new TLS connections | duplicates |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...throughput,
    '',
    "Cost per delivery: CPU ms of serve / delivering processes (svc workers, or the reference's worker) / PostgreSQL backends, and PostgreSQL transactions, over the whole burst (feed writes included) and over the part after the feed ended:",
    '',
    '| Configuration | CPU ms, whole burst | xacts, whole burst | CPU ms, after the feed | xacts, after the feed |',
    '|---|---:|---:|---:|---:|',
    ...cost,
    '',
    `Commit to arrival, ms ("p50 ... max": arrival minus the feed write's answer, a lower bound; ` +
      '"from tx start": arrival minus the booking\'s created_at, i.e. now() of the feed transaction, an upper bound; ' +
      `"answer to publish" is negative when the PUT's answer reached the client after the event was already published; ` +
      `the reference publishes nothing: its jobs are added by the write itself; CPU ms of serve / delivering processes / PostgreSQL backends ` +
      `from the first write to the last arrival, feed writes included). ` +
      `The target rate is ${s.latencyEventsPerSecond} events/s (${s.latencyEventsPerSecond * s.webhooks} deliveries/s) for ${s.latencySeconds} s` +
      (s.lowEventsPerSecond > 0
        ? `; ${s.lowEventsPerSecond} events/s for ${s.lowSeconds} s is shown for reference.`
        : '.'),
    '',
    '| Configuration | events/s | deliveries | p50 | p90 | p99 | max | from tx start p50 / p99 | from send p50 / p99 | answer to publish p50 / p99 | publish to arrival p50 / p99 | feed write p50 / p99 | CPU ms per delivery | xacts per delivery |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
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

const cpu = (x: CpuShare) => `${num(x.serve)} / ${num(x.workers)} / ${num(x.postgres)}`;

/** Both databases side by side, each configuration as a share of PostgreSQL's reference. */
export function renderSummary(results: WebhookRunResult[]): string {
  const pgRun = results.find((r) => r.db === 'postgres');
  const liteRun = results.find((r) => r.db === 'pglite');
  const reference = pgRun?.reference ?? null;
  if (!reference) return '';
  const names = [
    ...new Map(
      [...(pgRun ? all(pgRun) : []), ...(liteRun ? all(liteRun) : [])].map((c) => [c.name, c.label]),
    ),
  ];
  const cell = (r: WebhookRunResult | undefined, name: string) => {
    const c = r ? all(r).find((x) => x.name === name) : undefined;
    if (!c) return '- | - | - | -';
    return (
      `${int(c.drain?.deliveriesPerSecond ?? 0)} (${sharePct(shareOf(c.drain?.deliveriesPerSecond, reference.drain?.deliveriesPerSecond))}) | ` +
      `${int(c.burst.deliveriesPerSecond)} (${sharePct(shareOf(c.burst.deliveriesPerSecond, reference.burst.deliveriesPerSecond))}) | ` +
      `${ms(c.latency.fromCommitMs.p99)} | ${ms(c.latency.feedAnswerMs.p99)}`
    );
  };
  return [
    '### Summary: every configuration against the reference',
    '',
    `Deliveries/s (share of the graphile-worker reference on PostgreSQL, same run as the PostgreSQL figures), ` +
      `and p99 commit to arrival / feed write at ${pgRun?.settings.latencyEventsPerSecond ?? 200} events/s, ms. ` +
      "PGlite cannot host graphile-worker: its figures are set beside PostgreSQL's, for the record.",
    '',
    '| Configuration | PostgreSQL drain/s | burst/s | p99 | feed p99 | PGlite drain/s | burst/s | p99 | feed p99 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...names.map(([name, label]) => `| ${label} | ${cell(pgRun, name)} | ${cell(liteRun, name)} |`),
    ...renderRounds(results),
  ].join('\n');
}

/** With several rounds, what each round gave: the spread the medians above come from. */
function renderRounds(results: WebhookRunResult[]): string[] {
  const lines: string[] = [];
  for (const r of results) {
    const configs = all(r).filter((c) => c.rounds && c.rounds.length > 1);
    if (configs.length === 0) continue;
    const n = r.settings.rounds ?? configs[0]?.rounds?.length ?? 0;
    const each = (
      c: ConfigurationResult,
      f: (x: RoundFigures) => number | null,
      show: (x: number) => string,
    ) => (c.rounds ?? []).map((x) => (f(x) === null ? '-' : show(f(x) as number))).join(' / ');
    lines.push(
      '',
      `${r.db === 'postgres' ? 'PostgreSQL' : 'PGlite'}: ${n} rounds, the configurations taking turns within each ` +
        'round (reference first); every figure of this section is the median of its rounds. Each round gave:',
      '',
      '| Configuration | drain/s | burst/s | p99 ms | feed p99 ms |',
      '|---|---:|---:|---:|---:|',
      ...configs.map(
        (c) =>
          `| ${c.label} | ${each(c, (x) => x.drain, int)} | ${each(c, (x) => x.burst, int)} | ` +
          `${each(c, (x) => x.p99, ms)} | ${each(c, (x) => x.feedP99, ms)} |`,
      ),
    );
  }
  return lines;
}

const METHOD = `## Webhook delivery

Measured by \`npm run bench:webhooks\` (bench/webhooks.ts; see bench/README.md). This section is
rewritten by that command from the newest \`bench/results/webhooks-<db>-<date>.json\` of each
database, followed by bench/webhooks-analysis.md.

Method: on PostgreSQL first the **reference**, what a team would build instead of the engine:
graphile-worker (library API, in a Node process of its own) fetching jobs in batches into a local
queue and completing them in batches, with one task that signs the body as the engine does and POSTs
it with undici; its jobs (one per event and webhook) are added by the transaction that writes the
event; then the same reference in 2 processes (the bound of attempts in flight and the local queue
split between them), for what a second delivering process gives a well-kept queue on the same
machine. Then the engine: \`node bin/svc.js serve\` (APIs and the embedded delivery worker) and, on
PostgreSQL, 1 or 2 \`node bin/svc.js worker\` processes beside it, all built from dist, each
configuration started afresh on the same database. Both get the same 4 webhooks on the same HTTPS
receiver (keep-alive, test CA's localhost certificate, 200 as soon as the body is in; it runs in the
benchmark process and records each arrival), bodies of about 1.5 KB and the same bound of attempts
in flight (16). The engine's events are booking creations through the platform feed
(\`PUT /operator/v1/organizations/{org}/bookings/{id}\`), each fanned out to every webhook.
**Phases**: a fixed rate of writes (open model) for latency; a **burst** (writes as fast as 16 in
flight allow; deliveries/s from the first arrival to the last); a **drain** (events queued while
nothing delivers, then the delivering processes started and, once all are ready, the queue made due:
deliveries/s from the first arrival to the last). **of ref** divides a figure by the reference's in the same phase; **of ceiling** divides it
by what a plain undici \`Pool\` in its own process achieves POSTing the same captured requests to the
same receiver. **Commit to arrival** is the arrival time minus the moment the feed's write answered:
the commit happened before the answer, so this is a lower bound of the true figure by the time the
answer took to reach the client; "from send" (arrival minus the moment the write was sent) is an
upper bound. **Transactions** are \`xact_commit + xact_rollback\` of the benchmark database in
\`pg_stat_database\`, less the benchmark's own probe statements, per delivery; a backend reports its
count at most once a second and 10 s after it went idle, so each count is read after the processes
stopped (drain) or after a pause that lets every backend report (burst, latency). CPU ms per
delivery is read from /proc (PostgreSQL counts only the backends connected to the benchmark
database). Everything shares 2 cores with other work: read the load average.
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
  const pgReference = results.find((r) => r.db === 'postgres')?.reference ?? null;
  return [
    METHOD,
    renderSummary(results),
    ...results.map((r) => renderRun(r, r.reference ?? pgReference)),
    analysis.trim(),
  ]
    .filter(Boolean)
    .join('\n\n');
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

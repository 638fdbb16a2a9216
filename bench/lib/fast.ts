// Fast receivers: the reference (graphile-worker + undici), `serve` and `serve + 1 worker` on the
// same webhooks and receiver, taking turns in each round. Each configuration starts afresh, warms
// up, is timed at a fixed feed rate (open model: commit to arrival), then drains a backlog queued
// while nothing delivered: its processes started together, the rate from the first arrival to the
// last, with the CPU each delivery cost from the first arrival on.
import pg from 'pg';
import {
  arrivalsOf,
  type Bench,
  type CpuFigures,
  cpuPerDelivery,
  cpuSnapshot,
  Feed,
  type Tenant,
  vacuum,
} from './feed.js';
import { type Child, startServe, startWorker } from './proc.js';
import { referenceWebhooks, referenceWrite, resetReference, startReferenceWorker } from './reference.js';
import { log, median, percentile, round } from './report.js';

export interface FastSettings {
  rounds: number;
  webhooks: number;
  perWebhook: number;
  drainEvents: number;
  warmUpEvents: number;
  rate: number;
  latencySeconds: number;
}

export interface FastRound {
  /** Commit (the write's answer) to arrival at the fixed rate, and the feed write itself, ms. */
  latency: { p50: number; p99: number; feedP99: number; missing: number };
  drain: {
    deliveries: number;
    missing: number;
    perSecond: number;
    startToFirstSeconds: number;
    cpu: CpuFigures;
  };
}

export interface FastResult {
  date: string;
  settings: FastSettings;
  configurations: {
    name: string;
    label: string;
    rounds: FastRound[];
    /** Medians of the rounds. */
    drainPerSecond: number;
    latencyP99: number;
    feedP99: number;
    cpu: CpuFigures;
    /** Drain rate over the reference's in the same round, the median of the rounds. */
    ofReference: number | null;
  }[];
}

interface Configuration {
  name: string;
  label: string;
  feed: Feed;
  tenant: Tenant;
  start(): Promise<Child[]>;
  /** A process the feed needs while nothing delivers (serve, its worker off), or null. */
  queuing(): Promise<Child | null>;
}

async function latency(b: Bench, c: Configuration, o: FastSettings): Promise<FastRound['latency']> {
  b.receiver.reset();
  c.feed.forget();
  await c.feed.steady(c.tenant, o.rate, o.latencySeconds);
  const expected = c.feed.expected();
  const arrived = await arrivalsOf(b.receiver, expected);
  const fromCommit = arrived.flatMap((a) => {
    const sent = c.feed.sent.get((JSON.parse(a.body) as { resource: { id: string } }).resource.id);
    return sent ? [a.at - sent.answeredAt] : [];
  });
  const feedMs = [...c.feed.sent.values()].map((x) => x.answeredAt - x.sentAt);
  const ms = (xs: number[], share: number) => round(percentile(xs, share));
  return {
    p50: ms(fromCommit, 0.5),
    p99: ms(fromCommit, 0.99),
    feedP99: ms(feedMs, 0.99),
    missing: expected - arrived.length,
  };
}

async function drain(b: Bench, c: Configuration, o: FastSettings): Promise<FastRound['drain']> {
  await vacuum(b.client);
  const queuing = await c.queuing();
  b.receiver.reset();
  c.feed.forget();
  await c.feed.burst([c.tenant], o.drainEvents);
  await queuing?.stop();
  const expected = c.feed.expected();
  const startedAt = performance.now();
  const children = await c.start();
  try {
    await b.receiver.until(() => b.receiver.arrivals.length > 0, 60_000);
    const atFirst = await cpuSnapshot(children, b.client);
    const arrived = await arrivalsOf(b.receiver, expected);
    const atLast = await cpuSnapshot(children, b.client);
    const first = arrived[0]?.at ?? 0;
    const seconds = ((arrived.at(-1)?.at ?? 0) - first) / 1000;
    return {
      deliveries: arrived.length,
      missing: expected - arrived.length,
      perSecond: seconds > 0 ? round((arrived.length - 1) / seconds, 0) : 0,
      startToFirstSeconds: round((first - startedAt) / 1000, 2),
      cpu: cpuPerDelivery(atFirst, atLast, arrived.length),
    };
  } finally {
    for (const child of children) await child.stop();
  }
}

async function measure(b: Bench, c: Configuration, o: FastSettings): Promise<FastRound> {
  const children = await c.start();
  let timed: FastRound['latency'];
  try {
    b.receiver.reset();
    c.feed.forget();
    await c.feed.burst([c.tenant], o.warmUpEvents);
    await arrivalsOf(b.receiver, c.feed.expected());
    timed = await latency(b, c, o);
  } finally {
    for (const child of children) await child.stop();
  }
  const drained = await drain(b, c, o);
  log(
    `fast ${c.label}: p99 ${timed.p99} ms (feed ${timed.feedP99} ms), drain ${drained.perSecond}/s, ` +
      `${drained.cpu.nodeUs} + ${drained.cpu.postgresUs} µs/delivery, ${drained.missing} missing`,
  );
  return { latency: timed, drain: drained };
}

function configurations(b: Bench, tenant: Tenant, o: FastSettings, pool: pg.Pool): Configuration[] {
  const webhooks = referenceWebhooks(tenant.paths.map((p) => b.receiver.url(`/r${p}`)));
  const inFlight = tenant.paths.length * o.perWebhook;
  const reference: Configuration = {
    name: 'reference',
    label: 'graphile-worker + undici (reference)',
    feed: new Feed(referenceWrite(pool)),
    tenant: { ...tenant, paths: tenant.paths.map((p) => `/r${p}`) },
    start: async () => [
      await startReferenceWorker(b.root, {
        connectionString: b.url,
        webhooks,
        concurrency: inFlight,
        localQueue: inFlight * 4,
        timeoutMs: 10_000,
        caFile: b.receiver.caFile,
      }),
    ],
    queuing: async () => null,
  };
  const engine = (workers: number): Configuration => ({
    name: workers === 0 ? 'serve' : `serve+${workers}`,
    label: workers === 0 ? 'serve' : `serve + ${workers} worker`,
    feed: b.feed,
    tenant,
    start: () =>
      Promise.all([startServe(b.service), ...Array.from({ length: workers }, () => startWorker(b.service))]),
    queuing: () => startServe(b.service, { SVC_WEBHOOK_WORKER: 'off' }),
  });
  return [reference, engine(0), engine(1)];
}

export async function fastScenario(b: Bench, tenant: Tenant, o: FastSettings): Promise<FastResult> {
  b.receiver.delayMs = 0;
  await resetReference(b.url);
  const pool = new pg.Pool({ connectionString: b.url, max: 16 });
  const all = configurations(b, tenant, o, pool);
  const rounds = new Map<string, FastRound[]>(all.map((c) => [c.name, []]));
  try {
    for (let r = 0; r < o.rounds; r++) {
      // The order turns each round, so that a slow patch of the machine does not fall on one only.
      for (let i = 0; i < all.length; i++) {
        const c = all[(i + r) % all.length] as Configuration;
        rounds.get(c.name)?.push(await measure(b, c, o));
      }
    }
  } finally {
    await pool.end();
  }
  const reference = rounds.get('reference') ?? [];
  const results = all.map((c) => {
    const mine = rounds.get(c.name) ?? [];
    const m = (f: (r: FastRound) => number, digits = 1) => round(median(mine.map(f)), digits);
    const cpu = {
      nodeUs: m((r) => r.drain.cpu.nodeUs),
      postgresUs: m((r) => r.drain.cpu.postgresUs),
      benchUs: m((r) => r.drain.cpu.benchUs),
      machineBusy: m((r) => r.drain.cpu.machineBusy, 3),
    };
    // Within each round, then the median: the machine's pace moves between rounds.
    const shares = mine.map((r, i) => r.drain.perSecond / (reference[i]?.drain.perSecond || 1));
    const ofReference = reference.length === mine.length ? round(median(shares), 3) : null;
    const [drainPerSecond, latencyP99, feedP99] = [
      m((r) => r.drain.perSecond, 0),
      m((r) => r.latency.p99),
      m((r) => r.latency.feedP99),
    ];
    return {
      name: c.name,
      label: c.label,
      rounds: mine,
      drainPerSecond,
      latencyP99,
      feedP99,
      cpu,
      ofReference,
    };
  });
  return { date: new Date().toISOString(), settings: o, configurations: results };
}

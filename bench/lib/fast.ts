// The fast-receiver scenario: the reference (graphile-worker + undici), `serve` and
// `serve + 1 worker` on the same webhooks and receiver, rounds taking turns. Each configuration
// starts afresh, warms up, is timed at a fixed feed rate (open model: commit to arrival), then
// drains a backlog queued while nothing delivered (its processes started together, the rate from
// the first arrival to the last, with the CPU each delivery cost).
import pg from 'pg';
import {
  arrivalsOf,
  type CpuFigures,
  cpuPerDelivery,
  cpuSnapshot,
  Feed,
  type Tenant,
  vacuum,
  type Write,
} from './feed.js';
import { type Child, type Service, startServe, startWorker } from './proc.js';
import type { Receiver } from './receiver.js';
import { referenceWebhooks, referenceWrite, resetReference, startReferenceWorker } from './reference.js';
import { log, median, percentile, round } from './report.js';

export interface FastOptions {
  root: string;
  url: string;
  service: Service;
  receiver: Receiver;
  feed: Feed;
  client: pg.Client;
  dbName: string;
  tenant: Tenant;
  rounds: number;
  drainEvents: number;
  warmUpEvents: number;
  rate: number;
  latencySeconds: number;
  perWebhook: number;
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

export interface FastConfiguration {
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
}

export interface FastResult {
  date: string;
  settings: Omit<
    FastOptions,
    'root' | 'url' | 'service' | 'receiver' | 'feed' | 'client' | 'dbName' | 'tenant'
  > & {
    webhooks: number;
    referenceLocalQueue: number;
  };
  configurations: FastConfiguration[];
}

/** What the scenario needs of a configuration: its feed, its delivering processes, its queuing. */
interface Configuration {
  name: string;
  label: string;
  feed: Feed;
  tenant: Tenant;
  start(): Promise<Child[]>;
  /** A process the feed needs while nothing delivers (serve, its worker off), or null. */
  queuing(): Promise<Child | null>;
}

const FEED_CONCURRENCY = 16;
const STALL_MS = 20_000;

async function warmUp(c: Configuration, o: FastOptions): Promise<void> {
  o.receiver.reset();
  c.feed.forget();
  await c.feed.burst([c.tenant], o.warmUpEvents, FEED_CONCURRENCY);
  await arrivalsOf(o.receiver, c.feed.expected(), STALL_MS);
}

async function latency(c: Configuration, o: FastOptions): Promise<FastRound['latency']> {
  o.receiver.reset();
  c.feed.forget();
  await c.feed.steady(c.tenant, o.rate, o.latencySeconds);
  const expected = c.feed.expected();
  const arrived = await arrivalsOf(o.receiver, expected, STALL_MS);
  const fromCommit = arrived.flatMap((a) => {
    const sent = c.feed.sent.get((JSON.parse(a.body) as { resource: { id: string } }).resource.id);
    return sent ? [a.at - sent.answeredAt] : [];
  });
  const feedMs = [...c.feed.sent.values()].map((x) => x.answeredAt - x.sentAt);
  return {
    p50: round(percentile(fromCommit, 0.5)),
    p99: round(percentile(fromCommit, 0.99)),
    feedP99: round(percentile(feedMs, 0.99)),
    missing: expected - arrived.length,
  };
}

async function drain(c: Configuration, o: FastOptions): Promise<FastRound['drain']> {
  await vacuum(o.client);
  const queuing = await c.queuing();
  o.receiver.reset();
  c.feed.forget();
  await c.feed.burst([c.tenant], o.drainEvents, FEED_CONCURRENCY);
  await queuing?.stop();
  const expected = c.feed.expected();
  const startedAt = performance.now();
  const children = await c.start();
  try {
    await o.receiver.until(() => o.receiver.arrivals.length > 0, 60_000);
    const atFirst = await cpuSnapshot(children, o.client, o.dbName);
    const arrived = await arrivalsOf(o.receiver, expected, STALL_MS);
    const atLast = await cpuSnapshot(children, o.client, o.dbName);
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

async function measure(c: Configuration, o: FastOptions): Promise<FastRound> {
  const children = await c.start();
  let result: FastRound['latency'];
  try {
    await warmUp(c, o);
    result = await latency(c, o);
  } finally {
    for (const child of children) await child.stop();
  }
  const drained = await drain(c, o);
  log(
    `fast ${c.label}: p99 ${result.p99} ms (feed ${result.feedP99} ms), drain ${drained.perSecond}/s, ` +
      `${drained.cpu.nodeUs} + ${drained.cpu.postgresUs} µs/delivery, ${drained.missing} missing`,
  );
  return { latency: result, drain: drained };
}

function configurations(o: FastOptions): { configurations: Configuration[]; close(): Promise<void> } {
  const pool = new pg.Pool({ connectionString: o.url, max: FEED_CONCURRENCY });
  const write: Write = referenceWrite(pool);
  const webhooks = referenceWebhooks(o.tenant.paths.map((p) => o.receiver.url(`/r${p}`)));
  const inFlight = o.tenant.paths.length * o.perWebhook;
  const reference: Configuration = {
    name: 'reference',
    label: 'graphile-worker + undici (reference)',
    feed: new Feed(write),
    tenant: { ...o.tenant, paths: o.tenant.paths.map((p) => `/r${p}`) },
    start: async () => [
      await startReferenceWorker(o.root, {
        connectionString: o.url,
        webhooks,
        concurrency: inFlight,
        localQueue: inFlight * 4,
        timeoutMs: 10_000,
        caFile: o.receiver.caFile,
      }),
    ],
    queuing: async () => null,
  };
  const engine = (workers: number): Configuration => ({
    name: workers === 0 ? 'serve' : `serve+${workers}`,
    label: workers === 0 ? 'serve' : `serve + ${workers} worker`,
    feed: o.feed,
    tenant: o.tenant,
    start: () =>
      Promise.all([startServe(o.service), ...Array.from({ length: workers }, () => startWorker(o.service))]),
    queuing: () => startServe(o.service, { SVC_WEBHOOK_WORKER: 'off' }),
  });
  return { configurations: [reference, engine(0), engine(1)], close: () => pool.end() };
}

export async function fastScenario(o: FastOptions): Promise<FastResult> {
  o.receiver.delayMs = 0;
  await resetReference(o.url);
  const { configurations: all, close } = configurations(o);
  const rounds = new Map<string, FastRound[]>(all.map((c) => [c.name, []]));
  try {
    for (let r = 0; r < o.rounds; r++) {
      // The order turns each round, so that a slow patch of the machine does not fall on one only.
      for (let i = 0; i < all.length; i++) {
        const c = all[(i + r) % all.length] as Configuration;
        rounds.get(c.name)?.push(await measure(c, o));
      }
    }
  } finally {
    await close();
  }
  const reference = rounds.get('reference') ?? [];
  const {
    root: _r,
    url: _u,
    service: _s,
    receiver: _v,
    feed: _f,
    client: _c,
    dbName: _d,
    tenant,
    ...settings
  } = o;
  return {
    date: new Date().toISOString(),
    settings: {
      ...settings,
      webhooks: tenant.paths.length,
      referenceLocalQueue: tenant.paths.length * o.perWebhook * 4,
    },
    configurations: all.map((c) => {
      const mine = rounds.get(c.name) ?? [];
      const m = (f: (r: FastRound) => number) => round(median(mine.map(f)), 1);
      return {
        name: c.name,
        label: c.label,
        rounds: mine,
        drainPerSecond: m((r) => r.drain.perSecond),
        latencyP99: m((r) => r.latency.p99),
        feedP99: m((r) => r.latency.feedP99),
        cpu: {
          nodeUs: m((r) => r.drain.cpu.nodeUs),
          postgresUs: m((r) => r.drain.cpu.postgresUs),
          benchUs: m((r) => r.drain.cpu.benchUs),
          machineBusy: round(median(mine.map((r) => r.drain.cpu.machineBusy)), 3),
        },
        // Within each round, then the median: the machine's pace moves between rounds.
        ofReference:
          reference.length === mine.length
            ? round(median(mine.map((r, i) => r.drain.perSecond / (reference[i]?.drain.perSecond || 1))), 3)
            : null,
      };
    }),
  };
}

// Fast receivers: the reference (graphile-worker + undici), `serve` and `serve + 1 worker` on the
// same webhooks and receiver, taking turns in each round. Each configuration starts afresh, warms
// up, is timed at a fixed feed rate (open model: commit to arrival), then drains a backlog queued
// while nothing delivered: its processes started together, the rate from the first arrival to the
// last, with the CPU each delivery cost from the first arrival on.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { arrivalsOf, type Bench, type Drain, drain, Feed, openLoop, queue, type Tenant } from './feed.js';
import { type Child, startScript, startServe, startWorker } from './proc.js';
import { type ReferenceConfig, referenceWrite, resetReference } from './reference.js';
import { log, median, medians, percentile, round, shareByRound, turns } from './report.js';

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
  latency: { p99: number; feedP99: number };
  drain: Drain;
}

export type FastResult = Awaited<ReturnType<typeof fastScenario>>;

interface Configuration {
  name: string;
  label: string;
  feed: Feed;
  tenant: Tenant;
  start(): Promise<Child[]>;
  /** How the feed is queued while nothing delivers: through serve (its worker off) or not. */
  serveEnv: NodeJS.ProcessEnv | null;
}

/** Warm-up, then commit to arrival at a fixed feed rate. */
async function latency(b: Bench, c: Configuration, o: FastSettings): Promise<FastRound['latency']> {
  const phase = async (send: () => Promise<void>) => {
    b.receiver.reset();
    c.feed.forget();
    await send();
    return arrivalsOf(b.receiver, c.feed.expected());
  };
  await phase(() => c.feed.burst([c.tenant], o.warmUpEvents));
  const arrived = await phase(() => openLoop(o.rate, o.latencySeconds, () => c.feed.put(c.tenant)));
  const fromCommit = arrived.flatMap((a) => {
    const sent = c.feed.sent.get((JSON.parse(a.body) as { resource: { id: string } }).resource.id);
    return sent ? [a.at - sent.answeredAt] : [];
  });
  const feedMs = [...c.feed.sent.values()].map((x) => x.answeredAt - x.sentAt);
  return { p99: round(percentile(fromCommit, 0.99)), feedP99: round(percentile(feedMs, 0.99)) };
}

async function measure(b: Bench, c: Configuration, o: FastSettings): Promise<FastRound> {
  const stop = (children: Child[]) => Promise.all(children.map((child) => child.stop()));
  let children = await c.start();
  const timed = await latency(b, c, o).finally(() => stop(children));
  const { serve, expected } = await queue(b, c.feed, [c.tenant], o.drainEvents, c.serveEnv);
  await serve?.stop();
  children = await c.start();
  const drained = await drain(b, expected, children, 'first arrival').finally(() => stop(children));
  log(
    `fast ${c.label}: p99 ${timed.p99} ms (feed ${timed.feedP99} ms), drain ${drained.perSecond}/s, ` +
      `${drained.cpu.nodeUs} + ${drained.cpu.postgresUs} µs/delivery, ${drained.missing} missing`,
  );
  return { latency: timed, drain: drained };
}

function configurations(b: Bench, tenant: Tenant, o: FastSettings, pool: pg.Pool): Configuration[] {
  const paths = tenant.paths.map((p) => `/r${p}`);
  const inFlight = tenant.paths.length * o.perWebhook;
  const config: ReferenceConfig = {
    databaseUrl: b.url,
    webhooks: paths.map((p) => ({
      url: b.receiver.url(p),
      secret: `whsec_${randomBytes(24).toString('base64url')}`,
    })),
    concurrency: inFlight,
    localQueue: inFlight * 4,
    timeoutMs: 10_000,
    caFile: b.receiver.caFile,
  };
  const engine = (workers: number): Configuration => ({
    name: workers === 0 ? 'serve' : `serve+${workers}`,
    label: workers === 0 ? 'serve' : `serve + ${workers} worker`,
    feed: b.feed,
    tenant,
    start: () =>
      Promise.all([startServe(b.service), ...Array.from({ length: workers }, () => startWorker(b.service))]),
    serveEnv: {},
  });
  return [
    {
      name: 'reference',
      label: 'graphile-worker + undici (reference)',
      feed: new Feed(referenceWrite(pool)),
      tenant: { ...tenant, paths },
      start: async () => [await startScript('webhook-reference.ts', config)],
      serveEnv: null,
    },
    engine(0),
    engine(1),
  ];
}

export async function fastScenario(b: Bench, tenant: Tenant, o: FastSettings) {
  b.receiver.delayMs = 0;
  await resetReference(b.url);
  const pool = new pg.Pool({ connectionString: b.url, max: 16 });
  const all = configurations(b, tenant, o, pool);
  const rounds = new Map<string, FastRound[]>(all.map((c) => [c.name, []]));
  try {
    for (const c of turns(all, o.rounds)) rounds.get(c.name)?.push(await measure(b, c, o));
  } finally {
    await pool.end();
  }
  const rates = (name: string) => (rounds.get(name) ?? []).map((r) => r.drain.perSecond);
  const results = all.map(({ name, label }) => {
    const mine = rounds.get(name) ?? [];
    const m = (f: (r: FastRound) => number, digits = 1) => round(median(mine.map(f)), digits);
    return {
      name,
      label,
      rounds: mine,
      /** Medians of the rounds. */
      drainPerSecond: m((r) => r.drain.perSecond, 0),
      latencyP99: m((r) => r.latency.p99),
      feedP99: m((r) => r.latency.feedP99),
      cpu: medians(mine.map((r) => r.drain.cpu)),
      /** Drain rate over the reference's in the same round, the median of the rounds. */
      ofReference: shareByRound(rates(name), rates('reference')),
    };
  });
  const { rounds: count, webhooks, drainEvents, rate, latencySeconds } = o;
  const settings = { rounds: count, webhooks, drainEvents, rate, latencySeconds };
  return { date: new Date().toISOString(), settings, configurations: results };
}

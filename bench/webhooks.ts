// npm run bench:webhooks [-- --scenarios fast,scale-out,rebalance --quick ...]   (bench/README.md)
//
// Webhook delivery on PostgreSQL, the service driven only through its processes (`svc serve`,
// `svc worker`), its feed and public APIs, and observed at an HTTPS receiver (lib/feed.ts):
// - fast: receivers that answer at once; the graphile-worker + undici reference, `serve` and
//   `serve + 1 worker` taking turns in each round. Each starts afresh, warms up, is timed at a fixed
//   feed rate (open model: commit to arrival), then drains a backlog queued while nothing delivered:
//   its processes started together, the rate and CPU per delivery from the first arrival to the last;
// - scale-out: a backlog to 200 webhooks in 50 organizations answering in 100 ms, queued through
//   `svc serve` with its worker off (left running), drained by 1, 2 and 4 `svc worker` processes of
//   16 attempts in flight each; the rate and CPU per delivery from every worker ready;
// - rebalance: during such a drain a worker starts, one is SIGKILLed and one SIGTERMed.
// Results of the scenarios not run are carried over from the newest saved result.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  arrivalsOf,
  type Bench,
  createTenant,
  type Drain,
  distinct,
  drain,
  engineWrite,
  Feed,
  openLoop,
  queue,
  type Tenant,
} from './lib/feed.js';
import {
  type Child,
  createDatabase,
  service,
  startScript,
  startServe,
  startWorker,
  stopAll,
} from './lib/proc.js';
import { type Arrival, startReceiver } from './lib/receiver.js';
import { type ReferenceConfig, referenceWrite, resetReference } from './lib/reference.js';
import * as r from './lib/report.js';

const o = r.cli(
  {
    scenarios: 'fast,scale-out,rebalance',
    rounds: 3,
    webhooks: 4,
    drainEvents: 4000,
    warmUpEvents: 400,
    rate: 200,
    latencySeconds: 3,
    organizations: 50,
    webhooksPerOrganization: 4,
    deliveries: 20_000,
    answerMs: 100,
    workerConcurrency: 16,
    perWebhook: 4,
    workers: '1,2,4',
    rebalanceDeliveries: 12_000,
    leaseSeconds: 5,
    databaseUrl: 'postgres://postgres@127.0.0.1:5432/svc_bench_webhooks',
  },
  {
    rounds: 1,
    drainEvents: 300,
    warmUpEvents: 40,
    latencySeconds: 1,
    organizations: 10,
    deliveries: 1600,
    workers: '1,2',
    rebalanceDeliveries: 1600,
  },
);
const scenarios = new Set(o.scenarios.split(','));
for (const s of scenarios)
  if (!['fast', 'scale-out', 'rebalance'].includes(s)) throw new Error(`no scenario ${s}`);
if (!o.workers.split(',').every((n) => Number(n) > 0)) throw new Error('--workers takes positive numbers');
/** The scale-out and rebalance tenants and receivers, as their records state them. */
const scale = {
  organizations: o.organizations,
  webhooks: o.organizations * o.webhooksPerOrganization,
  answerMs: o.answerMs,
  workerConcurrency: o.workerConcurrency,
  perWebhook: o.perWebhook,
};

/** One run of the webhook benchmark, as bench/results keeps it. */
interface WebhookResult {
  date: string;
  machine: ReturnType<typeof r.machine>;
  fast: Awaited<ReturnType<typeof fastScenario>> | null;
  scaleOut: Awaited<ReturnType<typeof scaleOutScenario>> | null;
  rebalance: Awaited<ReturnType<typeof rebalanceScenario>> | null;
}

async function main(): Promise<void> {
  const url = o.databaseUrl;
  await createDatabase(url, true);
  const receiver = await startReceiver();
  const client = new pg.Client({ connectionString: url });
  const s = await service(url);
  const write = engineWrite(s);
  const b: Bench = { url, service: s, receiver, feed: new Feed(write), client };
  const run: WebhookResult = {
    date: new Date().toISOString(),
    machine: r.machine(),
    fast: null,
    scaleOut: null,
    rebalance: null,
  };
  try {
    // The tenants are made through a serve that does not deliver; the scale-out ones under /s/<org>/<n>.
    const setup = await startServe(s, { SVC_WEBHOOK_WORKER: 'off' });
    const paths = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}/${i}`);
    const fastTenant = await createTenant(s, receiver, paths(o.webhooks, '/f'));
    const tenants: Tenant[] = [];
    const organizations = scenarios.has('scale-out') || scenarios.has('rebalance') ? o.organizations : 0;
    for (let i = 0; i < organizations; i++)
      tenants.push(await createTenant(s, receiver, paths(o.webhooksPerOrganization, `/s/${i}`)));
    await setup.stop();
    await client.connect();
    if (scenarios.has('fast')) run.fast = await fastScenario(b, fastTenant);
    if (scenarios.has('scale-out')) run.scaleOut = await scaleOutScenario(b, tenants);
    if (scenarios.has('rebalance')) run.rebalance = await rebalanceScenario(b, tenants);
  } finally {
    await stopAll();
    await write.close();
    await client.end().catch(() => {});
    await receiver.close();
  }
  const previous = o.dryRun ? null : await r.readNewest<WebhookResult>('webhooks');
  const result: WebhookResult = {
    ...run,
    fast: run.fast ?? previous?.fast ?? null,
    scaleOut: run.scaleOut ?? previous?.scaleOut ?? null,
    rebalance: run.rebalance ?? previous?.rebalance ?? null,
  };
  await r.publish(o, {
    name: 'webhooks',
    heading: '## Webhook delivery: record',
    result,
    markdown: render(result),
    charts: charts(result),
  });
}

// Fast receivers.

/** Commit (the write's answer) to arrival at the fixed rate and the feed write itself (p99, ms), then the drain. */
type FastRound = { latency: { p99: number; feedP99: number }; drain: Drain };

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
async function latency(b: Bench, c: Configuration): Promise<FastRound['latency']> {
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
  return { p99: r.round(r.percentile(fromCommit, 0.99)), feedP99: r.round(r.percentile(feedMs, 0.99)) };
}

async function measure(b: Bench, c: Configuration): Promise<FastRound> {
  const stop = (children: Child[]) => Promise.all(children.map((child) => child.stop()));
  let children = await c.start();
  const timed = await latency(b, c).finally(() => stop(children));
  const { serve, expected } = await queue(b, c.feed, [c.tenant], o.drainEvents, c.serveEnv);
  await serve?.stop();
  children = await c.start();
  const drained = await drain(b, expected, children, 'first arrival').finally(() => stop(children));
  r.log(
    `fast ${c.label}: p99 ${timed.p99} ms (feed ${timed.feedP99} ms), drain ${drained.perSecond}/s, ` +
      `${drained.cpu.nodeUs} + ${drained.cpu.postgresUs} µs/delivery, ${drained.missing} missing`,
  );
  return { latency: timed, drain: drained };
}

function configurations(b: Bench, tenant: Tenant, pool: pg.Pool): Configuration[] {
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

async function fastScenario(b: Bench, tenant: Tenant) {
  b.receiver.delayMs = 0;
  await resetReference(b.url);
  const pool = new pg.Pool({ connectionString: b.url, max: 16 });
  const all = configurations(b, tenant, pool);
  const rounds = new Map<string, FastRound[]>(all.map((c) => [c.name, []]));
  try {
    for (const c of r.turns(all, o.rounds)) rounds.get(c.name)?.push(await measure(b, c));
  } finally {
    await pool.end();
  }
  const rates = (name: string) => (rounds.get(name) ?? []).map((x) => x.drain.perSecond);
  const results = all.map(({ name, label }) => {
    const mine = rounds.get(name) ?? [];
    const m = (f: (x: FastRound) => number, digits = 1) => r.round(r.median(mine.map(f)), digits);
    return {
      name,
      label,
      rounds: mine,
      /** Medians of the rounds. */
      drainPerSecond: m((x) => x.drain.perSecond, 0),
      latencyP99: m((x) => x.latency.p99),
      feedP99: m((x) => x.latency.feedP99),
      cpu: r.medians(mine.map((x) => x.drain.cpu)),
      /** Drain rate over the reference's in the same round, the median of the rounds. */
      ofReference: r.shareByRound(rates(name), rates('reference')),
    };
  });
  const { rounds: count, webhooks, drainEvents, rate, latencySeconds } = o;
  const settings = { rounds: count, webhooks, drainEvents, rate, latencySeconds };
  return { date: new Date().toISOString(), settings, configurations: results };
}

// Scale-out and rebalancing.

type ScaleOutRun = Drain & {
  workers: number;
  /** What the attempts in flight allow: workers x budget / answer time (capped by the webhooks' bounds). */
  boundPerSecond: number;
};

/** serve's pool is kept small while it queues, so that four workers and serve stay inside the 100
 * connections a default PostgreSQL allows (the engine keeps connections of its own). */
const backlog = (b: Bench, tenants: Tenant[], deliveries: number) => {
  b.receiver.delayMs = o.answerMs;
  return queue(b, b.feed, tenants, Math.ceil(deliveries / scale.webhooks), { SVC_DB_POOL_SIZE: '8' });
};

const startWorkers = (b: Bench, n: number, env: NodeJS.ProcessEnv = {}) =>
  Promise.all(
    Array.from({ length: n }, () =>
      startWorker(b.service, {
        SVC_WEBHOOK_CONCURRENCY: String(o.workerConcurrency),
        SVC_DB_POOL_SIZE: '4',
        ...env,
      }),
    ),
  );

const stopEach = async (children: Child[]) => {
  for (const c of children) await c.stop();
};

/** A drain by 1, 2, 4 ... workers, each of its own backlog; rate and CPU from every worker ready. */
async function scaleOutScenario(b: Bench, tenants: Tenant[]) {
  const runs: ScaleOutRun[] = [];
  for (const n of o.workers.split(',').map(Number)) {
    const { serve, expected } = await backlog(b, tenants, o.deliveries);
    const children: Child[] = [serve!];
    try {
      children.push(...(await startWorkers(b, n)));
      const bound = Math.min(n * o.workerConcurrency, scale.webhooks * o.perWebhook);
      const run = { workers: n, ...(await drain(b, expected, children, 'ready')) };
      runs.push({ ...run, boundPerSecond: r.round((bound * 1000) / o.answerMs, 0) });
      r.log(
        `scale-out ${n} worker(s): ${run.perSecond}/s, ${run.cpu.nodeUs} + ${run.cpu.postgresUs} ` +
          `µs/delivery, machine ${r.round(run.cpu.machineBusy * 100)}% busy`,
      );
    } finally {
      await stopEach(children);
    }
  }
  return { date: new Date().toISOString(), settings: { ...scale, deliveries: o.deliveries }, runs };
}

/** The receiver paths of the webhooks in the partitions of the `svc worker` with this pid. */
async function pathsOwnedBy(b: Bench, pid: number): Promise<Set<string>> {
  const { rows } = await b.client.query<{ url: string }>(
    `SELECT w.url FROM webhooks w
       JOIN delivery_partitions p ON p.partition = webhook_partition(w.id)
       JOIN delivery_workers k ON k.id = p.owner
      WHERE k.pid = $1`,
    [pid],
  );
  return new Set(rows.map((row) => new URL(row.url).pathname));
}

/**
 * When (ms after `at`) the killed worker with this pid was found dead and every partition had an
 * owner again: the engine's part of the handover, before any claim. Null if not within a minute.
 */
async function handedOver(b: Bench, pid: number, at: number): Promise<number | null> {
  while (performance.now() - at < 60_000) {
    const { rows } = await b.client.query<{ pending: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM delivery_workers WHERE pid = $1)
           OR EXISTS (SELECT 1 FROM delivery_partitions WHERE owner IS NULL) AS pending`,
      [pid],
    );
    if (!rows[0]?.pending) return performance.now() - at;
    await r.sleep(25);
  }
  return null;
}

/**
 * How long after `at` each of the webhooks at `paths` next received a delivery: the longest wait,
 * and how many waited over 1 s.
 */
function resumption(arrivals: Arrival[], at: number, paths: Set<string>) {
  const next = new Map<string, number>();
  for (const a of arrivals)
    if (a.at > at && paths.has(a.path) && !next.has(a.path)) next.set(a.path, a.at - at);
  const waits = [...next.values()];
  return {
    /**
     * After the SIGKILL: when every webhook the killed worker owned that was still owed deliveries
     * had one again (null: none was owed).
     */
    resumedSeconds: waits.length > 0 ? r.round(Math.max(...waits) / 1000, 2) : null,
    webhooksPausedOverSecond: waits.filter((w) => w > 1000).length,
  };
}

/**
 * Three workers drain; at 20% of the backlog a fourth starts, at 40% one is SIGKILLed, at 60% another
 * gets SIGTERM. The leases of deliveries and of workers are both `leaseSeconds`, the attempt
 * time-out 1.5 s under it (it must be shorter) so that the lease can be short.
 */
async function rebalanceScenario(b: Bench, tenants: Tenant[]) {
  const env = {
    SVC_WEBHOOK_LEASE_SECONDS: String(o.leaseSeconds),
    SVC_WEBHOOK_TIMEOUT_MS: String(Math.max(100, o.leaseSeconds * 1000 - 1500)),
    // The lease of the killed worker itself: its partitions free when it ends.
    SVC_WEBHOOK_WORKER_LEASE_MS: String(o.leaseSeconds * 1000),
  };
  const { serve, expected } = await backlog(b, tenants, o.rebalanceDeliveries);
  const count = distinct(b.receiver);
  const events: { at: number; what: string }[] = [];
  const t0 = performance.now();
  b.receiver.bound = o.perWebhook;
  const note = (what: string) => {
    events.push({ at: r.round((performance.now() - t0) / 1000, 2), what });
    r.log(`rebalance: ${what} at ${count()} of ${expected}`);
  };
  const reach = (share: number) => b.receiver.until(() => count() >= expected * share, 10 * 60_000);
  const children: Child[] = [serve!];
  try {
    const workers = await startWorkers(b, 3, env);
    children.push(...workers);
    note('3 workers ready');
    r.log(`rebalance: pids: workers ${workers.map((w) => w.pid)}, serve ${serve?.pid}`);
    await reach(0.2);
    children.push(...(await startWorkers(b, 1, env)));
    note('a 4th worker ready');
    r.log(`rebalance: pids: 4th worker ${children.at(-1)?.pid}`);
    await reach(0.4);
    const killed = await pathsOwnedBy(b, workers[1]?.pid ?? 0);
    const killedAt = performance.now();
    await workers[1]?.stop('SIGKILL');
    note('worker 2 SIGKILLed');
    const takenMs = handedOver(b, workers[1]?.pid ?? 0, killedAt);
    // The SIGTERM comes once the killed worker's lease has ended and its share was taken, so that
    // each handover is measured on its own.
    await reach(0.6);
    await r.sleep(killedAt + (o.leaseSeconds + 3) * 1000 - performance.now());
    const stopped = await pathsOwnedBy(b, workers[2]?.pid ?? 0);
    const stoppedAt = performance.now();
    await workers[2]?.stop('SIGTERM');
    note('worker 3 stopped (SIGTERM)');
    const arrived = await arrivalsOf(b.receiver, expected, Math.max(30_000, o.leaseSeconds * 3000));
    note('last arrival');
    for (const e of b.receiver.excesses)
      r.log(
        `rebalance: over the bound ${JSON.stringify({ ...e, at: (e.at - t0) / 1000, open: e.open.map((x) => ({ ...x, since: (x.since - t0) / 1000 })) })}`,
      );
    const all = b.receiver.arrivals;
    const firstAttempt = new Map<string, number>();
    for (const a of all) if (!firstAttempt.has(a.deliveryId)) firstAttempt.set(a.deliveryId, a.attempt);
    return {
      date: new Date().toISOString(),
      settings: { ...scale, deliveries: expected, leaseSeconds: o.leaseSeconds },
      lost: expected - arrived.length,
      duplicates: all.length - arrived.length,
      /** Deliveries whose first arrival carried X-SVC-Attempt above 1: attempts counted but not sent. */
      firstArrivalAfterFirstAttempt: [...firstAttempt.values()].filter((n) => n > 1).length,
      maxInFlightPerWebhook: Math.max(0, ...b.receiver.maxInFlight.values()),
      ...resumption(all, killedAt, killed),
      /** When the killed worker's partitions all had an owner again (s after the kill). */
      takenSeconds: await takenMs.then((ms) => (ms === null ? null : r.round(ms / 1000, 2))),
      /** The same after the SIGTERM, for the stopped worker's webhooks: its share is handed back at once. */
      stoppedResumedSeconds: resumption(all, stoppedAt, stopped).resumedSeconds,
      events,
    };
  } finally {
    await stopEach(children);
  }
}

// The record.

/** Issue 39's goals for scale-out: n workers at this many times one worker's rate. */
const SCALE_GOALS: Record<number, number> = { 2: 1.8, 4: 3.2 };

function targets(x: WebhookResult): r.Target[] {
  const targets: r.Target[] = [];
  const [reference, serve, withWorker] = ['reference', 'serve', 'serve+1'].map((n) =>
    x.fast?.configurations.find((c) => c.name === n),
  );
  if (reference && serve && withWorker) {
    const rates = (c: typeof serve) => c.rounds.map((round) => round.drain.perSecond);
    const share = r.shareByRound(rates(withWorker), rates(serve));
    const ofReference = serve.ofReference ?? 0;
    targets.push(
      ['Fast receivers: serve, drain', '>= 90% of the reference', r.pct(ofReference), ofReference >= 0.9],
      ['Fast receivers: serve + 1 worker, drain', '>= 100% of serve', r.pct(share), share >= 1],
    );
  }
  const runs = x.scaleOut?.runs ?? [];
  const one = runs.find((run) => run.workers === 1)?.perSecond;
  for (const run of runs) {
    const goal = SCALE_GOALS[run.workers];
    if (!one || !goal) continue;
    const times = r.round(run.perSecond / one, 2);
    const value = `${times}x (${r.int(run.perSecond)} of ${r.int(one)}/s)`;
    targets.push([
      `Scale-out: ${run.workers} workers`,
      `>= ${goal}x one worker`,
      value,
      run.missing === 0 && times >= goal,
    ]);
  }
  const b = x.rebalance;
  if (b) {
    const { deliveries, perWebhook, leaseSeconds } = b.settings;
    const resumed = b.resumedSeconds;
    targets.push(
      ['Rebalancing: deliveries lost', '0', `${b.lost} of ${r.int(deliveries)}`, b.lost === 0],
      [
        'Rebalancing: most attempts in flight at one webhook (receiver)',
        `<= ${perWebhook}`,
        String(b.maxInFlightPerWebhook),
        b.maxInFlightPerWebhook <= perWebhook,
      ],
      [
        "Rebalancing: the killed worker's webhooks resume",
        // Its partitions free when its lease ends, at the next beat of another worker (every second).
        `when its lease ends (${leaseSeconds} s, + 1 s beat)`,
        resumed === null ? 'no webhook had work left after the kill' : `${resumed} s`,
        resumed === null ? null : resumed <= leaseSeconds + 1,
      ],
    );
  }
  return targets;
}

const us = (c: { nodeUs: number; postgresUs: number }) => `${r.int(c.nodeUs)} / ${r.int(c.postgresUs)}`;

function render(x: WebhookResult): string {
  const { fast: f, scaleOut: so, rebalance: b } = x;
  const one = so?.runs.find((run) => run.workers === 1)?.perSecond || 1;
  const cpu = so?.runs.at(-1)?.cpu;
  return [
    `PostgreSQL, ${r.conditions(x.date, x.machine, 'npm run bench:webhooks')}`,
    r.targetTable(targets(x)),
    f &&
      `**Fast receivers** (${r.utc(f.date)}): ${f.settings.webhooks} webhooks answering at once, drain of ` +
        `${r.int(f.settings.drainEvents * f.settings.webhooks)} deliveries, latency at ${f.settings.rate} events/s ` +
        `for ${f.settings.latencySeconds} s, ${f.settings.rounds} round(s), medians.\n\n` +
        r.table(
          'Configuration|drain deliveries/s|of reference|p99 commit to arrival, ms|feed write p99, ms|CPU µs/delivery (Node / PostgreSQL)|machine busy',
          f.configurations.map((c) => [
            c.label,
            r.int(c.drainPerSecond),
            r.pct(c.ofReference),
            c.latencyP99,
            c.feedP99,
            us(c.cpu),
            r.pct(c.cpu.machineBusy),
          ]),
        ) +
        '\n\n![fast receivers](bench/results/webhooks-fast.svg)',
    so &&
      `**Scale-out** (${r.utc(so.date)}): ${r.int(so.settings.deliveries)} deliveries to ${so.settings.webhooks} ` +
        `webhooks in ${so.settings.organizations} organizations answering in ${so.settings.answerMs} ms, ` +
        `${so.settings.workerConcurrency} attempts in flight per \`svc worker\`, serve's worker off. Rate from ` +
        'every worker ready to the last arrival.\n\n' +
        r.table(
          'svc worker processes|deliveries/s|of one worker|in-flight bound, /s|CPU µs/delivery (Node / PostgreSQL)|machine busy|missing',
          so.runs.map((run) => [
            run.workers,
            r.int(run.perSecond),
            `${r.round(run.perSecond / one, 2)}x`,
            r.int(run.boundPerSecond),
            us(run.cpu),
            r.pct(run.cpu.machineBusy),
            run.missing,
          ]),
        ) +
        // What 16-core hosts would deliver if CPU per delivery stayed as measured (only CPU, on paper).
        (cpu && cpu.postgresUs > 0 && cpu.nodeUs > 0
          ? `\n\nOn paper, from the last row's CPU per delivery: one 16-core PostgreSQL host ${r.int(16e6 / cpu.postgresUs)} ` +
            `deliveries/s, each 16-core worker host ${r.int(16e6 / cpu.nodeUs)}/s (CPU only; measured on a shared machine).`
          : '') +
        '\n\n![scale-out](bench/results/webhooks-scale-out.svg)',
    b &&
      `**Rebalancing** (${r.utc(b.date)}): ${r.int(b.settings.deliveries)} deliveries to ${b.settings.webhooks} webhooks ` +
        `answering in ${b.settings.answerMs} ms, lease ${b.settings.leaseSeconds} s; ` +
        `${b.events.map((e) => `${e.what} at ${e.at} s`).join(', ')}. ` +
        `Lost ${b.lost}, duplicates ${b.duplicates}, first arrivals with an attempt above 1: ${b.firstArrivalAfterFirstAttempt}; ` +
        `most attempts in flight at one webhook ${b.maxInFlightPerWebhook} (bound ${b.settings.perWebhook}); ` +
        `after the kill its partitions had new owners within ${b.takenSeconds ?? '-'} s and every webhook of the killed worker with work left had a delivery within ${b.resumedSeconds ?? '-'} s ` +
        `(${b.webhooksPausedOverSecond} waited over 1 s); after the SIGTERM every webhook of the stopped worker ` +
        `within ${b.stoppedResumedSeconds ?? '-'} s.`,
  ]
    .filter(Boolean)
    .join('\n\n');
}

function charts(x: WebhookResult): (r.Chart | null)[] {
  const one = x.scaleOut?.runs.find((run) => run.workers === 1)?.perSecond ?? 0;
  return [
    x.fast && {
      file: 'webhooks-fast.svg',
      title: 'Drain to fast receivers, deliveries/s (median of rounds)',
      bars: x.fast.configurations.map((c) => ({ label: c.label, value: c.drainPerSecond })),
    },
    x.scaleOut && {
      file: 'webhooks-scale-out.svg',
      title: `Scale-out: deliveries/s, receivers answering in ${x.scaleOut.settings.answerMs} ms`,
      bars: x.scaleOut.runs.map((run) => ({
        label: `${run.workers} svc worker${run.workers > 1 ? 's' : ''}`,
        value: run.perSecond,
        text: `${r.int(run.perSecond)} (${r.round(run.perSecond / (one || 1), 2)}x)`,
        target: one * (SCALE_GOALS[run.workers] ?? 0),
      })),
    },
  ];
}

r.runMain(o, main);

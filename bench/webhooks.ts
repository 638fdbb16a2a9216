// npm run bench:webhooks [-- --db postgres|pglite|both --events 800 --rate 200 --latency-seconds 5 ...]
//
// Webhook delivery: booking changes pushed through the platform feed reach a local HTTPS receiver.
// For each database: the service as operators run it (serve, plus `svc worker` processes on
// PostgreSQL), a fresh organization with N webhooks on the receiver, then per configuration of
// workers a latency phase (open model, a fixed rate of feed writes) and a throughput burst; at the
// end the ceiling, a plain undici client sending the same requests to the same receiver.
import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import pg from 'pg';
import { Pool } from 'undici';
import { bookingBody } from '../test/support/feed.js';
import type { Child } from './lib/child.js';
import { type Arrival, type BenchReceiver, startBenchReceiver } from './lib/receiver.js';
import { machine } from './lib/report.js';
import {
  type BurstResult,
  type CeilingResult,
  type ConfigurationResult,
  type DbKind,
  evaluateTargets,
  type LatencyResult,
  latestWebhookResults,
  percentiles,
  renderRun,
  renderSection,
  saveWebhookResult,
  type WebhookRunResult,
  withSection,
} from './lib/webhook-report.js';
import {
  type BenchDatabase,
  cpuMs,
  type ServiceEnv,
  serviceEnv,
  startServe,
  startWorkerProcess,
} from './lib/webhook-service.js';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const RESULTS = join(ROOT, 'bench', 'results');
const SCOPES = ['bookings:read', 'webhooks:read', 'webhooks:write', 'pricing:read', 'passengers:read'];
/** The service's defaults (src/config.ts), used unless --concurrency / --per-webhook say otherwise. */
const DEFAULT_CONCURRENCY = 32;
const DEFAULT_PER_WEBHOOK = 4;
const DEFAULT_TIMEOUT_MS = 10_000;

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'both' },
    events: { type: 'string' },
    rate: { type: 'string', default: '200' },
    'latency-seconds': { type: 'string' },
    'low-rate': { type: 'string' },
    'low-seconds': { type: 'string', default: '3' },
    webhooks: { type: 'string', default: '4' },
    'feed-concurrency': { type: 'string', default: '16' },
    workers: { type: 'string', default: '0,1,2' },
    concurrency: { type: 'string' },
    'per-webhook': { type: 'string' },
    'ceiling-seconds': { type: 'string', default: '3' },
    'wait-seconds': { type: 'string', default: '20' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/svc_bench_webhooks' },
    'skip-build': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
    'report-only': { type: 'boolean', default: false },
    profile: { type: 'string' },
  },
});

const log = (line: string) => process.stderr.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

function positive(name: string, raw: string | undefined): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
  return n;
}

/**
 * Sizes that keep each phase to a few seconds on 2 shared cores. PGlite runs the feed, the worker and
 * the database in one thread at about a tenth of PostgreSQL's rate, so it gets less of everything.
 */
const DEFAULTS: Record<
  DbKind,
  { events: number; latencySeconds: number; lowRate: number; warmUp: number; budgetSeconds: number }
> = {
  postgres: { events: 300, latencySeconds: 3, lowRate: 25, warmUp: 30, budgetSeconds: 150 },
  pglite: { events: 60, latencySeconds: 1, lowRate: 5, warmUp: 10, budgetSeconds: 60 },
};

const settings = {
  webhooks: positive('webhooks', args.webhooks),
  feedConcurrency: positive('feed-concurrency', args['feed-concurrency']),
  rate: positive('rate', args.rate),
  lowSeconds: positive('low-seconds', args['low-seconds']),
  concurrency: args.concurrency ? positive('concurrency', args.concurrency) : DEFAULT_CONCURRENCY,
  perWebhook: args['per-webhook'] ? positive('per-webhook', args['per-webhook']) : DEFAULT_PER_WEBHOOK,
  ceilingSeconds: positive('ceiling-seconds', args['ceiling-seconds']),
  waitMs: positive('wait-seconds', args['wait-seconds']) * 1000,
};

// ---------------------------------------------------------------------------------------------
// Setup: database, service, tenant, webhooks.

async function recreateDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const quoted = `"${name.replaceAll('"', '""')}"`;
    await client.query(`DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${quoted}`);
  } finally {
    await client.end();
  }
}

interface Tenant {
  organizationId: string;
  code: string;
  key: string;
}

async function call(url: string, method: string, token: string, body?: unknown): Promise<unknown> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return JSON.parse(text);
}

async function createTenant(s: ServiceEnv, receiver: BenchReceiver): Promise<Tenant> {
  const op = (path: string, body: unknown) => call(`${s.operatorUrl}${path}`, 'POST', s.operatorToken, body);
  const code = String(10_000 + Math.floor(Math.random() * 89_999));
  const org = (await op('/organizations', {
    code,
    name: 'Webhook benchmark',
    webhooks_enabled: true,
    outbox_enabled: true,
  })) as { id: string };
  const integration = (await op(`/organizations/${org.id}/integrations`, {
    name: 'Webhook benchmark',
    kind: 'erp',
    scopes: SCOPES,
  })) as { id: string };
  const key = (await op(`/integrations/${integration.id}/keys`, {
    name: 'benchmark',
    scopes: SCOPES,
    environment: 'live',
  })) as { key: string };
  for (let i = 0; i < settings.webhooks; i++) {
    await call(`${s.baseUrl}/webhooks`, 'POST', key.key, { url: receiver.url(`/h/${i}`), events: ['*'] });
  }
  return { organizationId: org.id, code, key: key.key };
}

// ---------------------------------------------------------------------------------------------
// The feed.

interface Sent {
  phase: string;
  sentAt: number;
  answeredAt: number;
  answeredWall: number;
  status: number;
}

class Feed {
  readonly pool: Pool;
  readonly sent = new Map<string, Sent>();
  private seq = 0;

  constructor(
    private readonly s: ServiceEnv,
    private readonly tenant: Tenant,
  ) {
    const origin = new URL(s.operatorUrl).origin;
    this.pool = new Pool(origin, { connections: 64 });
  }

  /** One booking creation: one event. Resolves when the PUT has answered. */
  async put(phase: string): Promise<void> {
    const id = randomUUID();
    this.seq += 1;
    const body = JSON.stringify(
      bookingBody({ reference: `${this.tenant.code}${String(this.seq).padStart(8, '0')}` }),
    );
    const record: Sent = { phase, sentAt: performance.now(), answeredAt: 0, answeredWall: 0, status: 0 };
    this.sent.set(id, record);
    try {
      const res = await this.pool.request({
        path: `${new URL(this.s.operatorUrl).pathname}/organizations/${this.tenant.organizationId}/bookings/${id}`,
        method: 'PUT',
        headers: { authorization: `Bearer ${this.s.operatorToken}`, 'content-type': 'application/json' },
        body,
      });
      await res.body.dump();
      record.status = res.statusCode;
    } catch {
      record.status = -1;
    }
    record.answeredAt = performance.now();
    record.answeredWall = Date.now();
  }

  /** `count` writes with at most `concurrency` in flight. */
  async burst(phase: string, count: number, concurrency: number): Promise<void> {
    let left = count;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left > 0) {
          left -= 1;
          await this.put(phase);
        }
      }),
    );
  }

  /** Open model: a write every 1000/rate ms whatever the answers, for `seconds`. */
  async steady(phase: string, rate: number, seconds: number): Promise<number> {
    const total = rate * seconds;
    const gapMs = 1000 / rate;
    const inFlight: Promise<void>[] = [];
    const start = performance.now();
    let sent = 0;
    while (sent < total) {
      const due = Math.min(total, Math.floor((performance.now() - start) / gapMs) + 1);
      while (sent < due) {
        inFlight.push(this.put(phase));
        sent += 1;
      }
      await sleep(1);
    }
    const sendingSeconds = (performance.now() - start) / 1000;
    await Promise.all(inFlight);
    return total / sendingSeconds;
  }

  events(phase: string): Sent[] {
    return [...this.sent.values()].filter((s) => s.phase === phase);
  }
}

// ---------------------------------------------------------------------------------------------
// Arrivals of one phase.

interface Delivered {
  arrival: Arrival;
  sent: Sent;
  /** The event's stamp, set when it was published (database clock). */
  publishedMs: number;
  /** The booking's created_at: now() of the feed's transaction, so before its commit (database clock). */
  txStartMs: number;
}

/** Waits until every (webhook, event) of the phase arrived once, or the wait runs out. */
async function collect(
  receiver: BenchReceiver,
  feed: Feed,
  phase: string,
  from: number,
  expected: number,
): Promise<{ delivered: Delivered[]; duplicates: number; complete: boolean }> {
  const seen = new Set<string>();
  const delivered: Delivered[] = [];
  let duplicates = 0;
  let next = from;
  const take = () => {
    for (; next < receiver.arrivals.length; next++) {
      const a = receiver.arrivals[next] as Arrival;
      if (!a.path.startsWith('/h/')) continue;
      const body = JSON.parse(a.body) as {
        resource: { id: string };
        created_at: string;
        data: { created_at: string } | null;
      };
      const sent = feed.sent.get(body.resource.id);
      if (!sent || sent.phase !== phase) continue;
      const key = `${a.path} ${a.headers['x-svc-event-id']}`;
      if (seen.has(key)) {
        duplicates += 1;
        continue;
      }
      seen.add(key);
      delivered.push({
        arrival: a,
        sent,
        publishedMs: Date.parse(body.created_at),
        txStartMs: body.data ? Date.parse(body.data.created_at) : Number.NaN,
      });
    }
    return delivered.length >= expected;
  };
  const complete = await receiver.until(take, settings.waitMs);
  take();
  if (!complete) {
    // Not measured any more, but the next phase must not start with this one's backlog.
    log(`  ${phase}: ${delivered.length} of ${expected} arrived in the wait; letting the queue drain`);
    let count = receiver.arrivals.length;
    let quietSince = performance.now();
    await receiver.until(() => {
      if (receiver.arrivals.length !== count) {
        count = receiver.arrivals.length;
        quietSince = performance.now();
      }
      return performance.now() - quietSince > 1000;
    }, 15_000);
  }
  return { delivered, duplicates, complete };
}

// ---------------------------------------------------------------------------------------------
// CPU and transactions.

interface Probe {
  serve: Child;
  workers: Child[];
  pgClient: pg.Client | null;
  dbName: string;
}

interface Snapshot {
  serve: number | null;
  workers: number | null;
  postgres: Map<number, number>;
  xacts: number | null;
}

async function snapshot(p: Probe): Promise<Snapshot> {
  const workerCpu = await Promise.all(p.workers.map((w) => cpuMs(w.pid)));
  const postgres = new Map<number, number>();
  let xacts: number | null = null;
  if (p.pgClient) {
    const pids = await p.pgClient.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = $1',
      [p.dbName],
    );
    for (const { pid } of pids.rows) {
      const used = await cpuMs(pid);
      if (used !== null) postgres.set(pid, used);
    }
    const [row] = (
      await p.pgClient.query<{ n: string }>(
        'SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = $1',
        [p.dbName],
      )
    ).rows;
    xacts = row ? Number(row.n) : null;
  }
  return {
    serve: await cpuMs(p.serve.pid),
    workers: p.workers.length === 0 ? null : workerCpu.reduce<number>((s, x) => s + (x ?? 0), 0),
    postgres,
    xacts,
  };
}

/** CPU of backends seen at either end; a backend that came and went in between is missed. */
function postgresDelta(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? ms);
  return total;
}

// ---------------------------------------------------------------------------------------------
// Phases.

async function latencyPhase(
  name: string,
  receiver: BenchReceiver,
  feed: Feed,
  rate: number,
  seconds: number,
): Promise<{ result: LatencyResult; delivered: Delivered[] }> {
  const phase = `${name}/latency-${rate}`;
  const from = receiver.arrivals.length;
  const achieved = await feed.steady(phase, rate, seconds);
  const events = feed.events(phase);
  const ok = events.filter((e) => e.status === 201);
  const expected = ok.length * settings.webhooks;
  const { delivered, complete } = await collect(receiver, feed, phase, from, expected);
  const missing = expected - delivered.length;
  const result: LatencyResult = {
    targetEventsPerSecond: rate,
    seconds,
    events: events.length,
    achievedEventsPerSecond: round(achieved),
    expected,
    delivered: delivered.length,
    feedFailures: events.length - ok.length,
    fromCommitMs: percentiles(
      delivered.map((d) => d.arrival.at - d.sent.answeredAt),
      missing,
    ),
    fromSendMs: percentiles(
      delivered.map((d) => d.arrival.at - d.sent.sentAt),
      missing,
    ),
    fromTxStartMs: percentiles(
      delivered.filter((d) => Number.isFinite(d.txStartMs)).map((d) => d.arrival.wall - d.txStartMs),
      missing,
    ),
    commitToPublishMs: percentiles(delivered.map((d) => d.publishedMs - d.sent.answeredWall)),
    publishToArrivalMs: percentiles(
      delivered.map((d) => d.arrival.wall - d.publishedMs),
      missing,
    ),
    feedAnswerMs: percentiles(ok.map((e) => e.answeredAt - e.sentAt)),
    complete,
  };
  return { result, delivered };
}

async function burstPhase(
  name: string,
  receiver: BenchReceiver,
  feed: Feed,
  probe: Probe,
  count: number,
): Promise<{ result: BurstResult; delivered: Delivered[] }> {
  const phase = `${name}/burst`;
  const from = receiver.arrivals.length;
  const handshakes = receiver.tlsConnections();
  const before = await snapshot(probe);
  const feedStart = performance.now();
  await feed.burst(phase, count, settings.feedConcurrency);
  const feedEnd = performance.now();
  const atFeedEnd = await snapshot(probe);
  const events = feed.events(phase);
  const ok = events.filter((e) => e.status === 201);
  const expected = ok.length * settings.webhooks;
  const { delivered, duplicates, complete } = await collect(receiver, feed, phase, from, expected);
  // Backends report their counters to pg_stat_database within a second of going idle.
  await sleep(1200);
  const after = await snapshot(probe);

  const times = delivered.map((d) => d.arrival.at).sort((a, b) => a - b);
  const first = times[0] ?? 0;
  const last = times.at(-1) ?? 0;
  const firstToLast = (last - first) / 1000;
  const late = times.filter((t) => t > feedEnd);
  const perDelivery = (x: number | null) =>
    x === null || delivered.length === 0 ? null : round(x / delivered.length, 3);
  const sub = (a: number | null, b: number | null) => (a === null || b === null ? null : a - b);
  const perLate = (x: number | null) => (x === null || late.length === 0 ? null : round(x / late.length, 3));
  const result: BurstResult = {
    events: events.length,
    expected,
    delivered: delivered.length,
    duplicates,
    newTlsConnections: receiver.tlsConnections() - handshakes,
    feedFailures: events.length - ok.length,
    feedSeconds: round((feedEnd - feedStart) / 1000, 2),
    feedEventsPerSecond: round(events.length / ((feedEnd - feedStart) / 1000)),
    firstToLastSeconds: round(firstToLast, 2),
    deliveriesPerSecond: firstToLast > 0 ? round((delivered.length - 1) / firstToLast) : 0,
    afterFeed:
      late.length >= 50
        ? {
            deliveries: late.length,
            seconds: round((last - feedEnd) / 1000, 2),
            deliveriesPerSecond: round(late.length / ((last - feedEnd) / 1000)),
          }
        : null,
    cpuMsPerDelivery: {
      serve: perDelivery(sub(after.serve, before.serve)),
      workers: perDelivery(sub(after.workers, before.workers)),
      postgres: probe.pgClient ? perDelivery(postgresDelta(before.postgres, after.postgres)) : null,
    },
    xactsPerDelivery: perDelivery(sub(after.xacts, before.xacts)),
    drain:
      late.length >= 50
        ? {
            cpuMsPerDelivery: {
              serve: perLate(sub(after.serve, atFeedEnd.serve)),
              workers: perLate(sub(after.workers, atFeedEnd.workers)),
              postgres: probe.pgClient ? perLate(postgresDelta(atFeedEnd.postgres, after.postgres)) : null,
            },
            xactsPerDelivery: perLate(sub(after.xacts, atFeedEnd.xacts)),
          }
        : null,
    complete,
  };
  return { result, delivered };
}

async function warmUp(receiver: BenchReceiver, feed: Feed, phase: string, events: number): Promise<void> {
  const from = receiver.arrivals.length;
  await feed.burst(phase, events, Math.min(events, settings.feedConcurrency));
  const ok = feed.events(phase).filter((e) => e.status === 201).length;
  await collect(receiver, feed, phase, from, ok * settings.webhooks);
}

// ---------------------------------------------------------------------------------------------
// The ceiling.

const run = promisify(execFile);

async function ceiling(
  receiver: BenchReceiver,
  captures: Delivered[],
  concurrency: number,
): Promise<CeilingResult> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-webhooks-'));
  try {
    const file = join(dir, 'captures.json');
    const kept = ['content-type', 'user-agent'];
    await writeFile(
      file,
      JSON.stringify(
        captures.map(({ arrival: a }) => ({
          // Another path, so these arrivals are never taken for deliveries.
          path: a.path.replace('/h/', '/c/'),
          headers: Object.fromEntries(
            Object.entries(a.headers).filter(([k]) => kept.includes(k) || k.startsWith('x-svc-')),
          ),
          body: a.body,
        })),
      ),
    );
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        join(ROOT, 'bench', 'webhook-ceiling.ts'),
        file,
        receiver.origin,
        receiver.caFile,
        String(concurrency),
        String(settings.ceilingSeconds),
        '1',
      ],
      { cwd: ROOT, env: { PATH: process.env.PATH } },
    );
    return { concurrency, ...(JSON.parse(stdout.trim()) as Omit<CeilingResult, 'concurrency'>) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------

async function measure(kind: DbKind, receiver: BenchReceiver): Promise<WebhookRunResult> {
  const loadStart = loadavg();
  const date = new Date().toISOString();
  const defaults = DEFAULTS[kind];
  const burstEvents = args.events ? positive('events', args.events) : defaults.events;
  const latencySeconds = args['latency-seconds']
    ? positive('latency-seconds', args['latency-seconds'])
    : defaults.latencySeconds;
  /** A second, lower rate (0: none): the engine's latency when it is not saturated. */
  const lowRate = args['low-rate'] === undefined ? defaults.lowRate : Number(args['low-rate']) || 0;
  let dataDir: string | null = null;
  let database: BenchDatabase;
  if (kind === 'postgres') {
    await recreateDatabase(args['database-url']);
    database = { kind, url: args['database-url'] };
  } else {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-webhooks-pglite-'));
    database = { kind, dataDir };
  }
  const extra: Record<string, string> = {};
  if (args.concurrency) extra.SVC_WEBHOOK_CONCURRENCY = String(settings.concurrency);
  if (args['per-webhook']) extra.SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK = String(settings.perWebhook);
  const s = await serviceEnv(database, receiver.caFile, extra);
  const profileDir = args.profile ? resolve(args.profile) : undefined;
  if (profileDir) await mkdir(profileDir, { recursive: true });

  const workerCounts = kind === 'postgres' ? args.workers.split(',').map((w) => Number(w)) : [0];
  const serve = await startServe(ROOT, s, profileDir);
  running.add(serve);
  const workers: Child[] = [];
  let pgClient: pg.Client | null = null;
  const configurations: ConfigurationResult[] = [];
  const skipped: string[] = [];
  let feed: Feed | null = null;
  try {
    if (kind === 'postgres') {
      pgClient = new pg.Client({ connectionString: args['database-url'] });
      await pgClient.connect();
    }
    const tenant = await createTenant(s, receiver);
    feed = new Feed(s, tenant);
    const probe: Probe = {
      serve,
      workers,
      pgClient,
      dbName: decodeURIComponent(new URL(args['database-url']).pathname.slice(1)),
    };
    log(`${kind}: service up, ${settings.webhooks} webhooks on ${receiver.origin}; warming up`);
    await warmUp(receiver, feed, 'warm-up', defaults.warmUp);

    const deadline = performance.now() + defaults.budgetSeconds * 1000;
    for (const count of workerCounts) {
      if (configurations.length > 0 && performance.now() > deadline) {
        skipped.push(count === 0 ? 'serve (embedded worker)' : `serve + ${count} svc workers`);
        log(`${kind}: time budget spent, skipping the configuration with ${count} svc workers`);
        continue;
      }
      while (workers.length < count) {
        const w = await startWorkerProcess(ROOT, s, profileDir);
        running.add(w);
        workers.push(w);
      }
      while (workers.length > count) await workers.pop()?.stop();
      if (count > 0) await warmUp(receiver, feed, `warm-up-${count}`, defaults.warmUp);
      const name = count === 0 ? 'embedded' : `workers-${count}`;
      const label =
        count === 0 ? 'serve (embedded worker)' : `serve + ${count} svc worker${count > 1 ? 's' : ''}`;
      const deliveryWorkers = count + 1;
      const inFlightLimit = Math.min(
        deliveryWorkers * settings.concurrency,
        settings.webhooks * settings.perWebhook,
      );
      await sleep(500);
      const latencies: LatencyResult[] = [];
      for (const [rate, seconds] of [
        [settings.rate, latencySeconds],
        [lowRate, settings.lowSeconds],
      ] as const) {
        if (rate <= 0) continue;
        const { result } = await latencyPhase(name, receiver, feed, rate, seconds);
        log(
          `${kind} ${label}: latency at ${result.achievedEventsPerSecond} events/s: ` +
            `p50 ${result.fromCommitMs.p50} ms, p99 ${result.fromCommitMs.p99} ms ` +
            `(${result.delivered}/${result.expected})`,
        );
        latencies.push(result);
        await sleep(1000);
      }
      await sleep(1500);
      const burst = await burstPhase(name, receiver, feed, probe, burstEvents);
      log(
        `${kind} ${label}: burst ${burst.result.delivered}/${burst.result.expected} deliveries, ` +
          `${burst.result.deliveriesPerSecond}/s (feed ${burst.result.feedEventsPerSecond} events/s)`,
      );
      // The ceiling right away, with the service idle, so both see the same machine.
      const ceilingResult = await ceiling(receiver, burst.delivered.slice(-2000), inFlightLimit);
      log(
        `${kind} ${label}: ceiling at ${inFlightLimit} in flight: ${ceilingResult.requestsPerSecond} req/s`,
      );
      const share = (x: number) =>
        ceilingResult.requestsPerSecond > 0 ? round(x / ceilingResult.requestsPerSecond, 3) : 0;
      configurations.push({
        name,
        label,
        workerProcesses: count,
        deliveryWorkers,
        inFlightLimit,
        latency: latencies[0] as LatencyResult,
        lowRateLatency: latencies[1] ?? null,
        burst: burst.result,
        ceiling: ceilingResult,
        ofCeiling: share(burst.result.deliveriesPerSecond),
        afterFeedOfCeiling: burst.result.afterFeed ? share(burst.result.afterFeed.deliveriesPerSecond) : null,
      });
    }
  } finally {
    await feed?.pool.close();
    await pgClient?.end();
    for (const w of workers) await w.stop();
    await serve.stop();
    for (const c of [serve, ...workers]) running.delete(c);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }

  return {
    benchmark: 'webhook-delivery',
    db: kind,
    date,
    machine: machine(),
    loadAverage: { start: loadStart.map((x) => round(x, 2)), end: loadavg().map((x) => round(x, 2)) },
    settings: {
      webhooks: settings.webhooks,
      scopes: SCOPES,
      feedConcurrency: settings.feedConcurrency,
      burstEvents,
      latencyEventsPerSecond: settings.rate,
      latencySeconds,
      waitMs: settings.waitMs,
      lowEventsPerSecond: lowRate,
      lowSeconds: settings.lowSeconds,
      workerConcurrency: settings.concurrency,
      concurrencyPerWebhook: settings.perWebhook,
      webhookTimeoutMs: DEFAULT_TIMEOUT_MS,
    },
    configurations,
    skipped,
    targets: evaluateTargets(configurations),
  };
}

async function main(): Promise<void> {
  const kinds: DbKind[] =
    args.db === 'both'
      ? ['postgres', 'pglite']
      : args.db === 'postgres' || args.db === 'pglite'
        ? [args.db]
        : [];
  if (kinds.length === 0) throw new Error('--db must be postgres, pglite or both');
  if (args['report-only']) {
    await writeSection();
    return;
  }
  if (!args['skip-build']) {
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  const receiver = await startBenchReceiver(ROOT);
  const results: WebhookRunResult[] = [];
  try {
    for (const kind of kinds) {
      const result = await measure(kind, receiver);
      results.push(result);
      if (!args['dry-run']) {
        await mkdir(RESULTS, { recursive: true });
        log(`saved ${await saveWebhookResult(RESULTS, result)}`);
      }
    }
  } finally {
    await receiver.close();
  }
  if (args['dry-run']) {
    process.stdout.write(`${results.map(renderRun).join('\n\n')}\n`);
    return;
  }
  await writeSection();
  process.stdout.write(`${results.map(renderRun).join('\n\n')}\n`);
}

/** The "Webhook delivery" section of BENCHMARKS.md from the newest results and the analysis. */
async function writeSection(): Promise<void> {
  const latest = await latestWebhookResults(RESULTS, await readdir(RESULTS));
  const analysis = await readFile(join(ROOT, 'bench', 'webhooks-analysis.md'), 'utf8').catch(() => '');
  const file = join(ROOT, 'BENCHMARKS.md');
  const current = await readFile(file, 'utf8').catch(() => '# Benchmarks\n');
  await writeFile(file, withSection(current, renderSection(latest, analysis)));
  log(`updated the "Webhook delivery" section of ${file}`);
}

/** The service's processes, stopped (by their pids) when the run is interrupted. */
const running = new Set<Child>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping ${running.size} service processes`);
    void Promise.all([...running].map((c) => c.stop())).finally(() => process.exit(130));
  });
}

main().catch((error) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});

// npm run bench:webhooks [-- --db postgres|pglite|both --events 800 --rate 200 --only ref|engine --quick ...]
//
// Webhook delivery: booking changes pushed through the platform feed reach a local HTTPS receiver.
// On PostgreSQL first the reference (graphile-worker + undici in a process of its own, fed by
// transactions that add one job per webhook: bench/lib/reference.ts), then the service as operators
// run it (serve, plus `svc worker` processes on PostgreSQL), each configuration started afresh, with
// the same receiver, webhooks, bodies and in-flight bound. Phases of each configuration: a latency
// phase (open model, a fixed rate of feed writes), a throughput burst, the ceiling (a plain undici
// client sending the same requests to the same receiver) and a drain (events queued while nothing
// delivers, then the delivering processes started and timed until the queue is empty).
import { execFile, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import pg from 'pg';
import { Pool } from 'undici';
import { bookingBody } from '../test/support/feed.js';
import type { Child } from './lib/child.js';
import { median } from './lib/load.js';
import { type Arrival, type BenchReceiver, SLOW_PREFIX, startBenchReceiver } from './lib/receiver.js';
import {
  REFERENCE_SCHEMA,
  referenceWebhooks,
  referenceWriter,
  resetReference,
  startReferenceWorker,
} from './lib/reference.js';
import { machine } from './lib/report.js';
import {
  type BurstResult,
  type CeilingResult,
  type ConfigurationResult,
  type CpuShare,
  type DbKind,
  type DrainResult,
  evaluateTargets,
  type LatencyResult,
  latestWebhookResults,
  percentiles,
  renderRun,
  renderSection,
  type SlowDrainResult,
  saveWebhookResult,
  type WebhookRunResult,
  withSection,
} from './lib/webhook-report.js';
import {
  autovacuumSetting,
  type BenchDatabase,
  cpuMs,
  recreateDatabase,
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
    only: { type: 'string' },
    quick: { type: 'boolean', default: false },
    events: { type: 'string' },
    'drain-events': { type: 'string' },
    rate: { type: 'string', default: '200' },
    'latency-seconds': { type: 'string' },
    'low-rate': { type: 'string' },
    'low-seconds': { type: 'string', default: '3' },
    webhooks: { type: 'string', default: '4' },
    'feed-concurrency': { type: 'string', default: '16' },
    workers: { type: 'string', default: '0,1,2' },
    'slow-webhooks': { type: 'string', default: '24' },
    'slow-ms': { type: 'string', default: '100' },
    'slow-events': { type: 'string' },
    concurrency: { type: 'string' },
    'per-webhook': { type: 'string' },
    'ref-local-queue': { type: 'string' },
    'ref-processes': { type: 'string', default: '1,2' },
    'ceiling-seconds': { type: 'string' },
    'settle-seconds': { type: 'string' },
    'wait-seconds': { type: 'string', default: '20' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/svc_bench_webhooks' },
    'skip-build': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
    'report-only': { type: 'boolean', default: false },
    profile: { type: 'string' },
    statements: { type: 'string' },
    windows: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '1' },
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

interface Sizes {
  events: number;
  drainEvents: number;
  latencySeconds: number;
  lowRate: number;
  warmUp: number;
  ceilingSeconds: number;
  /** Wait after a phase so that every backend has reported its transactions (see settle()). */
  settleSeconds: number;
  /** Events of the slow drain (each to every slow webhook); 0: no slow drain. */
  slowEvents: number;
}

/**
 * Sizes that keep the whole default run near 6 minutes on 2 shared cores. PGlite runs the feed, the
 * worker and the database in one thread at about a tenth of PostgreSQL's rate, so it gets less of
 * everything. --quick: a smoke run of the harness, figures not worth keeping.
 */
const DEFAULTS: Record<DbKind, Sizes> = {
  postgres: {
    events: 300,
    drainEvents: 1000,
    latencySeconds: 3,
    lowRate: 25,
    warmUp: 400,
    ceilingSeconds: 3,
    settleSeconds: 10.5,
    slowEvents: 200,
  },
  pglite: {
    events: 60,
    drainEvents: 150,
    latencySeconds: 1,
    lowRate: 5,
    warmUp: 60,
    ceilingSeconds: 3,
    settleSeconds: 0,
    slowEvents: 0,
  },
};
const QUICK: Sizes = {
  events: 60,
  drainEvents: 100,
  latencySeconds: 1,
  lowRate: 0,
  warmUp: 10,
  ceilingSeconds: 2,
  settleSeconds: 1,
  slowEvents: 10,
};

const settings = {
  webhooks: positive('webhooks', args.webhooks),
  feedConcurrency: positive('feed-concurrency', args['feed-concurrency']),
  rate: positive('rate', args.rate),
  lowSeconds: positive('low-seconds', args['low-seconds']),
  concurrency: args.concurrency ? positive('concurrency', args.concurrency) : DEFAULT_CONCURRENCY,
  perWebhook: args['per-webhook'] ? positive('per-webhook', args['per-webhook']) : DEFAULT_PER_WEBHOOK,
  waitMs: positive('wait-seconds', args['wait-seconds']) * 1000,
  slowWebhooks: positive('slow-webhooks', args['slow-webhooks']),
  slowMs: positive('slow-ms', args['slow-ms']),
};
/** Most attempts in flight of `processes` delivering processes to `webhooks` webhooks. */
const inFlightBound = (processes: number, webhooks: number) =>
  Math.min(processes * settings.concurrency, webhooks * settings.perWebhook);
/** The reference holds as many attempts in flight as the engine's per-webhook bound allows in all. */
const referenceConcurrency = settings.webhooks * settings.perWebhook;
const referenceLocalQueue = args['ref-local-queue']
  ? positive('ref-local-queue', args['ref-local-queue'])
  : referenceConcurrency * 4;
if (args.only !== undefined && args.only !== 'ref' && args.only !== 'engine') {
  throw new Error('--only must be ref or engine');
}
const runReference = args.only !== 'engine';
/**
 * How many processes the reference runs in, one configuration each: one is the yardstick; more show
 * what adding a delivering process gives a well-kept queue on the same machine (the in-flight bound
 * and the local queue split between them).
 */
const referenceProcesses = args['ref-processes'].split(',').map((p) => positive('ref-processes', p));
if (!referenceProcesses.includes(1)) throw new Error('--ref-processes must include 1 (the yardstick)');
const runEngine = args.only !== 'ref';

function sizes(kind: DbKind): Sizes {
  const base = args.quick ? QUICK : DEFAULTS[kind];
  const pick = (name: string, fallback: number) =>
    args[name as keyof typeof args] ? positive(name, args[name as keyof typeof args] as string) : fallback;
  return {
    events: pick('events', base.events),
    // --events alone sizes the drain too.
    drainEvents: pick('drain-events', args.events ? positive('events', args.events) : base.drainEvents),
    latencySeconds: pick('latency-seconds', base.latencySeconds),
    lowRate: args['low-rate'] === undefined ? base.lowRate : Number(args['low-rate']) || 0,
    warmUp: base.warmUp,
    ceilingSeconds: pick('ceiling-seconds', base.ceilingSeconds),
    settleSeconds:
      args['settle-seconds'] === undefined ? base.settleSeconds : Math.max(0, Number(args['settle-seconds'])),
    slowEvents: args['slow-events'] === undefined ? base.slowEvents : Number(args['slow-events']) || 0,
  };
}

// ---------------------------------------------------------------------------------------------
// Setup: database, service, tenant, webhooks.

interface Tenant {
  organizationId: string;
  code: string;
}

const WEBHOOKS_PER_INTEGRATION = 10;

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

/** An organization whose `webhooks` webhooks (every event) reach the receiver under `prefix`. */
async function createTenant(
  s: ServiceEnv,
  receiver: BenchReceiver,
  webhooks: number,
  prefix: string,
): Promise<Tenant> {
  const op = (path: string, body: unknown) => call(`${s.operatorUrl}${path}`, 'POST', s.operatorToken, body);
  const code = String(10_000 + Math.floor(Math.random() * 89_999));
  const org = (await op('/organizations', {
    code,
    name: 'Webhook benchmark',
    webhooks_enabled: true,
    outbox_enabled: true,
  })) as { id: string };
  // The contract allows an integration WEBHOOKS_PER_INTEGRATION webhooks: more take more integrations.
  for (let first = 0; first < webhooks; first += WEBHOOKS_PER_INTEGRATION) {
    const integration = (await op(`/organizations/${org.id}/integrations`, {
      name: `Webhook benchmark ${first / WEBHOOKS_PER_INTEGRATION + 1}`,
      kind: 'erp',
      scopes: SCOPES,
    })) as { id: string };
    const key = (await op(`/integrations/${integration.id}/keys`, {
      name: 'benchmark',
      scopes: SCOPES,
      environment: 'live',
    })) as { key: string };
    for (let i = first; i < Math.min(webhooks, first + WEBHOOKS_PER_INTEGRATION); i++) {
      await call(`${s.baseUrl}/webhooks`, 'POST', key.key, {
        url: receiver.url(`${prefix}${i}`),
        events: ['*'],
      });
    }
  }
  return { organizationId: org.id, code };
}

// ---------------------------------------------------------------------------------------------
// The feed: platform writes, each one event fanned out to every webhook.

interface Sent {
  phase: string;
  sentAt: number;
  answeredAt: number;
  answeredWall: number;
  status: number;
}

/** One write: resolves to 201 when the event is committed, anything else when it failed. */
type Write = (bookingId: string, reference: string) => Promise<number>;

/** The engine's feed: `PUT /operator/v1/organizations/{org}/bookings/{id}` on serve. */
function engineWriter(s: ServiceEnv, tenant: Tenant, pool: Pool): Write {
  const prefix = `${new URL(s.operatorUrl).pathname}/organizations/${tenant.organizationId}/bookings/`;
  return async (id, reference) => {
    try {
      const res = await pool.request({
        path: `${prefix}${id}`,
        method: 'PUT',
        headers: { authorization: `Bearer ${s.operatorToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(bookingBody({ reference })),
      });
      await res.body.dump();
      return res.statusCode;
    } catch {
      return -1;
    }
  };
}

class Feed {
  readonly sent = new Map<string, Sent>();
  private seq = 0;

  constructor(
    private readonly code: string,
    public write: Write,
  ) {}

  /** One booking creation: one event. Resolves when the write has answered. */
  async put(phase: string): Promise<void> {
    const id = randomUUID();
    this.seq += 1;
    const record: Sent = { phase, sentAt: performance.now(), answeredAt: 0, answeredWall: 0, status: 0 };
    this.sent.set(id, record);
    record.status = await this.write(id, `${this.code}${String(this.seq).padStart(8, '0')}`);
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

/**
 * Waits until every (webhook, event) of the phase arrived once, or the wait runs out (with
 * `untilStalled`: a whole wait passes without an arrival). `onFirst` runs at the first arrival of the
 * phase.
 */
async function collect(
  receiver: BenchReceiver,
  feed: Feed,
  prefix: string,
  phase: string,
  from: number,
  expected: number,
  onFirst?: () => void,
  untilStalled = false,
): Promise<{ delivered: Delivered[]; duplicates: number; complete: boolean }> {
  const seen = new Set<string>();
  const delivered: Delivered[] = [];
  let duplicates = 0;
  let next = from;
  const take = () => {
    for (; next < receiver.arrivals.length; next++) {
      const a = receiver.arrivals[next] as Arrival;
      if (!a.path.startsWith(prefix)) continue;
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
      if (delivered.length === 0) onFirst?.();
      delivered.push({
        arrival: a,
        sent,
        publishedMs: Date.parse(body.created_at),
        txStartMs: body.data ? Date.parse(body.data.created_at) : Number.NaN,
      });
    }
    return delivered.length >= expected;
  };
  let complete = false;
  // A long wait says how far it got, every 5 s.
  const progress = untilStalled
    ? setInterval(() => log(`  ${phase}: ${delivered.length} of ${expected} arrived`), 5000)
    : null;
  try {
    for (;;) {
      const arrived = delivered.length;
      complete = await receiver.until(take, settings.waitMs);
      if (complete || !untilStalled || delivered.length === arrived) break;
    }
  } finally {
    if (progress) clearInterval(progress);
  }
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

/** What one configuration runs: serve (null for the reference) and its delivering processes. */
interface Probe {
  serve: Child | null;
  workers: Child[];
  pgClient: pg.Client | null;
  dbName: string;
  /** Statements the probe itself ran (each one transaction): subtracted from the database's count. */
  queries: number;
}

interface Snapshot {
  serve: number | null;
  workers: number | null;
  postgres: Map<number, number>;
  xacts: number | null;
  probeQueries: number;
}

async function probeQuery<R extends pg.QueryResultRow>(p: Probe, sql: string, params: unknown[]) {
  p.queries += 1;
  return (p.pgClient as pg.Client).query<R>(sql, params);
}

/**
 * --statements: what each statement cost PostgreSQL from a drain's first arrival to its last
 * (pg_stat_statements, which must be preloaded and created in template1, so that the run's
 * database has it), appended to the file: calls, ms, rows, shared buffers hit and dirtied, WAL
 * records, and the statement's beginning.
 */
/** The --statements file, on PostgreSQL only (PGlite has no pg_stat_statements, and the probe no client). */
const statementsFile = (probe: Probe): string | undefined =>
  probe.pgClient !== null ? args.statements : undefined;

async function appendStatements(
  file: string,
  probe: Probe,
  phase: string,
  deliveries: number,
): Promise<void> {
  const top = await probeQuery<Record<string, unknown>>(
    probe,
    `SELECT calls, round(total_exec_time::numeric, 1) AS ms, rows, shared_blks_hit AS hit,
            shared_blks_dirtied AS dirtied, wal_records AS wal,
            regexp_replace(left(query, 100), '\\s+', ' ', 'g') AS statement
     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)
     ORDER BY total_exec_time DESC LIMIT 12`,
    [probe.dbName],
  );
  const header = `== ${phase}: ${deliveries} deliveries\ncalls | ms | rows | hit | dirtied | wal | statement\n`;
  await appendFile(file, `${header}${top.rows.map((r) => Object.values(r).join(' | ')).join('\n')}\n`);
}

async function snapshot(p: Probe): Promise<Snapshot> {
  const workerCpu = await Promise.all(p.workers.map((w) => cpuMs(w.pid)));
  const postgres = new Map<number, number>();
  let xacts: number | null = null;
  if (p.pgClient) {
    const pids = await probeQuery<{ pid: number }>(
      p,
      'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [p.dbName],
    );
    for (const { pid } of pids.rows) {
      const used = await cpuMs(pid);
      if (used !== null) postgres.set(pid, used);
    }
    const [row] = (
      await probeQuery<{ n: string }>(
        p,
        'SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = $1',
        [p.dbName],
      )
    ).rows;
    xacts = row ? Number(row.n) : null;
  }
  return {
    serve: p.serve ? await cpuMs(p.serve.pid) : null,
    workers: p.workers.length === 0 ? null : workerCpu.reduce<number>((s, x) => s + (x ?? 0), 0),
    postgres,
    xacts,
    probeQueries: p.queries,
  };
}

/**
 * CPU of the backends alive at the end: what each used since the first snapshot, all of it for one
 * that started after it (its start is the phase's cost too). A backend that came and went in
 * between is missed; pools keep their connections for minutes, so within a phase that is rare.
 */
function postgresDelta(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

/** The database's transactions between two snapshots, less the probe's own statements. */
function xactsBetween(before: Snapshot, after: Snapshot): number | null {
  if (before.xacts === null || after.xacts === null) return null;
  return after.xacts - before.xacts - (after.probeQueries - before.probeQueries);
}

const sub = (a: number | null, b: number | null) => (a === null || b === null ? null : a - b);
const per = (x: number | null, n: number, digits = 3) =>
  x === null || n === 0 ? null : round(x / n, digits);

function cpuBetween(before: Snapshot, after: Snapshot, n: number, withPostgres: boolean): CpuShare {
  return {
    serve: per(sub(after.serve, before.serve), n),
    workers: per(sub(after.workers, before.workers), n),
    postgres: withPostgres ? per(postgresDelta(before.postgres, after.postgres), n) : null,
  };
}

/**
 * PostgreSQL counts a backend's transactions in pg_stat_database when it reports them: at most once
 * a second while it works, 10 s after it went idle, and when it exits. So a phase's count is read
 * after every backend had time to report (or after the processes of the phase stopped).
 */
async function settle(sz: Sizes, alreadyMs = 0): Promise<void> {
  const left = sz.settleSeconds * 1000 - alreadyMs;
  if (left > 0) await sleep(left);
}

/**
 * Vacuums the bench's database, as a production server's autovacuum would between phases: after a
 * configuration's warm-up, and before each drain is queued (the slow drain, when there is one,
 * opens a configuration).
 * Every delivery's row is written three times and none of those updates is a heap-only one, so
 * the queue's partial indexes keep an entry for each dead version until a vacuum: without one,
 * each configuration met every earlier one's dead entries at every claim (four drains of the same
 * configuration one after the other, no vacuum: 4,082 / 3,310 / 3,299 / 2,714 deliveries/s), and
 * the configurations run last in a round looked slowest. The machines' PostgreSQL runs with
 * autovacuum off; the run's header says whether it was on.
 */
async function vacuum(p: Probe): Promise<void> {
  await p.pgClient?.query('VACUUM (ANALYZE)');
}

/** Waits until the processes that stopped have left PostgreSQL (a backend reports as it exits). */
async function backendsGone(p: Probe): Promise<void> {
  if (!p.pgClient) return;
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline) {
    const { rows } = await probeQuery<{ n: number }>(
      p,
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [p.dbName],
    );
    if ((rows[0]?.n ?? 0) === 0) break;
    await sleep(100);
  }
  await sleep(200);
}

// ---------------------------------------------------------------------------------------------
// Phases.

/** What a phase needs of its configuration. */
interface Subject {
  name: string;
  label: string;
  feed: Feed;
  /** Receiver path prefix of this subject's webhooks. */
  prefix: string;
  /** Webhooks each event of the feed goes to. */
  fanOut: number;
  /** Processes that deliver once started. */
  deliveringProcesses: number;
  /** The feed of the slow drain's organization (the engine on PostgreSQL), or none. */
  slowFeed?: Feed | null;
  probe: Probe;
  sizes: Sizes;
  /** Starts the delivering processes (and serve), for the drain. */
  start(): Promise<void>;
  /** Stops every process of the configuration. */
  stop(): Promise<void>;
  /** Starts what the feed needs while nothing delivers; null: the feed needs no process. */
  startQueuing(): Promise<void>;
  stopQueuing(): Promise<void>;
  /**
   * On PostgreSQL the drain holds the queue until every process is ready: `hold` makes what is
   * queued due in a day, `release` due now, and wakes the processes.
   */
  queue: { hold: string; release: string };
}

/**
 * --windows: a latency phase cut by when each write was sent (the first 300 ms in steps of 100 ms,
 * then to 600 ms, then the rest), with each window's medians: the feed write, its answer to the
 * arrival, the publish to the arrival, and the arrival's p99. It tells a phase whose start is slow
 * (connections, caches, a machine not yet at the pace) from one that is slow all through, and how
 * many TLS connections the phase opened to the receiver.
 */
function logWindows(phase: string, delivered: Delivered[], newConnections: number): void {
  if (delivered.length === 0) return;
  log(`  ${phase}: ${newConnections} new TLS connections to the receiver`);
  const start = Math.min(...delivered.map((d) => d.sent.sentAt));
  const edges = [0, 100, 200, 300, 600, Number.POSITIVE_INFINITY];
  const p50 = (xs: number[]) => percentiles(xs).p50;
  for (let i = 0; i + 1 < edges.length; i++) {
    const from = edges[i] as number;
    const to = edges[i + 1] as number;
    const ds = delivered.filter((d) => d.sent.sentAt - start >= from && d.sent.sentAt - start < to);
    if (ds.length === 0) continue;
    const arrival = percentiles(ds.map((d) => d.arrival.at - d.sent.answeredAt));
    log(
      `  ${phase} ${from}-${Number.isFinite(to) ? `${to}` : 'end'} ms: ${ds.length} deliveries, feed write p50 ${p50(ds.map((d) => d.sent.answeredAt - d.sent.sentAt))}, answer to arrival p50 ${arrival.p50} / p99 ${arrival.p99}, publish to arrival p50 ${p50(ds.map((d) => d.arrival.wall - d.publishedMs))} ms`,
    );
  }
}

async function latencyPhase(
  subject: Subject,
  receiver: BenchReceiver,
  rate: number,
  seconds: number,
  countXacts: boolean,
): Promise<LatencyResult> {
  const { feed, probe, prefix } = subject;
  const phase = `${subject.name}/latency-${rate}`;
  const from = receiver.arrivals.length;
  const handshakes = receiver.tlsConnections();
  // --statements: from the first write to the last arrival.
  const statements = statementsFile(probe);
  if (statements) await probeQuery(probe, 'SELECT pg_stat_statements_reset()', []);
  const before = await snapshot(probe);
  const achieved = await feed.steady(phase, rate, seconds);
  const events = feed.events(phase);
  const ok = events.filter((e) => e.status === 201);
  const expected = ok.length * subject.fanOut;
  const { delivered, complete } = await collect(receiver, feed, prefix, phase, from, expected);
  if (statements) await appendStatements(statements, probe, phase, delivered.length);
  if (args.windows) logWindows(phase, delivered, receiver.tlsConnections() - handshakes);
  const cpuMsPerDelivery = cpuBetween(
    before,
    await snapshot(probe),
    delivered.length,
    probe.pgClient !== null,
  );
  let xactsPerDelivery: number | null = null;
  if (countXacts) {
    await settle(subject.sizes);
    xactsPerDelivery = per(xactsBetween(before, await snapshot(probe)), delivered.length);
  }
  const missing = expected - delivered.length;
  return {
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
    cpuMsPerDelivery,
    xactsPerDelivery,
    complete,
  };
}

async function burstPhase(
  subject: Subject,
  receiver: BenchReceiver,
  count: number,
  whileSettling: (delivered: Delivered[]) => Promise<CeilingResult | null>,
): Promise<{ result: BurstResult; ceiling: CeilingResult | null }> {
  const { feed, probe, prefix } = subject;
  const phase = `${subject.name}/burst`;
  const from = receiver.arrivals.length;
  const handshakes = receiver.tlsConnections();
  const before = await snapshot(probe);
  const feedStart = performance.now();
  await feed.burst(phase, count, settings.feedConcurrency);
  const feedEnd = performance.now();
  const atFeedEnd = await snapshot(probe);
  const events = feed.events(phase);
  const ok = events.filter((e) => e.status === 201);
  const expected = ok.length * subject.fanOut;
  const { delivered, duplicates, complete } = await collect(receiver, feed, prefix, phase, from, expected);
  const atLast = await snapshot(probe);
  // The ceiling runs while the backends report their transactions; it uses no database.
  const settleStart = performance.now();
  const ceiling = await whileSettling(delivered);
  await settle(subject.sizes, performance.now() - settleStart);
  const after = await snapshot(probe);

  const times = delivered.map((d) => d.arrival.at).sort((a, b) => a - b);
  const first = times[0] ?? 0;
  const last = times.at(-1) ?? 0;
  const firstToLast = (last - first) / 1000;
  const late = times.filter((t) => t > feedEnd);
  const withPg = probe.pgClient !== null;
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
    cpuMsPerDelivery: cpuBetween(before, atLast, delivered.length, withPg),
    xactsPerDelivery: per(xactsBetween(before, after), delivered.length),
    drain:
      late.length >= 50
        ? {
            cpuMsPerDelivery: cpuBetween(atFeedEnd, atLast, late.length, withPg),
            xactsPerDelivery: per(xactsBetween(atFeedEnd, after), late.length),
          }
        : null,
    complete,
  };
  return { result, ceiling };
}

/** The engine's queue, held and released by the drain. */
const ENGINE_QUEUE = {
  hold: `UPDATE delivery_queue SET next_retry_at = now() + interval '1 day' WHERE lease_owner IS NULL`,
  release: `WITH due AS (UPDATE delivery_queue SET next_retry_at = now() WHERE lease_owner IS NULL RETURNING 1)
            SELECT count(*) AS n, pg_notify('svc_deliveries', current_schema()) FROM due`,
};

/** Pause between the drain's processes being ready and their deliveries falling due. */
const DRAIN_SETTLE_MS = 1500;

/**
 * Events queued while nothing delivers, then the delivering processes started and timed until every
 * delivery arrived. The transactions are counted from a database with none of the configuration's
 * processes connected to one with all of them gone again: every backend has reported by then.
 * On PostgreSQL the queued deliveries (the reference's jobs) are held (due in a day) until every
 * process of the configuration is ready, then made due at once and announced: without it `serve`'s start (about
 * a second of CPU: schemas compiled, modules loaded) ran beside the `svc worker` that had started
 * draining, on the same 2 cores, and the drain measured the start as much as the delivery.
 */
async function drainPhase(subject: Subject, receiver: BenchReceiver, count: number): Promise<DrainResult> {
  const { feed, probe, prefix } = subject;
  const phase = `${subject.name}/drain`;
  await subject.stop();
  // What the earlier phases left dead goes before the backlog is queued (a backlog of an outage
  // builds up over minutes, autovacuum's pace), so the drain meets only its own rows.
  await vacuum(probe);
  await subject.startQueuing();
  const queueStart = performance.now();
  await feed.burst(phase, count, settings.feedConcurrency);
  const queueSeconds = (performance.now() - queueStart) / 1000;
  await subject.stopQueuing();
  await backendsGone(probe);
  const held = probe.pgClient !== null;
  if (held) await probeQuery(probe, subject.queue.hold, []);
  const events = feed.events(phase);
  const ok = events.filter((e) => e.status === 201);
  const expected = ok.length * subject.fanOut;
  const from = receiver.arrivals.length;
  const statements = statementsFile(probe);
  const before = await snapshot(probe);
  const startedAt = performance.now();
  await subject.start();
  if (held) {
    // Ready is not idle: a process answers before its start's last work (the sender's CA, code
    // compiled on first use, the start's garbage) is done.
    await sleep(DRAIN_SETTLE_MS);
    await probeQuery(probe, subject.queue.release, []);
  }
  let atFirst: Promise<Snapshot> | null = null;
  const { delivered, duplicates, complete } = await collect(
    receiver,
    feed,
    prefix,
    phase,
    from,
    expected,
    () => {
      atFirst = snapshot(probe);
      if (statements) void probeQuery(probe, 'SELECT pg_stat_statements_reset()', []);
    },
    true,
  );
  const atLast = await snapshot(probe);
  if (statements) await appendStatements(statements, probe, phase, delivered.length);
  const firstSnapshot = atFirst ? await atFirst : atLast;
  if (!complete) {
    for (const c of [probe.serve, ...probe.workers])
      if (c) log(`  ${phase}: last output of ${c.pid}:\n${c.output()}`);
  }
  await subject.stop();
  await backendsGone(probe);
  const after = await snapshot(probe);
  const times = delivered.map((d) => d.arrival.at).sort((a, b) => a - b);
  const first = times[0] ?? 0;
  const last = times.at(-1) ?? 0;
  const firstToLast = (last - first) / 1000;
  return {
    events: events.length,
    expected,
    delivered: delivered.length,
    duplicates,
    feedFailures: events.length - ok.length,
    queueSeconds: round(queueSeconds, 2),
    startToFirstSeconds: round((first - startedAt) / 1000, 2),
    firstToLastSeconds: round(firstToLast, 2),
    deliveriesPerSecond: firstToLast > 0 ? round((delivered.length - 1) / firstToLast) : 0,
    cpuMsPerDelivery: cpuBetween(
      firstSnapshot,
      atLast,
      Math.max(0, delivered.length - 1),
      probe.pgClient !== null,
    ),
    xactsPerDelivery: per(xactsBetween(before, after), delivered.length),
    complete,
  };
}

/**
 * The drain again, to receivers that answer only after --slow-ms, on --slow-webhooks webhooks of
 * another organization: the attempts in flight set the pace there, not the cores, so each process
 * that delivers brings its SVC_WEBHOOK_CONCURRENCY until the webhooks' own bounds are reached.
 */
async function slowDrainPhase(
  subject: Subject,
  feed: Feed,
  receiver: BenchReceiver,
): Promise<SlowDrainResult> {
  const workers = subject.deliveringProcesses;
  const inFlightLimit = inFlightBound(workers, settings.slowWebhooks);
  const slow: Subject = {
    ...subject,
    name: `${subject.name}/slow`,
    feed,
    prefix: SLOW_PREFIX,
    fanOut: settings.slowWebhooks,
  };
  const drain = await drainPhase(slow, receiver, subject.sizes.slowEvents);
  const boundPerSecond = round((inFlightLimit * 1000) / settings.slowMs);
  log(
    `${subject.label}: slow drain ${drain.delivered}/${drain.expected} deliveries, ` +
      `${drain.deliveriesPerSecond}/s (the bound: ${inFlightLimit} in flight, ${boundPerSecond}/s)`,
  );
  return {
    ...drain,
    webhooks: settings.slowWebhooks,
    answerMs: settings.slowMs,
    inFlightLimit,
    boundPerSecond,
  };
}

async function warmUp(subject: Subject, receiver: BenchReceiver, events: number): Promise<void> {
  const { feed } = subject;
  const phase = `${subject.name}/warm-up`;
  const from = receiver.arrivals.length;
  await feed.burst(phase, events, Math.min(events, settings.feedConcurrency));
  const ok = feed.events(phase).filter((e) => e.status === 201).length;
  await collect(receiver, feed, subject.prefix, phase, from, ok * subject.fanOut);
}

/** Every phase of one configuration, its processes started afresh. */
async function measureSubject(
  subject: Subject,
  receiver: BenchReceiver,
  kind: DbKind,
  inFlightLimit: number,
): Promise<Omit<ConfigurationResult, 'name' | 'label' | 'workerProcesses' | 'deliveryWorkers' | 'kind'>> {
  const sz = subject.sizes;
  // What earlier configurations received is not looked at again.
  receiver.forget();
  // First: the warm-up and the pause after it absorb what its thousands of rows leave the database
  // to do (in the phases after it, it lengthened the next configuration's latencies).
  const slowDrain = subject.slowFeed ? await slowDrainPhase(subject, subject.slowFeed, receiver) : null;
  await subject.start();
  try {
    await warmUp(subject, receiver, sz.warmUp);
    await vacuum(subject.probe);
    await settle(sz);
    const latencyAt = async (rate: number, seconds: number, countXacts: boolean) => {
      const result = await latencyPhase(subject, receiver, rate, seconds, countXacts);
      log(
        `${kind} ${subject.label}: latency at ${result.achievedEventsPerSecond} events/s: ` +
          `p50 ${result.fromCommitMs.p50} ms, p99 ${result.fromCommitMs.p99} ms, ` +
          `feed write p99 ${result.feedAnswerMs.p99} ms (${result.delivered}/${result.expected})` +
          (result.xactsPerDelivery === null ? '' : `, ${result.xactsPerDelivery} xacts/delivery`),
      );
      return result;
    };
    const latency = await latencyAt(settings.rate, sz.latencySeconds, true);
    const { result: burst, ceiling: ceilingResult } = await burstPhase(
      subject,
      receiver,
      sz.events,
      async (delivered) => ceiling(receiver, delivered.slice(-2000), inFlightLimit, sz.ceilingSeconds),
    );
    log(
      `${kind} ${subject.label}: burst ${burst.delivered}/${burst.expected} deliveries, ` +
        `${burst.deliveriesPerSecond}/s (feed ${burst.feedEventsPerSecond} events/s), ` +
        `${burst.xactsPerDelivery ?? '-'} xacts/delivery; ceiling ${ceilingResult?.requestsPerSecond ?? '-'} req/s`,
    );
    // Last before the drain, which counts its transactions from stopped processes: no pause needed.
    const lowRateLatency = sz.lowRate > 0 ? await latencyAt(sz.lowRate, settings.lowSeconds, false) : null;
    const drain = await drainPhase(subject, receiver, sz.drainEvents);
    log(
      `${kind} ${subject.label}: drain ${drain.delivered}/${drain.expected} deliveries, ` +
        `${drain.deliveriesPerSecond}/s (first arrival ${drain.startToFirstSeconds} s after the start), ` +
        `${drain.xactsPerDelivery ?? '-'} xacts/delivery`,
    );
    const c = ceilingResult as CeilingResult;
    const share = (x: number) => (c.requestsPerSecond > 0 ? round(x / c.requestsPerSecond, 3) : 0);
    return {
      inFlightLimit,
      latency,
      lowRateLatency,
      burst,
      drain,
      slowDrain,
      ceiling: c,
      ofCeiling: share(burst.deliveriesPerSecond),
      afterFeedOfCeiling: burst.afterFeed ? share(burst.afterFeed.deliveriesPerSecond) : null,
    };
  } finally {
    await subject.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// The ceiling.

const run = promisify(execFile);

async function ceiling(
  receiver: BenchReceiver,
  captures: Delivered[],
  concurrency: number,
  seconds: number,
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
          path: a.path.replace(/^\/[a-z]\//, '/c/'),
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
        String(seconds),
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

/** Starts processes and keeps them in `running` until they stop. */
async function tracked(start: Promise<Child>): Promise<Child> {
  const child = await start;
  running.add(child);
  return child;
}

async function stopTracked(child: Child | null | undefined): Promise<void> {
  if (!child) return;
  await child.stop();
  running.delete(child);
}

async function measureReference(
  kind: DbKind,
  receiver: BenchReceiver,
  probe: Probe,
  sz: Sizes,
  processes: number,
  profileDir: string | undefined,
): Promise<ConfigurationResult> {
  const url = args['database-url'];
  await resetReference(url);
  const organizationId = randomUUID();
  const webhooks = referenceWebhooks(
    Array.from({ length: settings.webhooks }, (_, i) => receiver.url(`/r/${i}`)),
  );
  const openPool = () => new pg.Pool({ connectionString: url, max: settings.feedConcurrency });
  let pool = openPool();
  const write = (p: pg.Pool) => referenceWriter(p, organizationId, settings.webhooks);
  const feed = new Feed('9', write(pool));
  const startWorker = async () => {
    probe.workers = await Promise.all(
      Array.from({ length: processes }, () =>
        tracked(
          startReferenceWorker(ROOT, {
            connectionString: url,
            webhooks,
            concurrency: Math.max(1, Math.floor(referenceConcurrency / processes)),
            localQueue: Math.max(1, Math.floor(referenceLocalQueue / processes)),
            timeoutMs: DEFAULT_TIMEOUT_MS,
            caFile: receiver.caFile,
            profileDir,
          }),
        ),
      ),
    );
  };
  const name = processes === 1 ? 'reference' : `reference-${processes}`;
  const subject: Subject = {
    name,
    label:
      processes === 1
        ? 'graphile-worker + undici (reference)'
        : `graphile-worker + undici, ${processes} processes (reference)`,
    feed,
    prefix: '/r/',
    fanOut: settings.webhooks,
    probe,
    sizes: sz,
    queue: {
      hold: `UPDATE ${REFERENCE_SCHEMA}._private_jobs SET run_at = now() + interval '1 day'`,
      release: `WITH due AS (UPDATE ${REFERENCE_SCHEMA}._private_jobs SET run_at = now() RETURNING 1)
                SELECT pg_notify('jobs:insert', json_build_object('count', count(*))::text) FROM due`,
    },
    deliveringProcesses: processes,
    start: startWorker,
    async stop() {
      for (const w of probe.workers) await stopTracked(w);
      probe.workers = [];
    },
    // The feed's connections are closed around the drain so that they report their transactions.
    async startQueuing() {
      await pool.end();
      pool = openPool();
      feed.write = write(pool);
    },
    async stopQueuing() {
      await pool.end();
      pool = openPool();
      feed.write = write(pool);
    },
  };
  log(
    `${kind}: reference: graphile-worker in ${processes} process${processes > 1 ? 'es' : ''}, ` +
      `${referenceConcurrency} jobs in flight, local queue ${referenceLocalQueue}`,
  );
  try {
    const measured = await measureSubject(subject, receiver, kind, referenceConcurrency);
    return {
      kind: 'reference',
      name,
      label: subject.label,
      workerProcesses: processes,
      deliveryWorkers: processes,
      ...measured,
    };
  } finally {
    await pool.end();
    probe.workers = [];
  }
}

async function measureEngine(
  kind: DbKind,
  receiver: BenchReceiver,
  s: ServiceEnv,
  probe: Probe,
  sz: Sizes,
  profileDir: string | undefined,
): Promise<{ configurations: ConfigurationResult[] }> {
  const workerCounts = kind === 'postgres' ? args.workers.split(',').map((w) => Number(w)) : [0];
  // The tenant and its webhooks, through a serve that does not deliver.
  const setup = await tracked(startServe(ROOT, { ...s, env: { ...s.env, SVC_WEBHOOK_WORKER: 'off' } }));
  // The slow drain's organization: its own webhooks, under the receiver's slow paths.
  const withSlowDrain = kind === 'postgres' && sz.slowEvents > 0;
  let tenant: Tenant;
  let slowTenant: Tenant | null = null;
  try {
    tenant = await createTenant(s, receiver, settings.webhooks, '/h/');
    if (withSlowDrain) slowTenant = await createTenant(s, receiver, settings.slowWebhooks, SLOW_PREFIX);
  } finally {
    await stopTracked(setup);
  }
  const pool = new Pool(new URL(s.operatorUrl).origin, { connections: 64 });
  const feed = new Feed(tenant.code, engineWriter(s, tenant, pool));
  const slowFeed = slowTenant && new Feed(slowTenant.code, engineWriter(s, slowTenant, pool));
  const configurations: ConfigurationResult[] = [];
  try {
    for (const count of workerCounts) {
      const name = count === 0 ? 'embedded' : `workers-${count}`;
      const label =
        count === 0 ? 'serve (embedded worker)' : `serve + ${count} svc worker${count > 1 ? 's' : ''}`;
      const deliveryWorkers = count + 1;
      const inFlightLimit = inFlightBound(deliveryWorkers, settings.webhooks);
      const subject: Subject = {
        name,
        label,
        feed,
        prefix: '/h/',
        fanOut: settings.webhooks,
        slowFeed,
        probe,
        sizes: sz,
        queue: ENGINE_QUEUE,
        deliveringProcesses: deliveryWorkers,
        async start() {
          const [serve, ...workers] = await Promise.all([
            tracked(startServe(ROOT, s, profileDir)),
            ...Array.from({ length: count }, () => tracked(startWorkerProcess(ROOT, s, profileDir))),
          ]);
          probe.serve = serve as Child;
          probe.workers = workers;
        },
        async stop() {
          await Promise.all(probe.workers.map((w) => stopTracked(w)));
          await stopTracked(probe.serve);
          probe.serve = null;
          probe.workers = [];
        },
        async startQueuing() {
          probe.serve = await tracked(
            startServe(ROOT, { ...s, env: { ...s.env, SVC_WEBHOOK_WORKER: 'off' } }),
          );
        },
        async stopQueuing() {
          await stopTracked(probe.serve);
          probe.serve = null;
        },
      };
      const measured = await measureSubject(subject, receiver, kind, inFlightLimit);
      configurations.push({
        kind: 'engine',
        name,
        label,
        workerProcesses: count,
        deliveryWorkers,
        ...measured,
      });
    }
  } finally {
    await pool.close();
  }
  return { configurations };
}

/**
 * The rounds of one configuration as one result: each figure is the median of its rounds (a
 * percentile is the median of the rounds' percentiles); what each round gave of the headline
 * figures is kept beside it.
 */
function ofRounds(results: ConfigurationResult[]): ConfigurationResult {
  const merged = medianOf(results) as ConfigurationResult;
  if (results.length < 2) return merged;
  return {
    ...merged,
    rounds: results.map((r) => ({
      drain: r.drain?.deliveriesPerSecond ?? null,
      burst: r.burst.deliveriesPerSecond,
      p99: r.latency.fromCommitMs.p99,
      feedP99: r.latency.feedAnswerMs.p99,
    })),
  };
}

/** Numbers: their median; booleans: all true; objects and same-length arrays: field by field. */
function medianOf(values: unknown[]): unknown {
  const present = values.filter((v) => v !== null && v !== undefined);
  const first = present[0];
  if (first === undefined) return values[0];
  if (typeof first === 'number') {
    const numbers = present.filter((v) => typeof v === 'number') as number[];
    const m = median(numbers);
    if (numbers.every(Number.isInteger)) return Math.round(m);
    // The mean of the middle two has at most one decimal more than they have (no 1.4049999...).
    const decimals = Math.max(...numbers.map((x) => String(x).split('.')[1]?.length ?? 0));
    return Number(m.toFixed(Math.min(decimals + 1, 12)));
  }
  if (typeof first === 'boolean') return present.every((v) => v === true);
  if (Array.isArray(first)) {
    const same = present.every((v) => Array.isArray(v) && v.length === first.length);
    return same ? first.map((_, i) => medianOf(present.map((v) => (v as unknown[])[i]))) : first;
  }
  if (typeof first === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(first))
      out[key] = medianOf(present.map((v) => (v as Record<string, unknown>)[key]));
    return out;
  }
  return first;
}

async function measure(kind: DbKind, receiver: BenchReceiver): Promise<WebhookRunResult> {
  const loadStart = loadavg();
  const date = new Date().toISOString();
  const sz = sizes(kind);
  const extra: Record<string, string> = {};
  if (args.concurrency) extra.SVC_WEBHOOK_CONCURRENCY = String(settings.concurrency);
  if (args['per-webhook']) extra.SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK = String(settings.perWebhook);
  const profileDir = args.profile ? resolve(args.profile) : undefined;
  if (profileDir) await mkdir(profileDir, { recursive: true });

  const rounds = positive('rounds', args.rounds);
  const autovacuum = kind === 'postgres' ? await autovacuumSetting(args['database-url']) : null;
  const referenceRounds: ConfigurationResult[] = [];
  const configurationRounds: ConfigurationResult[][] = [];
  for (let round = 1; round <= rounds; round++) {
    if (rounds > 1) log(`${kind}: round ${round} of ${rounds}`);
    // Every round on an empty database: no round inherits another's rows.
    let dataDir: string | null = null;
    let database: BenchDatabase;
    if (kind === 'postgres') {
      await recreateDatabase(args['database-url']);
      database = { kind, url: args['database-url'] };
    } else {
      dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-webhooks-pglite-'));
      database = { kind, dataDir };
    }
    const s = await serviceEnv(database, receiver.caFile, extra);
    let pgClient: pg.Client | null = null;
    try {
      if (kind === 'postgres') {
        pgClient = new pg.Client({ connectionString: args['database-url'] });
        await pgClient.connect();
      }
      const probe: Probe = {
        serve: null,
        workers: [],
        pgClient,
        dbName: decodeURIComponent(new URL(args['database-url']).pathname.slice(1)),
        queries: 0,
      };
      // The reference first, alone on the database; PGlite cannot host it. In more processes, it
      // is listed with the configurations, before the engine's.
      const measured: ConfigurationResult[] = [];
      if (kind === 'postgres' && runReference) {
        for (const processes of referenceProcesses) {
          const result = await measureReference(kind, receiver, probe, sz, processes, profileDir);
          if (processes === 1) referenceRounds.push(result);
          else measured.push(result);
        }
      }
      if (runEngine) {
        log(`${kind}: service, ${settings.webhooks} webhooks on ${receiver.origin}`);
        measured.push(...(await measureEngine(kind, receiver, s, probe, sz, profileDir)).configurations);
      }
      configurationRounds.push(measured);
    } finally {
      await pgClient?.end();
      for (const c of running) await stopTracked(c);
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    }
  }
  const reference = referenceRounds.length > 0 ? ofRounds(referenceRounds) : null;
  const configurations = (configurationRounds[0] ?? []).map((_, i) =>
    ofRounds(configurationRounds.map((r) => r[i] as ConfigurationResult)),
  );

  return {
    benchmark: 'webhook-delivery',
    db: kind,
    date,
    machine: machine(),
    loadAverage: { start: loadStart.map((x) => round(x, 2)), end: loadavg().map((x) => round(x, 2)) },
    ...(autovacuum ? { autovacuum } : {}),
    settings: {
      webhooks: settings.webhooks,
      scopes: SCOPES,
      feedConcurrency: settings.feedConcurrency,
      burstEvents: sz.events,
      drainEvents: sz.drainEvents,
      latencyEventsPerSecond: settings.rate,
      latencySeconds: sz.latencySeconds,
      waitMs: settings.waitMs,
      lowEventsPerSecond: sz.lowRate,
      lowSeconds: settings.lowSeconds,
      settleSeconds: sz.settleSeconds,
      quick: args.quick,
      rounds,
      workerConcurrency: settings.concurrency,
      concurrencyPerWebhook: settings.perWebhook,
      webhookTimeoutMs: DEFAULT_TIMEOUT_MS,
      reference: {
        graphileWorker: graphileVersion,
        schema: REFERENCE_SCHEMA,
        concurrency: referenceConcurrency,
        localQueueSize: referenceLocalQueue,
        completeJobBatchDelayMs: 0,
      },
    },
    reference,
    configurations,
    skipped: [],
    targets: evaluateTargets(kind, reference, configurations),
  };
}

const graphileVersion = (
  JSON.parse(await readFile(join(ROOT, 'node_modules', 'graphile-worker', 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

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
  if (!args['skip-build'] && runEngine) {
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  const receiver = await startBenchReceiver(ROOT, settings.slowMs);
  const results: WebhookRunResult[] = [];
  try {
    for (const kind of kinds) {
      if (kind === 'pglite' && !runEngine) continue;
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
    process.stdout.write(`${results.map((r) => renderRun(r)).join('\n\n')}\n`);
    return;
  }
  await writeSection();
  process.stdout.write(`${results.map((r) => renderRun(r)).join('\n\n')}\n`);
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

/** The benchmark's processes, stopped (by their pids) when the run is interrupted. */
const running = new Set<Child>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping ${running.size} processes`);
    void Promise.all([...running].map((c) => c.stop())).finally(() => process.exit(130));
  });
}

main().catch((error) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});

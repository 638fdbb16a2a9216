// Scale-out and rebalancing: a backlog to many webhooks of many organizations, receivers that answer
// in --answer-ms, queued through `svc serve` with its worker off, then drained by `svc worker`
// processes with a budget of --worker-concurrency attempts in flight each.
import type pg from 'pg';
import {
  arrivalsOf,
  type CpuFigures,
  cpuPerDelivery,
  cpuSnapshot,
  distinct,
  type Feed,
  type Tenant,
  vacuum,
} from './feed.js';
import { type Child, type Service, startServe, startWorker } from './proc.js';
import type { Arrival, Receiver } from './receiver.js';
import { log, round } from './report.js';

export interface ScaleOptions {
  service: Service;
  receiver: Receiver;
  feed: Feed;
  client: pg.Client;
  dbName: string;
  tenants: Tenant[];
  answerMs: number;
  workerConcurrency: number;
  perWebhook: number;
  deliveries: number;
}

export interface ScaleOutRun {
  workers: number;
  deliveries: number;
  missing: number;
  /** Deliveries/s from the moment every worker was ready to the last arrival. */
  perSecond: number;
  /** The same from the first arrival to the last. */
  firstToLastPerSecond: number;
  /** What the attempts in flight allow: workers x budget / answer time (capped by the webhooks' bounds). */
  boundPerSecond: number;
  cpu: CpuFigures;
  maxInFlightPerWebhook: number;
}

export interface ScaleOutResult {
  date: string;
  settings: {
    organizations: number;
    webhooks: number;
    deliveries: number;
    answerMs: number;
    workerConcurrency: number;
  };
  runs: ScaleOutRun[];
}

export interface RebalanceResult {
  date: string;
  settings: {
    webhooks: number;
    deliveries: number;
    answerMs: number;
    workerConcurrency: number;
    perWebhook: number;
    leaseSeconds: number;
  };
  expected: number;
  lost: number;
  duplicates: number;
  /** Deliveries whose first arrival carried X-SVC-Attempt above 1: attempts counted but not sent. */
  firstArrivalAfterFirstAttempt: number;
  maxInFlightPerWebhook: number;
  /** After the SIGKILL: when every webhook still owed deliveries had one again, and how many waited over 1 s. */
  resumedSeconds: number | null;
  webhooksPausedOverSecond: number;
  events: { at: number; what: string }[];
  seconds: number;
}

const STALL_MS = 30_000;

/** Queues `deliveries` (rounded up to whole events of every tenant) while nothing delivers. */
async function queueBacklog(o: ScaleOptions): Promise<{ serve: Child; expected: number }> {
  o.receiver.delayMs = o.answerMs;
  await vacuum(o.client);
  const serve = await startServe(o.service, { SVC_WEBHOOK_WORKER: 'off' });
  const perEvent = o.tenants.reduce((n, t) => n + t.paths.length, 0);
  const perTenant = Math.ceil(o.deliveries / perEvent);
  o.feed.forget();
  const started = performance.now();
  await o.feed.burst(o.tenants, perTenant, 16);
  const expected = o.feed.expected();
  log(`backlog: ${expected} deliveries queued in ${round((performance.now() - started) / 1000)} s`);
  o.receiver.reset();
  return { serve, expected };
}

const startWorkers = (o: ScaleOptions, n: number, env: NodeJS.ProcessEnv = {}) =>
  Promise.all(
    Array.from({ length: n }, () =>
      startWorker(o.service, { SVC_WEBHOOK_CONCURRENCY: String(o.workerConcurrency), ...env }),
    ),
  );

const maxInFlight = (r: Receiver) => Math.max(0, ...r.maxInFlight.values());

async function drainWith(o: ScaleOptions, workers: number): Promise<ScaleOutRun> {
  const { serve, expected } = await queueBacklog(o);
  const webhooks = o.tenants.reduce((n, t) => n + t.paths.length, 0);
  let children: Child[] = [];
  try {
    children = await startWorkers(o, workers);
    const ready = performance.now();
    const before = await cpuSnapshot([serve, ...children], o.client, o.dbName);
    const arrived = await arrivalsOf(o.receiver, expected, STALL_MS);
    const after = await cpuSnapshot([serve, ...children], o.client, o.dbName);
    const last = arrived.at(-1)?.at ?? ready;
    const sinceReady = arrived.filter((a) => a.at >= ready).length;
    const run: ScaleOutRun = {
      workers,
      deliveries: arrived.length,
      missing: expected - arrived.length,
      perSecond: round(sinceReady / ((last - ready) / 1000 || 1), 0),
      firstToLastPerSecond: round((arrived.length - 1) / ((last - (arrived[0]?.at ?? 0)) / 1000 || 1), 0),
      boundPerSecond: round(
        (Math.min(workers * o.workerConcurrency, webhooks * o.perWebhook) * 1000) / o.answerMs,
        0,
      ),
      cpu: cpuPerDelivery(before, after, sinceReady),
      maxInFlightPerWebhook: maxInFlight(o.receiver),
    };
    log(
      `scale-out ${workers} worker(s): ${run.perSecond}/s of ${run.boundPerSecond}/s possible, ` +
        `${run.cpu.nodeUs} + ${run.cpu.postgresUs} µs/delivery, machine ${round(run.cpu.machineBusy * 100)}% busy, ${run.missing} missing`,
    );
    return run;
  } finally {
    for (const c of [...children, serve]) await c.stop();
  }
}

export async function scaleOutScenario(o: ScaleOptions & { workers: number[] }): Promise<ScaleOutResult> {
  const runs: ScaleOutRun[] = [];
  for (const n of o.workers) runs.push(await drainWith(o, n));
  return {
    date: new Date().toISOString(),
    settings: {
      organizations: o.tenants.length,
      webhooks: o.tenants.reduce((n, t) => n + t.paths.length, 0),
      deliveries: runs[0]?.deliveries ?? 0,
      answerMs: o.answerMs,
      workerConcurrency: o.workerConcurrency,
    },
    runs,
  };
}

/** When each webhook next received a delivery after `at`: the longest wait, and how many waited over 1 s. */
function resumption(arrivals: Arrival[], at: number): { seconds: number | null; paused: number } {
  const next = new Map<string, number>();
  for (const a of arrivals) if (a.at > at && !next.has(a.path)) next.set(a.path, a.at - at);
  const waits = [...next.values()];
  const seconds = waits.length > 0 ? round(Math.max(...waits) / 1000, 2) : null;
  return { seconds, paused: waits.filter((w) => w > 1000).length };
}

/**
 * Three workers drain; at 20% of the backlog a fourth starts, at 40% one is SIGKILLed, at 60%
 * another gets SIGTERM. The attempt time-out is set a second and a half under the lease so that a
 * lease can be short (SVC_WEBHOOK_LEASE_SECONDS).
 */
export async function rebalanceScenario(
  o: ScaleOptions & { leaseSeconds: number },
): Promise<RebalanceResult> {
  const env = {
    SVC_WEBHOOK_LEASE_SECONDS: String(o.leaseSeconds),
    SVC_WEBHOOK_TIMEOUT_MS: String(Math.max(100, o.leaseSeconds * 1000 - 1500)),
  };
  const { serve, expected } = await queueBacklog(o);
  const count = distinct(o.receiver);
  const events: { at: number; what: string }[] = [];
  const t0 = performance.now();
  const note = (what: string) => {
    events.push({ at: round((performance.now() - t0) / 1000, 2), what });
    log(`rebalance: ${what} at ${count()} of ${expected}`);
  };
  const reach = (share: number) => o.receiver.until(() => count() >= expected * share, 10 * 60_000);
  const workers = await startWorkers(o, 3, env);
  let killedAt = 0;
  try {
    note('3 workers ready');
    await reach(0.2);
    workers.push(...(await startWorkers(o, 1, env)));
    note('a 4th worker ready');
    await reach(0.4);
    killedAt = performance.now();
    await workers[1]?.stop('SIGKILL');
    note('worker 2 SIGKILLed');
    await reach(0.6);
    await workers[2]?.stop('SIGTERM');
    note('worker 3 stopped (SIGTERM)');
    const arrived = await arrivalsOf(o.receiver, expected, Math.max(STALL_MS, o.leaseSeconds * 3000));
    note('last arrival');
    const all = o.receiver.arrivals;
    const firstOf = new Map<string, number>();
    for (const a of all) if (!firstOf.has(a.deliveryId)) firstOf.set(a.deliveryId, a.attempt);
    const resumed = resumption(all, killedAt);
    return {
      date: new Date().toISOString(),
      settings: {
        webhooks: o.tenants.reduce((n, t) => n + t.paths.length, 0),
        deliveries: expected,
        answerMs: o.answerMs,
        workerConcurrency: o.workerConcurrency,
        perWebhook: o.perWebhook,
        leaseSeconds: o.leaseSeconds,
      },
      expected,
      lost: expected - arrived.length,
      duplicates: all.length - arrived.length,
      firstArrivalAfterFirstAttempt: [...firstOf.values()].filter((n) => n > 1).length,
      maxInFlightPerWebhook: maxInFlight(o.receiver),
      resumedSeconds: resumed.seconds,
      webhooksPausedOverSecond: resumed.paused,
      events,
      seconds: round((performance.now() - t0) / 1000, 1),
    };
  } finally {
    for (const c of [...workers, serve]) await c.stop();
  }
}

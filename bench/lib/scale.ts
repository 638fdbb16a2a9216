// Scale-out and rebalancing: a backlog to many webhooks of many organizations whose receivers answer
// in `answerMs`, queued through `svc serve` with its worker off, then drained by `svc worker`
// processes with a budget of `workerConcurrency` attempts in flight each.
import {
  arrivalsOf,
  type Bench,
  type CpuFigures,
  cpuPerDelivery,
  cpuSnapshot,
  distinct,
  type Tenant,
  vacuum,
} from './feed.js';
import { type Child, startServe, startWorker } from './proc.js';
import type { Arrival, Receiver } from './receiver.js';
import { log, round } from './report.js';

export interface ScaleSettings {
  organizations: number;
  webhooks: number;
  deliveries: number;
  answerMs: number;
  workerConcurrency: number;
  perWebhook: number;
}

export interface ScaleOutRun {
  workers: number;
  deliveries: number;
  missing: number;
  /** Deliveries/s from the moment every worker was ready to the last arrival. */
  perSecond: number;
  /** What the attempts in flight allow: workers x budget / answer time (capped by the webhooks' bounds). */
  boundPerSecond: number;
  cpu: CpuFigures;
  maxInFlightPerWebhook: number;
}

export interface ScaleOutResult {
  date: string;
  settings: ScaleSettings;
  runs: ScaleOutRun[];
}

export interface RebalanceResult {
  date: string;
  settings: ScaleSettings & { leaseSeconds: number };
  lost: number;
  duplicates: number;
  /** Deliveries whose first arrival carried X-SVC-Attempt above 1: attempts counted but not sent. */
  firstArrivalAfterFirstAttempt: number;
  maxInFlightPerWebhook: number;
  /**
   * After the SIGKILL: when every webhook the killed worker owned that was still owed deliveries
   * had one again (null: none was owed).
   */
  resumedSeconds: number | null;
  webhooksPausedOverSecond: number;
  /** The same after the SIGTERM, for the stopped worker's webhooks: its share is handed back at once. */
  stoppedResumedSeconds: number | null;
  events: { at: number; what: string }[];
}

/** Queues `deliveries` (whole events of every tenant) while nothing delivers; serve keeps running. */
async function queueBacklog(b: Bench, tenants: Tenant[], o: ScaleSettings) {
  b.receiver.delayMs = o.answerMs;
  await vacuum(b.client);
  const serve = await startServe(b.service, { SVC_WEBHOOK_WORKER: 'off', SVC_DB_POOL_SIZE: '8' });
  b.feed.forget();
  const started = performance.now();
  await b.feed.burst(tenants, Math.ceil(o.deliveries / o.webhooks));
  const expected = b.feed.expected();
  log(`backlog: ${expected} deliveries queued in ${round((performance.now() - started) / 1000)} s`);
  b.receiver.reset();
  return { serve, expected };
}

/**
 * The delivery engine keeps connections of its own; the general pools are kept small (serve's too)
 * so that four workers and serve stay inside the 100 connections a default PostgreSQL allows.
 */
const startWorkers = (b: Bench, o: ScaleSettings, n: number, env: NodeJS.ProcessEnv = {}) =>
  Promise.all(
    Array.from({ length: n }, () =>
      startWorker(b.service, {
        SVC_WEBHOOK_CONCURRENCY: String(o.workerConcurrency),
        SVC_DB_POOL_SIZE: '4',
        ...env,
      }),
    ),
  );

const maxInFlight = (r: Receiver) => Math.max(0, ...r.maxInFlight.values());

async function drainWith(
  b: Bench,
  tenants: Tenant[],
  o: ScaleSettings,
  workers: number,
): Promise<ScaleOutRun> {
  const { serve, expected } = await queueBacklog(b, tenants, o);
  let children: Child[] = [];
  try {
    children = await startWorkers(b, o, workers);
    const ready = performance.now();
    const before = await cpuSnapshot([serve, ...children], b.client);
    const arrived = await arrivalsOf(b.receiver, expected);
    const after = await cpuSnapshot([serve, ...children], b.client);
    const sinceReady = arrived.filter((a) => a.at >= ready).length;
    const seconds = ((arrived.at(-1)?.at ?? ready) - ready) / 1000;
    const run: ScaleOutRun = {
      workers,
      deliveries: arrived.length,
      missing: expected - arrived.length,
      perSecond: round(sinceReady / (seconds || 1), 0),
      boundPerSecond: round(
        (Math.min(workers * o.workerConcurrency, o.webhooks * o.perWebhook) * 1000) / o.answerMs,
        0,
      ),
      cpu: cpuPerDelivery(before, after, sinceReady),
      maxInFlightPerWebhook: maxInFlight(b.receiver),
    };
    log(
      `scale-out ${workers} worker(s): ${run.perSecond}/s of ${run.boundPerSecond}/s possible, ` +
        `${run.cpu.nodeUs} + ${run.cpu.postgresUs} µs/delivery, machine ${round(run.cpu.machineBusy * 100)}% busy`,
    );
    return run;
  } finally {
    for (const c of [...children, serve]) await c.stop();
  }
}

export async function scaleOutScenario(b: Bench, tenants: Tenant[], o: ScaleSettings, workers: number[]) {
  const runs: ScaleOutRun[] = [];
  for (const n of workers) runs.push(await drainWith(b, tenants, o, n));
  return { date: new Date().toISOString(), settings: o, runs } satisfies ScaleOutResult;
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
  return new Set(rows.map((r) => new URL(r.url).pathname));
}

/**
 * How long after `at` each of the webhooks at `paths` next received a delivery: the longest wait,
 * and how many waited over 1 s.
 */
function resumption(arrivals: Arrival[], at: number, paths: Set<string>) {
  const next = new Map<string, number>();
  for (const a of arrivals) {
    if (a.at > at && paths.has(a.path) && !next.has(a.path)) next.set(a.path, a.at - at);
  }
  const waits = [...next.values()];
  return {
    resumedSeconds: waits.length > 0 ? round(Math.max(...waits) / 1000, 2) : null,
    webhooksPausedOverSecond: waits.filter((w) => w > 1000).length,
  };
}

/**
 * Three workers drain; at 20% of the backlog a fourth starts, at 40% one is SIGKILLed, at 60% another
 * gets SIGTERM. The leases of deliveries and of workers are both `leaseSeconds`, the attempt
 * time-out 1.5 s under it (it must be shorter) so that the lease can be short.
 */
export async function rebalanceScenario(
  b: Bench,
  tenants: Tenant[],
  o: ScaleSettings & { leaseSeconds: number },
) {
  const env = {
    SVC_WEBHOOK_LEASE_SECONDS: String(o.leaseSeconds),
    SVC_WEBHOOK_TIMEOUT_MS: String(Math.max(100, o.leaseSeconds * 1000 - 1500)),
    // The lease of the killed worker itself: its partitions free when it ends.
    SVC_WEBHOOK_WORKER_LEASE_MS: String(o.leaseSeconds * 1000),
  };
  const { serve, expected } = await queueBacklog(b, tenants, o);
  const count = distinct(b.receiver);
  const events: { at: number; what: string }[] = [];
  const t0 = performance.now();
  const note = (what: string) => {
    events.push({ at: round((performance.now() - t0) / 1000, 2), what });
    log(`rebalance: ${what} at ${count()} of ${expected}`);
  };
  const reach = (share: number) => b.receiver.until(() => count() >= expected * share, 10 * 60_000);
  const workers = await startWorkers(b, o, 3, env);
  try {
    note('3 workers ready');
    await reach(0.2);
    workers.push(...(await startWorkers(b, o, 1, env)));
    note('a 4th worker ready');
    await reach(0.4);
    const killed = await pathsOwnedBy(b, workers[1]?.pid ?? 0);
    const killedAt = performance.now();
    await workers[1]?.stop('SIGKILL');
    note('worker 2 SIGKILLed');
    // The SIGTERM comes once the killed worker's lease has ended and its share was taken, so that
    // each handover is measured on its own.
    await reach(0.6);
    await new Promise((r) => setTimeout(r, killedAt + (o.leaseSeconds + 3) * 1000 - performance.now()));
    const stopped = await pathsOwnedBy(b, workers[2]?.pid ?? 0);
    const stoppedAt = performance.now();
    await workers[2]?.stop('SIGTERM');
    note('worker 3 stopped (SIGTERM)');
    const arrived = await arrivalsOf(b.receiver, expected, Math.max(30_000, o.leaseSeconds * 3000));
    note('last arrival');
    const all = b.receiver.arrivals;
    const firstAttempt = new Map<string, number>();
    for (const a of all) if (!firstAttempt.has(a.deliveryId)) firstAttempt.set(a.deliveryId, a.attempt);
    return {
      date: new Date().toISOString(),
      settings: { ...o, deliveries: expected },
      lost: expected - arrived.length,
      duplicates: all.length - arrived.length,
      firstArrivalAfterFirstAttempt: [...firstAttempt.values()].filter((n) => n > 1).length,
      maxInFlightPerWebhook: maxInFlight(b.receiver),
      ...resumption(all, killedAt, killed),
      stoppedResumedSeconds: resumption(all, stoppedAt, stopped).resumedSeconds,
      events,
    } satisfies RebalanceResult;
  } finally {
    for (const c of [...workers, serve]) await c.stop();
  }
}

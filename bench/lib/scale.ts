// Scale-out and rebalancing: a backlog to many webhooks of many organizations whose receivers answer
// in `answerMs`, queued through `svc serve` with its worker off (left running), then drained by
// `svc worker` processes with a budget of `workerConcurrency` attempts in flight each.
import { arrivalsOf, type Bench, type Drain, distinct, drain, queue, type Tenant } from './feed.js';
import { type Child, startWorker } from './proc.js';
import type { Arrival } from './receiver.js';
import { log, round } from './report.js';

export interface ScaleSettings {
  organizations: number;
  webhooks: number;
  deliveries: number;
  answerMs: number;
  workerConcurrency: number;
  perWebhook: number;
}

export type ScaleOutRun = Drain & {
  workers: number;
  /** What the attempts in flight allow: workers x budget / answer time (capped by the webhooks' bounds). */
  boundPerSecond: number;
};
export type ScaleOutResult = Awaited<ReturnType<typeof scaleOutScenario>>;
export type RebalanceResult = Awaited<ReturnType<typeof rebalanceScenario>>;

/** serve's pool is kept small while it queues, so that four workers and serve stay inside the 100
 * connections a default PostgreSQL allows (the engine keeps connections of its own). */
const backlog = (b: Bench, tenants: Tenant[], o: ScaleSettings) => {
  b.receiver.delayMs = o.answerMs;
  return queue(b, b.feed, tenants, Math.ceil(o.deliveries / o.webhooks), { SVC_DB_POOL_SIZE: '8' });
};

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

const stopEach = async (children: Child[]) => {
  for (const c of children) await c.stop();
};

/** A drain by 1, 2, 4 ... workers, each of its own backlog; rate and CPU from every worker ready. */
export async function scaleOutScenario(b: Bench, tenants: Tenant[], o: ScaleSettings, workers: number[]) {
  const runs: ScaleOutRun[] = [];
  for (const n of workers) {
    const { serve, expected } = await backlog(b, tenants, o);
    const children: Child[] = [serve!];
    try {
      children.push(...(await startWorkers(b, o, n)));
      const bound = Math.min(n * o.workerConcurrency, o.webhooks * o.perWebhook);
      const run = { workers: n, ...(await drain(b, expected, children, 'ready')) };
      runs.push({ ...run, boundPerSecond: round((bound * 1000) / o.answerMs, 0) });
      log(
        `scale-out ${n} worker(s): ${run.perSecond}/s, ${run.cpu.nodeUs} + ${run.cpu.postgresUs} ` +
          `µs/delivery, machine ${round(run.cpu.machineBusy * 100)}% busy`,
      );
    } finally {
      await stopEach(children);
    }
  }
  return { date: new Date().toISOString(), settings: o, runs };
}

/** How long after `at` each webhook next received a delivery: the longest wait, and how many waited over 1 s. */
function resumption(arrivals: Arrival[], at: number) {
  const next = new Map<string, number>();
  for (const a of arrivals) if (a.at > at && !next.has(a.path)) next.set(a.path, a.at - at);
  const waits = [...next.values()];
  return {
    /** After the SIGKILL: when every webhook still owed deliveries had one again (null: none was owed). */
    resumedSeconds: waits.length > 0 ? round(Math.max(...waits) / 1000, 2) : null,
    webhooksPausedOverSecond: waits.filter((w) => w > 1000).length,
  };
}

/**
 * Three workers drain; at 20% of the backlog a fourth starts, at 40% one is SIGKILLed, at 60% another
 * gets SIGTERM. The attempt time-out is set 1.5 s under the lease (it must be shorter) so that the
 * lease can be short.
 */
export async function rebalanceScenario(
  b: Bench,
  tenants: Tenant[],
  o: ScaleSettings & { leaseSeconds: number },
) {
  const env = {
    SVC_WEBHOOK_LEASE_SECONDS: String(o.leaseSeconds),
    SVC_WEBHOOK_TIMEOUT_MS: String(Math.max(100, o.leaseSeconds * 1000 - 1500)),
  };
  const { serve, expected } = await backlog(b, tenants, o);
  const count = distinct(b.receiver);
  const events: { at: number; what: string }[] = [];
  const t0 = performance.now();
  const note = (what: string) => {
    events.push({ at: round((performance.now() - t0) / 1000, 2), what });
    log(`rebalance: ${what} at ${count()} of ${expected}`);
  };
  const reach = (share: number) => b.receiver.until(() => count() >= expected * share, 10 * 60_000);
  const children: Child[] = [serve!];
  try {
    const workers = await startWorkers(b, o, 3, env);
    children.push(...workers);
    note('3 workers ready');
    await reach(0.2);
    children.push(...(await startWorkers(b, o, 1, env)));
    note('a 4th worker ready');
    await reach(0.4);
    const killedAt = performance.now();
    await workers[1]?.stop('SIGKILL');
    note('worker 2 SIGKILLed');
    await reach(0.6);
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
      /** Deliveries whose first arrival carried X-SVC-Attempt above 1: attempts counted but not sent. */
      firstArrivalAfterFirstAttempt: [...firstAttempt.values()].filter((n) => n > 1).length,
      maxInFlightPerWebhook: Math.max(0, ...b.receiver.maxInFlight.values()),
      ...resumption(all, killedAt),
      events,
    };
  } finally {
    await stopEach(children);
  }
}

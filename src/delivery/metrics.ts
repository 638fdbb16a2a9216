// Delivery metrics, on the process's registry (the operator API's /metrics). Labels are bounded:
// per-tenant figures are the operator API's.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Queryable } from '../db/db.js';
import { backlog, deliveryCounts } from './engine.js';

/** What an attempt came to (svc_webhook_attempts_total's `outcome`). */
export const ATTEMPT_CLASSES = [
  '2xx',
  '3xx',
  '4xx',
  '5xx',
  'timeout',
  'network',
  'refused_target',
  'service_fault',
  'not_sent',
] as const;
export type AttemptClass = (typeof ATTEMPT_CLASSES)[number];

export interface DeliveryMetrics {
  attempts: Counter<'outcome'>;
  faults: Counter;
  lag: Histogram;
  disabled: Counter;
  claims: Counter;
  partitions: Gauge;
  inFlight: Gauge;
}

const made = new WeakMap<Registry, DeliveryMetrics>();

/**
 * `db` answers the queue gauges at scrape time (two small reads). One set per registry: a worker
 * restarted in the same process counts on.
 */
export function createDeliveryMetrics(registry: Registry, db: Queryable): DeliveryMetrics {
  const existing = made.get(registry);
  if (existing) return existing;
  const registers = [registry];
  new Gauge({
    name: 'svc_webhook_deliveries',
    help: 'Deliveries not yet final, by state.',
    labelNames: ['status'],
    registers,
    async collect() {
      const counts = new Map((await deliveryCounts(db)).map((r) => [r.status, r.n]));
      for (const status of ['pending', 'delivering', 'failed']) this.set({ status }, counts.get(status) ?? 0);
    },
  });
  let last: Promise<{ due: number; oldestDueSeconds: number }> | null = null;
  // Both backlog gauges from one read per scrape.
  const read = () => {
    last ??= backlog(db).finally(() => setTimeout(() => (last = null), 100).unref());
    return last;
  };
  new Gauge({
    name: 'svc_webhook_backlog',
    help: 'Deliveries due now and not leased by any worker.',
    registers,
    async collect() {
      this.set((await read()).due);
    },
  });
  new Gauge({
    name: 'svc_webhook_oldest_due_seconds',
    help: 'How long the oldest delivery due and not leased has waited.',
    registers,
    async collect() {
      this.set((await read()).oldestDueSeconds);
    },
  });
  const metrics: DeliveryMetrics = {
    attempts: new Counter({
      name: 'svc_webhook_attempts_total',
      help: 'Delivery attempts of this process by outcome: 2xx, 3xx, 4xx, 5xx, timeout, network, refused_target, service_fault, not_sent (webhook or integration inactive).',
      labelNames: ['outcome'],
      registers,
    }),
    faults: new Counter({
      name: 'svc_webhook_service_faults_total',
      help: 'Attempts the service could not make for a fault of its own (a secret that does not open, a body not made).',
      registers,
    }),
    lag: new Histogram({
      name: 'svc_webhook_lag_seconds',
      help: 'From an event entering the log to the start of its first delivery attempt.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    disabled: new Counter({
      name: 'svc_webhooks_disabled_total',
      help: 'Webhooks deactivated after 100 deliveries in a row ended dead.',
      registers,
    }),
    claims: new Counter({
      name: 'svc_webhook_claims_total',
      help: 'Exchanges of the workers of this process that claimed (each claims a batch of deliveries, or none).',
      registers,
    }),
    partitions: new Gauge({
      name: 'svc_webhook_partitions_owned',
      help: 'Partitions of the webhooks (of 64) the worker of this process owns.',
      registers,
    }),
    inFlight: new Gauge({
      name: 'svc_webhook_in_flight',
      help: 'Attempts in flight in the worker of this process.',
      registers,
    }),
  };
  // Every outcome is a series from the start, at 0, so a rate() reads it before the first attempt.
  for (const outcome of ATTEMPT_CLASSES) metrics.attempts.inc({ outcome }, 0);
  made.set(registry, metrics);
  return metrics;
}

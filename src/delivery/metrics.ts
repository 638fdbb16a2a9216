// Delivery metrics, on the process's registry (the operator API's /metrics).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Queryable } from '../db/db.js';
import { deliveryCounts } from './store.js';

export interface DeliveryMetrics {
  attempts: Counter<'outcome'>;
  lag: Histogram;
  disabled: Counter;
  claims: Counter;
}

const made = new WeakMap<Registry, DeliveryMetrics>();

/**
 * `db` answers the queue-depth gauge at scrape time (one grouped count). One set per registry:
 * a worker restarted in the same process counts on.
 */
export function createDeliveryMetrics(registry: Registry, db: Queryable): DeliveryMetrics {
  const existing = made.get(registry);
  if (existing) return existing;
  new Gauge({
    name: 'svc_webhook_deliveries',
    help: 'Deliveries not yet final, by state.',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const counts = new Map((await deliveryCounts(db)).map((r) => [r.status, r.n]));
      for (const status of ['pending', 'delivering', 'failed']) this.set({ status }, counts.get(status) ?? 0);
    },
  });
  const metrics: DeliveryMetrics = {
    attempts: new Counter({
      name: 'svc_webhook_attempts_total',
      help: 'Delivery attempts by outcome: succeeded, failed (will retry), dead, not_sent (webhook or integration inactive).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    lag: new Histogram({
      name: 'svc_webhook_lag_seconds',
      help: 'From an event entering the log to the start of its first delivery attempt.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    disabled: new Counter({
      name: 'svc_webhooks_disabled_total',
      help: 'Webhooks deactivated after 100 deliveries in a row ended dead.',
      registers: [registry],
    }),
    claims: new Counter({
      name: 'svc_webhook_claims_total',
      help: 'Claim statements run by the workers of this process (each claims a batch of deliveries, or none).',
      registers: [registry],
    }),
  };
  // Every outcome is a series from the start, at 0: a worker that has attempted nothing yet (a
  // scaled-out worker whose webhooks another holds) still shows the series a rate() reads.
  for (const outcome of ['succeeded', 'failed', 'dead', 'not_sent']) metrics.attempts.inc({ outcome }, 0);
  made.set(registry, metrics);
  return metrics;
}

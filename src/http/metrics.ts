// Prometheus metrics of one process, exposed by the operator API at /metrics.
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

export interface Metrics {
  registry: Registry;
  requestDuration: Histogram<'app' | 'method' | 'route' | 'status'>;
  authFailures: Counter<'code'>;
  /**
   * Metrics of this process kept on other threads (the delivery thread's own registry), each in
   * the text format, appended to the registry's by metricsText().
   */
  elsewhere: Set<() => Promise<string>>;
}

/** Everything this process measures, in Prometheus's text format. */
export async function metricsText(metrics: Pick<Metrics, 'registry' | 'elsewhere'>): Promise<string> {
  const parts = await Promise.all([metrics.registry.metrics(), ...[...metrics.elsewhere].map((f) => f())]);
  return parts.filter((part) => part !== '').join('\n');
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    elsewhere: new Set(),
    requestDuration: new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by application, method, route template and status.',
      labelNames: ['app', 'method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    authFailures: new Counter({
      name: 'svc_auth_failures_total',
      help: 'Requests refused by authentication, by error code.',
      labelNames: ['code'],
      registers: [registry],
    }),
  };
}

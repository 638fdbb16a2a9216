// One load run: a warm-up that is thrown away, then a measured run at the same concurrency.
import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  connections: number;
  /** Seconds measured. */
  duration: number;
  /** Seconds of warm-up before. */
  warmup: number;
  /**
   * Open model: requests are sent at this overall rate whatever the answers, and latency counts
   * from when a request was due (no coordinated omission). Without it every connection sends its
   * next request when the last is answered (the most the server can do).
   */
  rate?: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  latencyMs: { p50: number; p99: number; mean: number; max: number };
  requests: number;
  /** Answers other than 2xx, plus connection errors and time-outs: a valid run has none. */
  failures: number;
  seconds: number;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const base = {
    url: options.url,
    headers: options.headers,
    connections: options.connections,
    timeout: 10,
    ...(options.rate ? { overallRate: options.rate } : {}),
  };
  if (options.warmup > 0) await autocannon({ ...base, duration: options.warmup });
  const r = await autocannon({ ...base, duration: options.duration });
  const requests = r.requests.total;
  return {
    requestsPerSecond: Math.round(requests / r.duration),
    latencyMs: {
      p50: r.latency.p50,
      p99: r.latency.p99,
      mean: Math.round(r.latency.mean * 100) / 100,
      max: r.latency.max,
    },
    requests,
    failures: r.non2xx + r.errors + r.timeouts,
    seconds: r.duration,
  };
}

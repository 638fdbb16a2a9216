// One closed-model load run with autocannon: every connection sends its next request as soon as
// the last is answered, which finds the most the server can do.
import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  connections: number;
  /** Seconds measured. */
  duration: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  p99Ms: number;
  requests: number;
  /** Answers other than 2xx, plus connection errors and time-outs: a valid run has none. */
  failures: number;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const r = await autocannon({ ...options, timeout: 10 });
  return {
    requestsPerSecond: Math.round(r.requests.total / r.duration),
    p99Ms: r.latency.p99,
    requests: r.requests.total,
    failures: r.non2xx + r.errors + r.timeouts,
  };
}

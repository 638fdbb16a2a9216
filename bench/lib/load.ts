// One load run: a warm-up that is thrown away, then a measured run.
//
// Two models. Closed (autocannon): every connection sends its next request as soon as the last is
// answered, which finds the most the server can do. Open (`rate`): requests are sent on a fixed
// schedule whatever the answers, and each latency counts from the moment its request was due, so
// a server that falls behind is charged for the wait (no coordinated omission). The open model is
// written here rather than taken from autocannon's `overallRate`, which is neither: each of its
// connections sends back to back until it has used its share of the second, then waits for the
// next second, so every second starts with a burst at full speed, and it then corrects for
// coordinated omission with an expected interval of 1 ms, adding samples that were never sent.
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { Pool } from 'undici';

export interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  connections: number;
  /** Seconds measured. */
  duration: number;
  /** Seconds of warm-up before. */
  warmup: number;
  /** Open model at this many requests per second (see above); without it, the closed model. */
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
  if (options.rate) return runOpen({ ...options, rate: options.rate });
  const base = {
    url: options.url,
    headers: options.headers,
    connections: options.connections,
    timeout: 10,
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

const round2 = (ms: number) => Math.round(ms * 100) / 100;

/** The middle value, or the mean of the middle two. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The value below which `share` of the sorted samples lie (nearest rank). */
export function percentile(sorted: readonly number[], share: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(share * sorted.length)));
  return sorted[rank - 1] as number;
}

/**
 * Requests due every 1/rate s from the start, each sent on a free connection of the pool (or
 * queued for one, the wait counted); latency from the due moment to the last byte of the body.
 */
async function runOpen(options: LoadOptions & { rate: number }): Promise<LoadResult> {
  const target = new URL(options.url);
  const path = `${target.pathname}${target.search}`;
  const pool = new Pool(target.origin, {
    connections: options.connections,
    pipelining: 1,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const schedule = async (seconds: number) => {
    const interval = 1000 / options.rate;
    const total = Math.max(1, Math.round(seconds * options.rate));
    const latencies: number[] = [];
    let failures = 0;
    const answers: Promise<void>[] = [];
    const start = performance.now();
    for (let i = 0; i < total; i++) {
      const due = start + i * interval;
      const wait = due - performance.now();
      if (wait >= 1) await sleep(Math.floor(wait));
      answers.push(
        pool.request({ path, method: 'GET', headers: options.headers }).then(
          async (res) => {
            await res.body.arrayBuffer();
            if (res.statusCode >= 200 && res.statusCode < 300) latencies.push(performance.now() - due);
            else failures += 1;
          },
          () => {
            failures += 1;
          },
        ),
      );
    }
    await Promise.all(answers);
    return { latencies, failures, seconds: (performance.now() - start) / 1000 };
  };
  try {
    if (options.warmup > 0) await schedule(options.warmup);
    const { latencies, failures, seconds } = await schedule(options.duration);
    const sorted = latencies.sort((a, b) => a - b);
    const mean = sorted.reduce((sum, v) => sum + v, 0) / Math.max(1, sorted.length);
    return {
      requestsPerSecond: Math.round(sorted.length / seconds),
      latencyMs: {
        p50: round2(percentile(sorted, 0.5)),
        p99: round2(percentile(sorted, 0.99)),
        mean: round2(mean),
        max: round2(sorted.at(-1) ?? 0),
      },
      requests: sorted.length + failures,
      failures,
      seconds: Math.round(seconds * 100) / 100,
    };
  } finally {
    await pool.close();
  }
}

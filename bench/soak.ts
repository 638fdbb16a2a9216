// npm run bench:soak [-- --minutes 10 --warmup-minutes 3 --read-rate 50 --feed-rate 10 ...]
//
// Soak: the service as operators run it (`svc serve` and one `svc worker` from dist, PostgreSQL,
// Redis), under a fixed rate of mixed reads (public API), booking changes (operator feed) and the
// webhook deliveries they cause (3 webhooks on a local HTTPS receiver), for --minutes. Every
// --sample-seconds it reads both processes' /metrics (the operator API's for serve, SVC_METRICS_PORT
// for the worker): process_resident_memory_bytes and nodejs_eventloop_lag_p99_seconds (prom-client
// resets that histogram at each scrape, so each sample is the p99 of its own interval).
//
// It fails (exit 1) when, after the warm-up, a process's RSS grows more than 10% (the median of
// the last three samples against the median of the first three) or the p99 event-loop delay of an
// interval exceeds 100 ms in more than 1% of the intervals (so one hiccup of a shared machine is
// reported, not failed). It writes the "## Soak" section of BENCHMARKS.md and a JSON result in
// bench/results.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { bookingBody } from '../test/support/feed.js';
import { call, freePort, recreateDatabase, service, startServe, startWorker } from './lib/proc.js';
import { startReceiver } from './lib/receiver.js';
import {
  log,
  machine,
  median,
  percentile,
  positive,
  RESULTS,
  ROOT,
  round,
  saveNewest,
  writeSection,
} from './lib/report.js';

const SCOPES = ['bookings:read', 'events:read', 'webhooks:read', 'webhooks:write', 'customers:read'];
const RSS_GROWTH_LIMIT = 0.1;
const LAG_P99_LIMIT_MS = 100;

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    'warmup-minutes': { type: 'string' },
    'read-rate': { type: 'string', default: '50' },
    'feed-rate': { type: 'string', default: '10' },
    webhooks: { type: 'string', default: '3' },
    'sample-seconds': { type: 'string', default: '5' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/svc_bench_soak' },
    'redis-url': { type: 'string', default: process.env.REDIS_URL || 'redis://127.0.0.1:6379' },
    'skip-build': { type: 'boolean', default: false },
    'no-report': { type: 'boolean', default: false },
  },
});

const minutes = positive('minutes', args.minutes);
const options = {
  minutes,
  warmupMinutes: args['warmup-minutes']
    ? positive('warmup-minutes', args['warmup-minutes'])
    : Math.min(3, minutes / 3),
  readRate: positive('read-rate', args['read-rate']),
  feedRate: positive('feed-rate', args['feed-rate']),
  webhooks: positive('webhooks', args.webhooks),
  sampleMs: positive('sample-seconds', args['sample-seconds']) * 1000,
};
if (options.warmupMinutes >= minutes) throw new Error('--warmup-minutes must be shorter than --minutes');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function metric(text: string, name: string): number | null {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : null;
}

interface Sample {
  at: number;
  /** Seconds since the start. */
  t: number;
  serveRssMb: number | null;
  workerRssMb: number | null;
  serveLagP99Ms: number | null;
  workerLagP99Ms: number | null;
}

async function main(): Promise<number> {
  if (!args['skip-build']) {
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  const databaseUrl = args['database-url'];
  await recreateDatabase(databaseUrl);
  const receiver = await startReceiver(ROOT);
  const metricsPort = await freePort();
  const s = await service(
    ROOT,
    { kind: 'postgres', url: databaseUrl },
    {
      REDIS_URL: args['redis-url'],
      SVC_METRICS_PORT: String(metricsPort),
    },
  );
  log(
    `soak: ${options.minutes} min (warm-up ${options.warmupMinutes}), ${options.readRate} reads/s, ${options.feedRate} feed changes/s × ${options.webhooks} webhooks`,
  );
  const serve = await startServe(s);
  const worker = await startWorker(s);
  const op = (path: string, method = 'GET', body?: unknown) =>
    call<any>(`${s.operatorUrl}${path}`, method, s.operatorToken, body);

  const org = await op('/organizations', 'POST', {
    code: String(700 + (process.pid % 200)),
    name: 'Soak',
    webhooks_enabled: true,
    outbox_enabled: true,
  });
  const integration = await op(`/organizations/${org.id}/integrations`, 'POST', {
    name: 'ERP',
    kind: 'erp',
    scopes: SCOPES,
  });
  const { key } = await op(`/integrations/${integration.id}/keys`, 'POST', {
    name: 'k',
    scopes: SCOPES,
    environment: 'live',
  });
  for (let i = 0; i < options.webhooks; i += 1) {
    await call(`${s.baseUrl}/webhooks`, 'POST', key, { url: receiver.url(`/soak/${i}`), events: ['*'] });
  }
  // A pool of bookings the feed keeps changing, so the tables stay the size of a steady state.
  const pool = Array.from({ length: 500 }, () => randomUUID());
  for (const id of pool.slice(0, 100))
    await op(`/organizations/${org.id}/bookings/${id}`, 'PUT', bookingBody());

  const reads = [
    '/bookings?limit=25',
    '/events?limit=25',
    '/integrations/me',
    '/webhooks',
    '/customers?limit=25',
  ];
  const readMs: number[] = [];
  const feedMs: number[] = [];
  let failures = 0;
  let changes = 0;
  const reasons = new Map<string, number>();
  const inFlight = new Set<Promise<void>>();
  const fire = (fn: () => Promise<void>) => {
    const p = fn()
      .catch((error: unknown) => {
        failures += 1;
        const why = String((error as Error).message ?? error).slice(0, 120);
        reasons.set(why, (reasons.get(why) ?? 0) + 1);
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const started = Date.now();
  const endAt = started + options.minutes * 60_000;
  const warmEnd = started + options.warmupMinutes * 60_000;

  // Open model: requests leave on schedule whatever the answers' pace.
  let readsSent = 0;
  let feedSent = 0;
  const load = (async () => {
    while (Date.now() < endAt) {
      const elapsed = (Date.now() - started) / 1000;
      while (readsSent < elapsed * options.readRate) {
        const path = reads[readsSent % reads.length] as string;
        readsSent += 1;
        fire(async () => {
          const t0 = performance.now();
          const res = await fetch(`${s.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`GET ${path.split('?')[0]}: ${res.status}`);
          if (Date.now() > warmEnd) readMs.push(performance.now() - t0);
        });
      }
      while (feedSent < elapsed * options.feedRate) {
        const id = pool[feedSent % pool.length] as string;
        const n = feedSent;
        feedSent += 1;
        fire(async () => {
          const t0 = performance.now();
          await op(
            `/organizations/${org.id}/bookings/${id}`,
            'PUT',
            bookingBody({ distance_km: 10 + (n % 97) }),
          );
          changes += 1;
          if (Date.now() > warmEnd) feedMs.push(performance.now() - t0);
        });
      }
      await sleep(5);
    }
  })();

  const samples: Sample[] = [];
  const sampler = (async () => {
    while (Date.now() < endAt) {
      await sleep(options.sampleMs);
      const [serveText, workerText] = await Promise.all([
        fetch(`${s.operatorUrl}/metrics`, {
          headers: { authorization: `Bearer ${s.operatorToken}` },
          signal: AbortSignal.timeout(options.sampleMs),
        })
          .then((r) => r.text())
          .catch(() => ''),
        fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(options.sampleMs) })
          .then((r) => r.text())
          .catch(() => ''),
      ]);
      const mb = (text: string) => {
        const v = metric(text, 'process_resident_memory_bytes');
        return v === null ? null : round(v / 1024 / 1024);
      };
      const ms = (text: string) => {
        const v = metric(text, 'nodejs_eventloop_lag_p99_seconds');
        return v === null ? null : round(v * 1000, 2);
      };
      const sample: Sample = {
        at: Date.now(),
        t: round((Date.now() - started) / 1000, 0),
        serveRssMb: mb(serveText),
        workerRssMb: mb(workerText),
        serveLagP99Ms: ms(serveText),
        workerLagP99Ms: ms(workerText),
      };
      samples.push(sample);
      log(
        `t=${sample.t}s rss serve ${sample.serveRssMb} MB worker ${sample.workerRssMb} MB; loop p99 serve ${sample.serveLagP99Ms} ms worker ${sample.workerLagP99Ms} ms; ${receiver.arrivals.length} deliveries, ${failures} failures ${JSON.stringify([...reasons].slice(0, 3))}`,
      );
    }
  })();

  await Promise.all([load, sampler]);
  await Promise.all(inFlight);
  // The 100 bookings made before the load are delivered too.
  const expected = (changes + 100) * options.webhooks;
  await receiver.until(() => receiver.arrivals.length >= expected, 60_000);
  const delivered = receiver.arrivals.length;
  await worker.stop();
  await serve.stop();
  await receiver.close();

  const after = samples.filter((x) => x.at > warmEnd);
  const judge = (name: 'serve' | 'worker') => {
    const rss = after.map((x) => x[`${name}RssMb`]).filter((v): v is number => v !== null);
    const lags = after.map((x) => x[`${name}LagP99Ms`]).filter((v): v is number => v !== null);
    const first = median(rss.slice(0, 3));
    const last = median(rss.slice(-3));
    const growth = last / first - 1;
    const over = lags.filter((v) => v > LAG_P99_LIMIT_MS).length;
    return {
      rssStartMb: first,
      rssEndMb: last,
      rssPeakMb: Math.max(...rss),
      rssGrowth: round(growth * 100, 1),
      lagP99MedianMs: round(median(lags), 2),
      lagP99MaxMs: round(Math.max(...lags), 2),
      intervalsOver: over,
      intervals: lags.length,
      rssOk: rss.length >= 6 && growth <= RSS_GROWTH_LIMIT,
      lagOk: lags.length > 0 && over <= Math.floor(lags.length / 100),
    };
  };
  const result = {
    date: new Date().toISOString(),
    machine: machine(),
    options,
    serve: judge('serve'),
    worker: judge('worker'),
    reads: {
      n: readMs.length,
      p50: round(percentile(readMs, 0.5), 2),
      p99: round(percentile(readMs, 0.99), 2),
    },
    feed: {
      n: feedMs.length,
      p50: round(percentile(feedMs, 0.5), 2),
      p99: round(percentile(feedMs, 0.99), 2),
    },
    changes,
    deliveriesExpected: expected,
    delivered,
    failures,
    failureReasons: Object.fromEntries(reasons),
    samples,
  };
  const passed =
    result.serve.rssOk &&
    result.serve.lagOk &&
    result.worker.rssOk &&
    result.worker.lagOk &&
    failures === 0 &&
    delivered >= expected;
  await mkdir(RESULTS, { recursive: true });
  log(`saved ${await saveNewest('soak', result)}`);
  if (!args['no-report']) {
    await writeSection('## Soak', section(result, passed));
  }
  log(passed ? 'soak: passed' : 'soak: FAILED');
  return passed ? 0 : 1;
}

function section(r: any, passed: boolean): string {
  const row = (name: string, j: any) =>
    `| ${name} | ${j.rssStartMb} | ${j.rssEndMb} | ${j.rssPeakMb} | ${j.rssGrowth}% ${j.rssOk ? 'met' : 'MISSED'} | ${j.lagP99MedianMs} | ${j.lagP99MaxMs} | ${j.intervalsOver} of ${j.intervals} ${j.lagOk ? 'met' : 'MISSED'} |`;
  return `Measured by \`npm run bench:soak\` (bench/soak.ts), ${r.date.slice(0, 16).replace('T', ' ')} UTC, ${r.options.minutes} minutes
(the first ${round(r.options.warmupMinutes, 2)} warm-up), on PostgreSQL and Redis, load average at the start ${r.machine.loadAverage.join(' / ')}
on ${r.machine.cpus} × ${r.machine.cpuModel}. \`svc serve\` and one \`svc worker\` from dist; at a fixed rate (open model)
${r.options.readRate} reads/s over five list and identity endpoints, ${r.options.feedRate} booking changes/s through the operator
feed, each delivered to ${r.options.webhooks} webhooks on a local HTTPS receiver. RSS and event-loop delay read from each
process's /metrics every ${r.options.sampleMs / 1000} s (the p99 is that of each interval). Limits: RSS growth after the
warm-up at most ${RSS_GROWTH_LIMIT * 100}% (median of the last three samples against the first three), interval p99
event-loop delay over ${LAG_P99_LIMIT_MS} ms in at most 1% of the intervals. **${passed ? 'Passed' : 'Failed'}.**

| Process | RSS after warm-up, MB | RSS at the end, MB | peak, MB | growth | loop delay p99, median of intervals, ms | worst interval, ms | intervals over ${LAG_P99_LIMIT_MS} ms |
|---|---:|---:|---:|---|---:|---:|---|
${row('svc serve', r.serve)}
${row('svc worker', r.worker)}

| Traffic after warm-up | n | p50 ms | p99 ms |
|---|---:|---:|---:|
| reads | ${r.reads.n} | ${r.reads.p50} | ${r.reads.p99} |
| feed PUTs | ${r.feed.n} | ${r.feed.p50} | ${r.feed.p99} |

${r.changes} booking changes, ${r.delivered} of ${r.deliveriesExpected} deliveries received, ${r.failures} failed requests.
`;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    console.error(error);
    process.exitCode = 1;
  },
);

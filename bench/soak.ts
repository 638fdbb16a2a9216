// npm run bench:soak [-- --minutes 10 --warmup-minutes 3 --read-rate 50 --feed-rate 10 ...]
//
// `svc serve` and one `svc worker` (PostgreSQL, Redis) under fixed rates (open model) of reads,
// booking changes through the feed and the deliveries they cause. Every --sample-seconds both
// processes' /metrics give their RSS and event-loop p99 (prom-client resets that histogram at each
// scrape: each sample is its interval's). Fails when, after the warm-up, a process's RSS grows over
// 10% (median of the last three samples against the first three) or an interval's p99 passes
// 100 ms in over 1% of the intervals (one hiccup of a shared machine is reported, not failed).
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { bookingBody } from '../test/support/feed.js';
import { createTenant } from './lib/feed.js';
import { call, createDatabase, freePort, service, startServe, startWorker } from './lib/proc.js';
import { startReceiver } from './lib/receiver.js';
import * as r from './lib/report.js';

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
    'dry-run': { type: 'boolean', default: false },
  },
});
const minutes = r.positive('minutes', args.minutes);
const o = {
  minutes,
  warmupMinutes: args['warmup-minutes']
    ? r.positive('warmup-minutes', args['warmup-minutes'])
    : Math.min(3, minutes / 3),
  readRate: r.positive('read-rate', args['read-rate']),
  feedRate: r.positive('feed-rate', args['feed-rate']),
  webhooks: r.positive('webhooks', args.webhooks),
  sampleMs: r.positive('sample-seconds', args['sample-seconds']) * 1000,
};
const SCOPES = ['bookings:read', 'events:read', 'webhooks:read', 'webhooks:write', 'customers:read'];
const READS = [
  '/bookings?limit=25',
  '/events?limit=25',
  '/integrations/me',
  '/webhooks',
  '/customers?limit=25',
];
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

const metric = (text: string, name: string, scale: number) => {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return match ? r.round(Number(match[1]) * scale, 2) : null;
};
const scrape = (url: string, headers: Record<string, string>) =>
  fetch(url, { headers, signal: AbortSignal.timeout(o.sampleMs) })
    .then((res) => res.text())
    .then((t) => ({
      rssMb: metric(t, 'process_resident_memory_bytes', 2 ** -20),
      lagMs: metric(t, 'nodejs_eventloop_lag_p99_seconds', 1000),
    }))
    .catch(() => ({ rssMb: null, lagMs: null }));

/** RSS growth and event-loop delay of one process over the samples after the warm-up. */
function judge(samples: { rssMb: number | null; lagMs: number | null }[]) {
  const rss = samples.flatMap((x) => (x.rssMb === null ? [] : [x.rssMb]));
  const lags = samples.flatMap((x) => (x.lagMs === null ? [] : [x.lagMs]));
  const growth = r.median(rss.slice(-3)) / r.median(rss.slice(0, 3)) - 1;
  const over = lags.filter((v) => v > 100).length;
  return {
    rssStartMb: r.median(rss.slice(0, 3)),
    rssEndMb: r.median(rss.slice(-3)),
    growth: r.round(growth * 100),
    lagP99MedianMs: r.median(lags),
    lagP99MaxMs: Math.max(...lags),
    intervalsOver: `${over} of ${lags.length}`,
    ok: rss.length >= 6 && growth <= 0.1 && lags.length > 0 && over <= Math.floor(lags.length / 100),
  };
}

async function main(): Promise<boolean> {
  r.build(args['skip-build']);
  const url = args['database-url'];
  await createDatabase(url, true);
  const receiver = await startReceiver(r.ROOT);
  const metricsPort = await freePort();
  const s = await service(
    r.ROOT,
    { kind: 'postgres', url },
    { REDIS_URL: args['redis-url'], SVC_METRICS_PORT: String(metricsPort) },
  );
  const serve = await startServe(s);
  const worker = await startWorker(s);
  const op = <T>(path: string, body: unknown, method = 'POST') =>
    call<T>(`${s.operatorUrl}${path}`, method, s.operatorToken, body);
  const paths = Array.from({ length: o.webhooks }, (_, i) => `/soak/${i}`);
  const { organizationId, key } = await createTenant(s, receiver, paths, SCOPES);
  // A pool of bookings the feed keeps changing, so the tables stay the size of a steady state.
  const bookings = Array.from({ length: 500 }, () => randomUUID());
  for (const id of bookings.slice(0, 100))
    await op(`/organizations/${organizationId}/bookings/${id}`, bookingBody(), 'PUT');

  const started = Date.now();
  const warmEnd = started + o.warmupMinutes * 60_000;
  const endAt = started + o.minutes * 60_000;
  const readMs: number[] = [];
  const feedMs: number[] = [];
  let failures = 0;
  let changes = 0;
  const inFlight = new Set<Promise<void>>();
  const fire = (request: () => Promise<void>, times: number[]) => {
    const t0 = performance.now();
    const p = request()
      .then(() => void (Date.now() > warmEnd && times.push(performance.now() - t0)))
      .catch(() => void failures++)
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const load = (async () => {
    let reads = 0;
    let writes = 0;
    while (Date.now() < endAt) {
      const elapsed = (Date.now() - started) / 1000;
      for (; reads < elapsed * o.readRate; reads++) {
        const path = READS[reads % READS.length] as string;
        fire(() => call(`${s.baseUrl}${path}`, 'GET', key), readMs);
      }
      for (; writes < elapsed * o.feedRate; writes++) {
        const id = bookings[writes % bookings.length] as string;
        const body = bookingBody({ distance_km: 10 + (writes % 97) });
        fire(
          () => op(`/organizations/${organizationId}/bookings/${id}`, body, 'PUT').then(() => void changes++),
          feedMs,
        );
      }
      await sleep(5);
    }
  })();
  const samples: {
    at: number;
    serve: Awaited<ReturnType<typeof scrape>>;
    worker: Awaited<ReturnType<typeof scrape>>;
  }[] = [];
  while (Date.now() < endAt) {
    await sleep(o.sampleMs);
    const [a, b] = await Promise.all([
      scrape(`${s.operatorUrl}/metrics`, { authorization: `Bearer ${s.operatorToken}` }),
      scrape(`http://127.0.0.1:${metricsPort}/metrics`, {}),
    ]);
    samples.push({ at: Date.now(), serve: a, worker: b });
    r.log(
      `rss serve ${a.rssMb} / worker ${b.rssMb} MB, loop p99 ${a.lagMs} / ${b.lagMs} ms, ${failures} failures`,
    );
  }
  await load;
  await Promise.all(inFlight);
  const expected = (changes + 100) * o.webhooks;
  await receiver.until(() => receiver.arrivals.length >= expected, 60_000);
  const delivered = receiver.arrivals.length;
  await worker.stop();
  await serve.stop();
  await receiver.close();

  const after = samples.filter((x) => x.at > warmEnd);
  const spread = (xs: number[]) => ({
    n: xs.length,
    p50: r.round(r.percentile(xs, 0.5), 2),
    p99: r.round(r.percentile(xs, 0.99), 2),
  });
  const result = {
    date: new Date().toISOString(),
    machine: r.machine(),
    options: o,
    serve: judge(after.map((x) => x.serve)),
    worker: judge(after.map((x) => x.worker)),
    reads: spread(readMs),
    feed: spread(feedMs),
    expected,
    delivered,
    failures,
  };
  const passed = result.serve.ok && result.worker.ok && failures === 0 && delivered >= expected;
  const j = (name: string, x: ReturnType<typeof judge>) => [
    name,
    x.rssStartMb,
    x.rssEndMb,
    `${x.growth}%`,
    x.lagP99MedianMs,
    x.lagP99MaxMs,
    x.intervalsOver,
    x.ok ? 'met' : 'MISSED',
  ];
  const markdown = [
    `Written by \`npm run bench:soak\`, ${result.date.slice(0, 16).replace('T', ' ')} UTC, ${o.minutes} minutes (the first ` +
      `${r.round(o.warmupMinutes, 2)} warm-up), PostgreSQL and Redis, ${o.readRate} reads/s and ${o.feedRate} changes/s to ` +
      `${o.webhooks} webhooks; load average at the start ${result.machine.loadAverage.join(' / ')}. **${passed ? 'Passed' : 'Failed'}.**`,
    '',
    r.table(
      'Process|RSS after warm-up, MB|at the end, MB|growth|loop p99, median ms|worst ms|intervals over 100 ms|',
      [j('svc serve', result.serve), j('svc worker', result.worker)],
    ),
    '',
    `Reads p50 / p99 ${result.reads.p50} / ${result.reads.p99} ms, feed writes ${result.feed.p50} / ${result.feed.p99} ms; ` +
      `${delivered} of ${expected} deliveries received, ${failures} failed requests.`,
  ].join('\n');
  process.stdout.write(`${markdown}\n`);
  if (!args['dry-run']) {
    await mkdir(r.RESULTS, { recursive: true });
    r.log(`saved ${await r.saveNewest('soak', result)}`);
    await r.writeSection('## Soak', markdown);
  }
  return passed;
}

r.runMain(main);

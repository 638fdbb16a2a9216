// npm run bench:soak [-- --minutes 10 --warmup-minutes 3 --read-rate 50 --feed-rate 10 ...]   (bench/README.md)
//
// `svc serve` and one `svc worker` (PostgreSQL, Redis) under fixed rates (open model) of reads,
// booking changes through the feed and the deliveries they cause. Every --sample-seconds both
// processes' /metrics give their RSS and event-loop p99 (prom-client resets that histogram at each
// scrape: each sample is its interval's). Fails when, after the warm-up, a process's RSS grows over
// 10% (median of the last three samples against the first three) or an interval's p99 passes
// 100 ms in over 1% of the intervals (one hiccup of a shared machine is reported, not failed).
import { randomUUID } from 'node:crypto';
import { bookingBody } from '../test/support/feed.js';
import { createTenant, openLoop } from './lib/feed.js';
import { call, createDatabase, freePort, service, startServe, startWorker } from './lib/proc.js';
import { startReceiver } from './lib/receiver.js';
import * as r from './lib/report.js';

const o = r.cli(
  {
    minutes: 10,
    /** 0: a third of the run, at most 3. */
    warmupMinutes: 0,
    readRate: 50,
    feedRate: 10,
    webhooks: 3,
    sampleSeconds: 5,
    databaseUrl: 'postgres://postgres@127.0.0.1:5432/svc_bench_soak',
    redisUrl: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
  },
  { minutes: 0.5, warmupMinutes: 0.1, sampleSeconds: 1 },
);
const warmupMinutes = o.warmupMinutes || Math.min(3, o.minutes / 3);
const SCOPES = ['bookings:read', 'events:read', 'webhooks:read', 'webhooks:write', 'customers:read'];
const READS = [
  '/bookings?limit=25',
  '/events?limit=25',
  '/integrations/me',
  '/webhooks',
  '/customers?limit=25',
];

type Sample = { rssMb: number | null; lagMs: number | null };

const metric = (text: string, name: string, scale: number) => {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return match ? r.round(Number(match[1]) * scale, 2) : null;
};
const scrape = (url: string, headers: Record<string, string>): Promise<Sample> =>
  fetch(url, { headers, signal: AbortSignal.timeout(o.sampleSeconds * 1000) })
    .then((res) => res.text())
    .then((t) => ({
      rssMb: metric(t, 'process_resident_memory_bytes', 2 ** -20),
      lagMs: metric(t, 'nodejs_eventloop_lag_p99_seconds', 1000),
    }))
    .catch(() => ({ rssMb: null, lagMs: null }));

/** RSS growth and event-loop delay of one process over the samples after the warm-up, as targets. */
function judge(name: string, samples: Sample[]): r.Target[] {
  const rss = samples.flatMap((x) => (x.rssMb === null ? [] : [x.rssMb]));
  const lags = samples.flatMap((x) => (x.lagMs === null ? [] : [x.lagMs]));
  const [start, end] = [r.median(rss.slice(0, 3)), r.median(rss.slice(-3))];
  const over = lags.filter((v) => v > 100).length;
  const loop = `median ${r.round(r.median(lags), 2)} ms, worst ${Math.max(...lags)} ms`;
  return [
    [
      `${name}: RSS growth after the warm-up`,
      '<= 10%',
      `${r.pct(end / start - 1)} (${start} to ${end} MB)`,
      rss.length >= 6 && end / start - 1 <= 0.1,
    ],
    [
      `${name}: intervals with a loop p99 over 100 ms`,
      '<= 1%',
      `${over} of ${lags.length} (${loop})`,
      lags.length > 0 && over <= Math.floor(lags.length / 100),
    ],
  ];
}

async function main(): Promise<boolean> {
  const url = o.databaseUrl;
  await createDatabase(url, true);
  const receiver = await startReceiver();
  const metricsPort = await freePort();
  const s = await service(url, { REDIS_URL: o.redisUrl, SVC_METRICS_PORT: String(metricsPort) });
  const serve = await startServe(s);
  const worker = await startWorker(s);
  const put = (path: string, body: unknown) => s.op(path, body, 'PUT');
  const paths = Array.from({ length: o.webhooks }, (_, i) => `/soak/${i}`);
  const { organizationId, key } = await createTenant(s, receiver, paths, SCOPES);
  // A pool of bookings the feed keeps changing, so the tables stay the size of a steady state.
  const bookings = Array.from({ length: 500 }, () => randomUUID());
  for (const id of bookings.slice(0, 100))
    await put(`/organizations/${organizationId}/bookings/${id}`, bookingBody());

  const started = Date.now();
  const warmEnd = started + warmupMinutes * 60_000;
  const [readMs, feedMs] = [[] as number[], [] as number[]];
  let failures = 0;
  const timed = (times: number[], request: () => Promise<unknown>) => {
    const t0 = performance.now();
    return request().then(
      () => void (Date.now() > warmEnd && times.push(performance.now() - t0)),
      () => void failures++,
    );
  };
  const seconds = o.minutes * 60;
  let changes = 0;
  const change = async (i: number) => {
    const body = bookingBody({ distance_km: 10 + (i % 97) });
    await put(`/organizations/${organizationId}/bookings/${bookings[i % bookings.length]}`, body);
    changes += 1;
  };
  const read = (i: number) => call(`${s.baseUrl}${READS[i % READS.length]}`, 'GET', key);
  const load = Promise.all([
    openLoop(o.readRate, seconds, (i) => timed(readMs, () => read(i))),
    openLoop(o.feedRate, seconds, (i) => timed(feedMs, () => change(i))),
  ]);
  const samples: { at: number; serve: Sample; worker: Sample }[] = [];
  while (Date.now() < started + seconds * 1000) {
    await r.sleep(o.sampleSeconds * 1000);
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
  // Each booking change (and each of the 100 creations) is one event to each webhook.
  const expected = (changes + 100) * o.webhooks;
  await receiver.until(() => receiver.arrivals.length >= expected, 60_000);
  const delivered = receiver.arrivals.length;
  await worker.stop();
  await serve.stop();
  await receiver.close();

  const after = samples.filter((x) => x.at > warmEnd);
  const spread = (xs: number[]) =>
    `${r.round(r.percentile(xs, 0.5), 2)} / ${r.round(r.percentile(xs, 0.99), 2)} ms`;
  const targets: r.Target[] = [
    ...(['serve', 'worker'] as const).flatMap((p) =>
      judge(
        `svc ${p}`,
        after.map((x) => x[p]),
      ),
    ),
    ['Deliveries received', 'all', `${delivered} of ${expected}`, delivered >= expected],
    ['Failed requests', '0', String(failures), failures === 0],
  ];
  const passed = targets.every(([, , , met]) => met);
  const [date, machine] = [new Date().toISOString(), r.machine()];
  const markdown = [
    `PostgreSQL and Redis, ${r.conditions(date, machine, 'npm run bench:soak')} ${o.minutes} minutes ` +
      `(the first ${r.round(warmupMinutes, 2)} warm-up), ${o.readRate} reads/s and ${o.feedRate} changes/s ` +
      `to ${o.webhooks} webhooks. **${passed ? 'Passed' : 'Failed'}.**`,
    '',
    r.targetTable(targets),
    '',
    `After the warm-up: reads p50 / p99 ${spread(readMs)} (${readMs.length}), feed writes ${spread(feedMs)} (${feedMs.length}).`,
  ].join('\n');
  const result = { date, machine, options: { ...o, warmupMinutes }, samples, targets, passed };
  await r.publish(o, { name: 'soak', heading: '## Soak', result, markdown });
  return passed;
}

r.runMain(o, main);

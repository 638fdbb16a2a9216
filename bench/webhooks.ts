// npm run bench:webhooks [-- --scenarios fast,scale-out,rebalance --quick ...]   (bench/README.md)
//
// Webhook delivery on PostgreSQL, the service driven only through its processes (`svc serve`,
// `svc worker`), its feed and public APIs, and observed at an HTTPS receiver:
// - fast (lib/fast.ts): receivers that answer at once; the graphile-worker + undici reference,
//   `serve` and `serve + 1 worker` in the same run: latency at a fixed feed rate, then a drain;
// - scale-out (lib/scale.ts): a backlog to 200 webhooks in 50 organizations answering in 100 ms,
//   drained by 1, 2 and 4 `svc worker` processes, with the CPU each delivery cost;
// - rebalance (lib/scale.ts): during such a drain a worker starts, one is SIGKILLed and one SIGTERMed.
// Results of the scenarios not run are carried over from the newest saved result.
import pg from 'pg';
import { type FastResult, fastScenario } from './lib/fast.js';
import { type Bench, createTenant, engineWrite, Feed, type Tenant } from './lib/feed.js';
import { createDatabase, service, startServe, stopAll } from './lib/proc.js';
import { startReceiver } from './lib/receiver.js';
import * as r from './lib/report.js';
import {
  type RebalanceResult,
  rebalanceScenario,
  type ScaleOutResult,
  scaleOutScenario,
} from './lib/scale.js';

const o = r.cli(
  {
    scenarios: 'fast,scale-out,rebalance',
    rounds: 3,
    webhooks: 4,
    drainEvents: 4000,
    warmUpEvents: 400,
    rate: 200,
    latencySeconds: 3,
    organizations: 50,
    webhooksPerOrganization: 4,
    deliveries: 20_000,
    answerMs: 100,
    workerConcurrency: 16,
    perWebhook: 4,
    workers: '1,2,4',
    rebalanceDeliveries: 12_000,
    leaseSeconds: 5,
    databaseUrl: 'postgres://postgres@127.0.0.1:5432/svc_bench_webhooks',
  },
  {
    rounds: 1,
    drainEvents: 300,
    warmUpEvents: 40,
    latencySeconds: 1,
    organizations: 10,
    deliveries: 1600,
    workers: '1,2',
    rebalanceDeliveries: 1600,
  },
);
const scenarios = new Set(o.scenarios.split(','));
for (const s of scenarios)
  if (!['fast', 'scale-out', 'rebalance'].includes(s)) throw new Error(`no scenario ${s}`);

/** One run of the webhook benchmark, as bench/results keeps it. */
interface WebhookResult {
  date: string;
  machine: ReturnType<typeof r.machine>;
  fast: FastResult | null;
  scaleOut: ScaleOutResult | null;
  rebalance: RebalanceResult | null;
}

async function main(): Promise<void> {
  const url = o.databaseUrl;
  await createDatabase(url, true);
  const receiver = await startReceiver();
  const client = new pg.Client({ connectionString: url });
  const s = await service(url);
  const write = engineWrite(s);
  const b: Bench = { url, service: s, receiver, feed: new Feed(write), client };
  const run: WebhookResult = {
    date: new Date().toISOString(),
    machine: r.machine(),
    fast: null,
    scaleOut: null,
    rebalance: null,
  };
  try {
    // The tenants are made through a serve that does not deliver; the scale-out ones under /s/<org>/<n>.
    const setup = await startServe(s, { SVC_WEBHOOK_WORKER: 'off' });
    const paths = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}/${i}`);
    const fastTenant = await createTenant(s, receiver, paths(o.webhooks, '/f'));
    const tenants: Tenant[] = [];
    const organizations = scenarios.has('scale-out') || scenarios.has('rebalance') ? o.organizations : 0;
    for (let i = 0; i < organizations; i++)
      tenants.push(await createTenant(s, receiver, paths(o.webhooksPerOrganization, `/s/${i}`)));
    await setup.stop();
    await client.connect();
    if (scenarios.has('fast')) run.fast = await fastScenario(b, fastTenant, o);
    const scale = {
      organizations: tenants.length,
      webhooks: tenants.length * o.webhooksPerOrganization,
      answerMs: o.answerMs,
      workerConcurrency: o.workerConcurrency,
      perWebhook: o.perWebhook,
    };
    if (scenarios.has('scale-out')) {
      const workers = o.workers.split(',').map(Number);
      if (!workers.every((n) => n > 0)) throw new Error('--workers takes positive numbers');
      run.scaleOut = await scaleOutScenario(b, tenants, { ...scale, deliveries: o.deliveries }, workers);
    }
    if (scenarios.has('rebalance')) {
      const sizes = { deliveries: o.rebalanceDeliveries, leaseSeconds: o.leaseSeconds };
      run.rebalance = await rebalanceScenario(b, tenants, { ...scale, ...sizes });
    }
  } finally {
    await stopAll();
    await write.close();
    await client.end().catch(() => {});
    await receiver.close();
  }
  const previous = o.dryRun ? null : await r.readNewest<WebhookResult>('webhooks');
  const result: WebhookResult = {
    ...run,
    fast: run.fast ?? previous?.fast ?? null,
    scaleOut: run.scaleOut ?? previous?.scaleOut ?? null,
    rebalance: run.rebalance ?? previous?.rebalance ?? null,
  };
  await r.publish(o, {
    name: 'webhooks',
    heading: '## Webhook delivery: record',
    result,
    markdown: render(result),
    charts: charts(result),
  });
}

/** Issue 39's goals for scale-out: n workers at this many times one worker's rate. */
const SCALE_GOALS: Record<number, number> = { 2: 1.8, 4: 3.2 };

function targets(x: WebhookResult): r.Target[] {
  const targets: r.Target[] = [];
  const [reference, serve, withWorker] = ['reference', 'serve', 'serve+1'].map((n) =>
    x.fast?.configurations.find((c) => c.name === n),
  );
  if (reference && serve && withWorker) {
    const rates = (c: typeof serve) => c.rounds.map((round) => round.drain.perSecond);
    const share = r.shareByRound(rates(withWorker), rates(serve));
    const ofReference = serve.ofReference ?? 0;
    targets.push(
      ['Fast receivers: serve, drain', '>= 90% of the reference', r.pct(ofReference), ofReference >= 0.9],
      ['Fast receivers: serve + 1 worker, drain', '>= 100% of serve', r.pct(share), share >= 1],
    );
  }
  const runs = x.scaleOut?.runs ?? [];
  const one = runs.find((run) => run.workers === 1)?.perSecond;
  for (const run of runs) {
    const goal = SCALE_GOALS[run.workers];
    if (!one || !goal) continue;
    const times = r.round(run.perSecond / one, 2);
    const value = `${times}x (${r.int(run.perSecond)} of ${r.int(one)}/s)`;
    targets.push([
      `Scale-out: ${run.workers} workers`,
      `>= ${goal}x one worker`,
      value,
      run.missing === 0 && times >= goal,
    ]);
  }
  const b = x.rebalance;
  if (b) {
    const { deliveries, perWebhook, leaseSeconds } = b.settings;
    const resumed = b.resumedSeconds;
    targets.push(
      ['Rebalancing: deliveries lost', '0', `${b.lost} of ${r.int(deliveries)}`, b.lost === 0],
      [
        'Rebalancing: most attempts in flight at one webhook (receiver)',
        `<= ${perWebhook}`,
        String(b.maxInFlightPerWebhook),
        b.maxInFlightPerWebhook <= perWebhook,
      ],
      [
        "Rebalancing: the killed worker's webhooks resume",
        `within the lease (${leaseSeconds} s)`,
        resumed === null ? 'no webhook had work left after the kill' : `${resumed} s`,
        resumed === null ? null : resumed <= leaseSeconds,
      ],
    );
  }
  return targets;
}

const us = (c: { nodeUs: number; postgresUs: number }) => `${r.int(c.nodeUs)} / ${r.int(c.postgresUs)}`;

function render(x: WebhookResult): string {
  const { fast: f, scaleOut: so, rebalance: b } = x;
  const one = so?.runs.find((run) => run.workers === 1)?.perSecond || 1;
  const cpu = so?.runs.at(-1)?.cpu;
  return [
    `PostgreSQL, ${r.conditions(x.date, x.machine, 'npm run bench:webhooks')}`,
    r.targetTable(targets(x)),
    f &&
      `**Fast receivers** (${r.utc(f.date)}): ${f.settings.webhooks} webhooks answering at once, drain of ` +
        `${r.int(f.settings.drainEvents * f.settings.webhooks)} deliveries, latency at ${f.settings.rate} events/s ` +
        `for ${f.settings.latencySeconds} s, ${f.settings.rounds} round(s), medians.\n\n` +
        r.table(
          'Configuration|drain deliveries/s|of reference|p99 commit to arrival, ms|feed write p99, ms|CPU µs/delivery (Node / PostgreSQL)|machine busy',
          f.configurations.map((c) => [
            c.label,
            r.int(c.drainPerSecond),
            r.pct(c.ofReference),
            c.latencyP99,
            c.feedP99,
            us(c.cpu),
            r.pct(c.cpu.machineBusy),
          ]),
        ) +
        '\n\n![fast receivers](bench/results/webhooks-fast.svg)',
    so &&
      `**Scale-out** (${r.utc(so.date)}): ${r.int(so.settings.deliveries)} deliveries to ${so.settings.webhooks} ` +
        `webhooks in ${so.settings.organizations} organizations answering in ${so.settings.answerMs} ms, ` +
        `${so.settings.workerConcurrency} attempts in flight per \`svc worker\`, serve's worker off. Rate from ` +
        'every worker ready to the last arrival.\n\n' +
        r.table(
          'svc worker processes|deliveries/s|of one worker|in-flight bound, /s|CPU µs/delivery (Node / PostgreSQL)|machine busy|missing',
          so.runs.map((run) => [
            run.workers,
            r.int(run.perSecond),
            `${r.round(run.perSecond / one, 2)}x`,
            r.int(run.boundPerSecond),
            us(run.cpu),
            r.pct(run.cpu.machineBusy),
            run.missing,
          ]),
        ) +
        // What 16-core hosts would deliver if CPU per delivery stayed as measured (only CPU, on paper).
        (cpu && cpu.postgresUs > 0 && cpu.nodeUs > 0
          ? `\n\nOn paper, from the last row's CPU per delivery: one 16-core PostgreSQL host ${r.int(16e6 / cpu.postgresUs)} ` +
            `deliveries/s, each 16-core worker host ${r.int(16e6 / cpu.nodeUs)}/s (CPU only; measured on a shared machine).`
          : '') +
        '\n\n![scale-out](bench/results/webhooks-scale-out.svg)',
    b &&
      `**Rebalancing** (${r.utc(b.date)}): ${r.int(b.settings.deliveries)} deliveries to ${b.settings.webhooks} webhooks ` +
        `answering in ${b.settings.answerMs} ms, lease ${b.settings.leaseSeconds} s; ` +
        `${b.events.map((e) => `${e.what} at ${e.at} s`).join(', ')}. ` +
        `Lost ${b.lost}, duplicates ${b.duplicates}, first arrivals with an attempt above 1: ${b.firstArrivalAfterFirstAttempt}; ` +
        `most attempts in flight at one webhook ${b.maxInFlightPerWebhook} (bound ${b.settings.perWebhook}); ` +
        `after the kill every webhook with work left had a delivery within ${b.resumedSeconds ?? '-'} s ` +
        `(${b.webhooksPausedOverSecond} waited over 1 s).`,
  ]
    .filter(Boolean)
    .join('\n\n');
}

function charts(x: WebhookResult): (r.Chart | null)[] {
  const one = x.scaleOut?.runs.find((run) => run.workers === 1)?.perSecond ?? 0;
  return [
    x.fast && {
      file: 'webhooks-fast.svg',
      title: 'Drain to fast receivers, deliveries/s (median of rounds)',
      bars: x.fast.configurations.map((c) => ({ label: c.label, value: c.drainPerSecond })),
    },
    x.scaleOut && {
      file: 'webhooks-scale-out.svg',
      title: `Scale-out: deliveries/s, receivers answering in ${x.scaleOut.settings.answerMs} ms`,
      bars: x.scaleOut.runs.map((run) => ({
        label: `${run.workers} svc worker${run.workers > 1 ? 's' : ''}`,
        value: run.perSecond,
        text: `${r.int(run.perSecond)} (${r.round(run.perSecond / (one || 1), 2)}x)`,
        target: one * (SCALE_GOALS[run.workers] ?? 0),
      })),
    },
  ];
}

r.runMain(o, main);

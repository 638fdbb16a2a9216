// npm run bench:webhooks [-- --scenarios fast,scale-out,rebalance --quick ...]   (bench/README.md)
//
// Webhook delivery on PostgreSQL, the service driven only through its processes (`svc serve`,
// `svc worker`), its feed and public APIs, and observed at an HTTPS receiver:
// - fast (lib/fast.ts): receivers that answer at once; the graphile-worker + undici reference,
//   `serve` and `serve + 1 worker` in the same run: latency at a fixed feed rate, then a drain;
// - scale-out (lib/scale.ts): a backlog to 200 webhooks in 50 organizations answering in 100 ms,
//   drained by 1, 2 and 4 `svc worker` processes, with the CPU each delivery cost;
// - rebalance (lib/scale.ts): during such a drain a worker starts, one is SIGKILLed and one SIGTERMed.
import { mkdir } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { fastScenario } from './lib/fast.js';
import { type Bench, createTenant, engineWrite, Feed, type Tenant } from './lib/feed.js';
import { createDatabase, service, startServe, stopAll } from './lib/proc.js';
import { startReceiver } from './lib/receiver.js';
import * as r from './lib/report.js';
import { rebalanceScenario, scaleOutScenario } from './lib/scale.js';
import { renderWebhooks, type WebhookResult, webhookCharts } from './lib/webhook-report.js';

const { values: args } = parseArgs({
  options: {
    scenarios: { type: 'string', default: 'fast,scale-out,rebalance' },
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '3' },
    webhooks: { type: 'string', default: '4' },
    'drain-events': { type: 'string', default: '4000' },
    'warm-up-events': { type: 'string', default: '400' },
    rate: { type: 'string', default: '200' },
    'latency-seconds': { type: 'string', default: '3' },
    organizations: { type: 'string', default: '50' },
    'webhooks-per-organization': { type: 'string', default: '4' },
    deliveries: { type: 'string', default: '20000' },
    'answer-ms': { type: 'string', default: '100' },
    'worker-concurrency': { type: 'string', default: '16' },
    'per-webhook': { type: 'string', default: '4' },
    workers: { type: 'string', default: '1,2,4' },
    'rebalance-deliveries': { type: 'string', default: '12000' },
    'lease-seconds': { type: 'string', default: '5' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/svc_bench_webhooks' },
    'skip-build': { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
  },
});

/** --quick: sizes that show the harness works in a few minutes; figures not worth keeping. */
const QUICK: Record<string, string> = {
  rounds: '1',
  'drain-events': '300',
  'warm-up-events': '40',
  'latency-seconds': '1',
  organizations: '10',
  deliveries: '1600',
  workers: '1,2',
  'rebalance-deliveries': '1600',
};
const given = new Set(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')[0]));
const raw = (name: keyof typeof args) =>
  args.quick && !given.has(name) && QUICK[name] ? QUICK[name] : (args[name] as string);
const opt = (name: keyof typeof args) => r.positive(name, raw(name));
const scenarios = new Set(args.scenarios.split(','));
for (const s of scenarios)
  if (!['fast', 'scale-out', 'rebalance'].includes(s)) throw new Error(`no scenario ${s}`);

async function main(): Promise<void> {
  r.build(args['skip-build']);
  const url = args['database-url'];
  await createDatabase(url, true);
  const receiver = await startReceiver(r.ROOT);
  const client = new pg.Client({ connectionString: url });
  const s = await service(r.ROOT, { kind: 'postgres', url });
  const write = engineWrite(s);
  const b: Bench = { root: r.ROOT, url, service: s, receiver, feed: new Feed(write), client };
  const result: WebhookResult = {
    date: new Date().toISOString(),
    machine: r.machine(),
    fast: null,
    scaleOut: null,
    rebalance: null,
  };
  try {
    // The tenants are made through a serve that does not deliver; the scale-out ones under /s/<org>/<n>.
    const setup = await startServe(s, { SVC_WEBHOOK_WORKER: 'off' });
    const fastTenant = await createTenant(
      s,
      receiver,
      Array.from({ length: opt('webhooks') }, (_, i) => `/f/${i}`),
    );
    const tenants: Tenant[] = [];
    const perOrg = opt('webhooks-per-organization');
    const organizations = scenarios.has('scale-out') || scenarios.has('rebalance') ? opt('organizations') : 0;
    for (let o = 0; o < organizations; o++)
      tenants.push(
        await createTenant(
          s,
          receiver,
          Array.from({ length: perOrg }, (_, i) => `/s/${o}/${i}`),
        ),
      );
    await setup.stop();
    await client.connect();
    if (scenarios.has('fast')) {
      result.fast = await fastScenario(b, fastTenant, {
        rounds: opt('rounds'),
        webhooks: opt('webhooks'),
        perWebhook: opt('per-webhook'),
        drainEvents: opt('drain-events'),
        warmUpEvents: opt('warm-up-events'),
        rate: opt('rate'),
        latencySeconds: opt('latency-seconds'),
      });
    }
    const scale = {
      organizations: tenants.length,
      webhooks: tenants.length * perOrg,
      answerMs: opt('answer-ms'),
      workerConcurrency: opt('worker-concurrency'),
      perWebhook: opt('per-webhook'),
    };
    if (scenarios.has('scale-out')) {
      const workers = raw('workers')
        .split(',')
        .map((w) => r.positive('workers', w));
      result.scaleOut = await scaleOutScenario(
        b,
        tenants,
        { ...scale, deliveries: opt('deliveries') },
        workers,
      );
    }
    if (scenarios.has('rebalance')) {
      const sizes = { deliveries: opt('rebalance-deliveries'), leaseSeconds: opt('lease-seconds') };
      result.rebalance = await rebalanceScenario(b, tenants, { ...scale, ...sizes });
    }
  } finally {
    await stopAll();
    await write.close();
    await client.end().catch(() => {});
    await receiver.close();
  }
  await report(result);
}

/** Results of the scenarios not run this time are carried over from the newest saved result. */
async function report(run: WebhookResult): Promise<void> {
  const previous = args['dry-run'] ? null : await r.readNewest<WebhookResult>('webhooks');
  const merged: WebhookResult = {
    ...run,
    fast: run.fast ?? previous?.fast ?? null,
    scaleOut: run.scaleOut ?? previous?.scaleOut ?? null,
    rebalance: run.rebalance ?? previous?.rebalance ?? null,
  };
  const markdown = renderWebhooks(merged);
  process.stdout.write(`${markdown}\n`);
  if (args['dry-run']) return;
  await mkdir(r.RESULTS, { recursive: true });
  r.log(`saved ${await r.saveNewest('webhooks', merged)}`);
  await webhookCharts(merged);
  await r.writeSection('## Webhook delivery: record', markdown);
}

r.runMain(main);

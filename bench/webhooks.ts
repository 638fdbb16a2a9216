// npm run bench:webhooks [-- --scenarios fast,scale-out,rebalance --quick ...]   (bench/README.md)
//
// Webhook delivery on PostgreSQL, the service driven only through its processes (`svc serve`,
// `svc worker`), its feed and public APIs, and observed at an HTTPS receiver. Three scenarios:
// - fast: receivers that answer at once; the graphile-worker + undici reference, `serve` and
//   `serve + 1 worker` in the same run (rounds taking turns): latency at a fixed feed rate, then a
//   drain of a backlog queued while nothing delivered, each as a share of the reference;
// - scale-out: a backlog to 200 webhooks in 50 organizations answering in 100 ms, drained by 1, 2
//   and 4 `svc worker` processes (serve's worker off), with the CPU each delivery cost;
// - rebalance: during such a drain a worker starts, one is SIGKILLed and one SIGTERMed; every
//   delivery must arrive and no webhook may see more attempts in flight than its bound.
import { spawnSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { type FastResult, fastScenario } from './lib/fast.js';
import { createTenant, engineWrite, Feed, type Tenant } from './lib/feed.js';
import { type Child, recreateDatabase, type Service, service, startServe } from './lib/proc.js';
import { startReceiver } from './lib/receiver.js';
import { log, machine, positive, RESULTS, ROOT, readNewest, saveNewest, writeSection } from './lib/report.js';
import {
  type RebalanceResult,
  rebalanceScenario,
  type ScaleOutResult,
  scaleOutScenario,
} from './lib/scale.js';
import { renderWebhooks, webhookCharts, webhookTargets } from './lib/webhook-report.js';

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

/** --quick: sizes that show the harness works in a minute or two; figures not worth keeping. */
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
const opt = (name: keyof typeof args) =>
  positive(name, args.quick && !given.has(name) && QUICK[name] ? QUICK[name] : (args[name] as string));
const list = (name: keyof typeof args) =>
  (args.quick && !given.has(name) && QUICK[name] ? QUICK[name] : (args[name] as string))
    .split(',')
    .map((x) => positive(name, x));

const scenarios = new Set(args.scenarios.split(','));
for (const s of scenarios)
  if (!['fast', 'scale-out', 'rebalance'].includes(s)) throw new Error(`unknown scenario ${s}`);
const url = args['database-url'];
const dbName = decodeURIComponent(new URL(url).pathname.slice(1));

export interface WebhookResult {
  date: string;
  machine: ReturnType<typeof machine>;
  fast: FastResult | null;
  scaleOut: ScaleOutResult | null;
  rebalance: RebalanceResult | null;
}

/** 50 organizations of 4 webhooks each under /s/<org>/<n>: the scale-out and rebalance tenants. */
async function scaleTenants(s: Service, receiver: Awaited<ReturnType<typeof startReceiver>>) {
  const tenants: Tenant[] = [];
  const perOrg = opt('webhooks-per-organization');
  for (let o = 0; o < opt('organizations'); o++)
    tenants.push(
      await createTenant(
        s,
        receiver,
        Array.from({ length: perOrg }, (_, i) => `/s/${o}/${i}`),
      ),
    );
  return tenants;
}

async function main(): Promise<void> {
  if (!args['skip-build']) {
    const build = spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  await recreateDatabase(url);
  const receiver = await startReceiver(ROOT);
  const client = new pg.Client({ connectionString: url });
  const s = await service(ROOT, { kind: 'postgres', url });
  const children: Child[] = [];
  const result: WebhookResult = {
    date: new Date().toISOString(),
    machine: machine(),
    fast: null,
    scaleOut: null,
    rebalance: null,
  };
  try {
    // The tenants are made through a serve that does not deliver.
    const setup = await startServe(s, { SVC_WEBHOOK_WORKER: 'off' });
    children.push(setup);
    const fastTenant = await createTenant(
      s,
      receiver,
      Array.from({ length: opt('webhooks') }, (_, i) => `/f/${i}`),
    );
    const tenants =
      scenarios.has('scale-out') || scenarios.has('rebalance') ? await scaleTenants(s, receiver) : [];
    await setup.stop();
    await client.connect();
    const write = engineWrite(s);
    const feed = new Feed(write);
    const common = { root: ROOT, service: s, receiver, feed, client, dbName };
    try {
      if (scenarios.has('fast')) {
        result.fast = await fastScenario({
          ...common,
          url,
          tenant: fastTenant,
          rounds: opt('rounds'),
          drainEvents: opt('drain-events'),
          warmUpEvents: opt('warm-up-events'),
          rate: opt('rate'),
          latencySeconds: opt('latency-seconds'),
          perWebhook: opt('per-webhook'),
        });
      }
      const scale = {
        ...common,
        tenants,
        answerMs: opt('answer-ms'),
        workerConcurrency: opt('worker-concurrency'),
        perWebhook: opt('per-webhook'),
      };
      if (scenarios.has('scale-out'))
        result.scaleOut = await scaleOutScenario({
          ...scale,
          deliveries: opt('deliveries'),
          workers: list('workers'),
        });
      if (scenarios.has('rebalance'))
        result.rebalance = await rebalanceScenario({
          ...scale,
          deliveries: opt('rebalance-deliveries'),
          leaseSeconds: opt('lease-seconds'),
        });
    } finally {
      await write.close();
    }
  } finally {
    for (const c of children) await c.stop();
    await client.end().catch(() => {});
    await receiver.close();
  }
  await report(result);
}

/** Results of the scenarios not run this time are carried over from the newest saved result. */
async function report(run: WebhookResult): Promise<void> {
  const previous = args['dry-run'] ? null : await readNewest<WebhookResult>('webhooks');
  const merged: WebhookResult = {
    ...run,
    fast: run.fast ?? previous?.fast ?? null,
    scaleOut: run.scaleOut ?? previous?.scaleOut ?? null,
    rebalance: run.rebalance ?? previous?.rebalance ?? null,
  };
  const markdown = renderWebhooks(merged, webhookTargets(merged));
  process.stdout.write(`${markdown}\n`);
  if (args['dry-run']) return;
  await mkdir(RESULTS, { recursive: true });
  log(`saved ${await saveNewest('webhooks', merged)}`);
  await webhookCharts(merged);
  await writeSection('## Webhook delivery: record', markdown);
}

main().catch((error) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exitCode = 1;
});

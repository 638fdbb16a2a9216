// The webhook benchmark's record: targets (issue 39), tables and charts for BENCHMARKS.md.
import type { FastResult } from './fast.js';
import {
  barChart,
  int,
  type machine,
  median,
  pct,
  round,
  type Target,
  table,
  targetTable,
} from './report.js';
import type { RebalanceResult, ScaleOutResult, ScaleOutRun } from './scale.js';

/** One run of the webhook benchmark, as bench/results keeps it. */
export interface WebhookResult {
  date: string;
  machine: ReturnType<typeof machine>;
  fast: FastResult | null;
  scaleOut: ScaleOutResult | null;
  rebalance: RebalanceResult | null;
}

const SCALE_GOALS: Record<number, number> = { 2: 1.8, 4: 3.2 };

const t = (name: string, goal: string, value: string, met: boolean | null): Target => ({
  name,
  goal,
  value,
  met,
});

function webhookTargets(r: WebhookResult): Target[] {
  const targets: Target[] = [];
  const [reference, serve, withWorker] = ['reference', 'serve', 'serve+1'].map((n) =>
    r.fast?.configurations.find((c) => c.name === n),
  );
  if (reference && serve && withWorker) {
    // Within each round, then the median, as for the shares of the reference.
    const shares = withWorker.rounds.map(
      (x, i) => x.drain.perSecond / (serve.rounds[i]?.drain.perSecond || 1),
    );
    const share = round(median(shares), 3);
    const ofReference = serve.ofReference ?? 0;
    targets.push(
      t('Fast receivers: serve, drain', '>= 90% of the reference', pct(ofReference), ofReference >= 0.9),
      t('Fast receivers: serve + 1 worker, drain', '>= 100% of serve', pct(share), share >= 1),
    );
  }
  const runs = r.scaleOut?.runs ?? [];
  const one = runs.find((x) => x.workers === 1)?.perSecond;
  for (const run of runs) {
    const goal = SCALE_GOALS[run.workers];
    if (!one || !goal) continue;
    const times = round(run.perSecond / one, 2);
    const value = `${times}x (${int(run.perSecond)} of ${int(one)}/s)`;
    targets.push(
      t(
        `Scale-out: ${run.workers} workers`,
        `>= ${goal}x one worker`,
        value,
        run.missing === 0 && times >= goal,
      ),
    );
  }
  const b = r.rebalance;
  if (b) {
    const { deliveries, perWebhook, leaseSeconds } = b.settings;
    const resumed = b.resumedSeconds;
    targets.push(
      t('Rebalancing: deliveries lost', '0', `${b.lost} of ${int(deliveries)}`, b.lost === 0),
      t(
        'Rebalancing: most attempts in flight at one webhook (receiver)',
        `<= ${perWebhook}`,
        String(b.maxInFlightPerWebhook),
        b.maxInFlightPerWebhook <= perWebhook,
      ),
      // Its partitions free when its lease ends, at the next beat of another worker (every second).
      t(
        "Rebalancing: the killed worker's webhooks resume",
        `when its lease ends (${leaseSeconds} s, + 1 s beat)`,
        resumed === null ? 'no webhook had work left after the kill' : `${resumed} s`,
        resumed === null ? null : resumed <= leaseSeconds + 1,
      ),
    );
  }
  return targets;
}

const us = (c: { nodeUs: number; postgresUs: number }) => `${int(c.nodeUs)} / ${int(c.postgresUs)}`;

function fastSection(f: NonNullable<WebhookResult['fast']>): string {
  const s = f.settings;
  return [
    `**Fast receivers** (${f.date.slice(0, 16).replace('T', ' ')} UTC): ${s.webhooks} webhooks answering at once, ` +
      `drain of ${int(s.drainEvents * s.webhooks)} deliveries, latency at ${s.rate} events/s for ${s.latencySeconds} s, ` +
      `${s.rounds} round(s), medians.`,
    '',
    table(
      'Configuration|drain deliveries/s|of reference|p99 commit to arrival, ms|feed write p99, ms|CPU µs/delivery (Node / PostgreSQL)|machine busy',
      f.configurations.map((c) => [
        c.label,
        int(c.drainPerSecond),
        pct(c.ofReference),
        c.latencyP99,
        c.feedP99,
        us(c.cpu),
        pct(c.cpu.machineBusy),
      ]),
    ),
  ].join('\n');
}

function scaleSection(x: NonNullable<WebhookResult['scaleOut']>): string {
  const s = x.settings;
  const one = x.runs.find((r) => r.workers === 1)?.perSecond || 1;
  return [
    `**Scale-out** (${x.date.slice(0, 16).replace('T', ' ')} UTC): ${int(s.deliveries)} deliveries to ${s.webhooks} webhooks ` +
      `in ${s.organizations} organizations answering in ${s.answerMs} ms, ${s.workerConcurrency} attempts in flight per ` +
      "`svc worker`, serve's worker off. Rate from every worker ready to the last arrival.",
    '',
    table(
      'svc worker processes|deliveries/s|of one worker|in-flight bound, /s|CPU µs/delivery (Node / PostgreSQL)|machine busy|missing',
      x.runs.map((r) => [
        r.workers,
        int(r.perSecond),
        `${round(r.perSecond / one, 2)}x`,
        int(r.boundPerSecond),
        us(r.cpu),
        pct(r.cpu.machineBusy),
        r.missing,
      ]),
    ),
    '',
    onPaper(x.runs.at(-1)?.cpu),
  ]
    .join('\n')
    .trim();
}

/** What 16-core hosts would deliver if CPU per delivery stayed as measured (only CPU, on paper). */
function onPaper(cpu: ScaleOutRun['cpu'] | undefined): string {
  if (!cpu || cpu.postgresUs <= 0 || cpu.nodeUs <= 0) return '';
  return (
    `On paper, from the last row's CPU per delivery: one 16-core PostgreSQL host ${int(16e6 / cpu.postgresUs)} ` +
    `deliveries/s, each 16-core worker host ${int(16e6 / cpu.nodeUs)}/s (CPU only; measured on a shared machine).`
  );
}

function rebalanceSection(b: NonNullable<WebhookResult['rebalance']>): string {
  return [
    `**Rebalancing** (${b.date.slice(0, 16).replace('T', ' ')} UTC): ${int(b.settings.deliveries)} deliveries to ${b.settings.webhooks} webhooks ` +
      `answering in ${b.settings.answerMs} ms, lease ${b.settings.leaseSeconds} s; ` +
      `${b.events.map((e) => `${e.what} at ${e.at} s`).join(', ')}. ` +
      `Lost ${b.lost}, duplicates ${b.duplicates}, first arrivals with an attempt above 1: ${b.firstArrivalAfterFirstAttempt}; ` +
      `most attempts in flight at one webhook ${b.maxInFlightPerWebhook} (bound ${b.settings.perWebhook}); ` +
      `after the kill every webhook of the killed worker with work left had a delivery within ${b.resumedSeconds ?? '-'} s ` +
      `(${b.webhooksPausedOverSecond} waited over 1 s); after the SIGTERM every webhook of the stopped worker ` +
      `within ${b.stoppedResumedSeconds ?? '-'} s.`,
  ].join('\n');
}

export function renderWebhooks(r: WebhookResult): string {
  return [
    `PostgreSQL, ${r.machine.cpus} cores (${r.machine.cpuModel}), Node ${r.machine.node}; ` +
      `load average at the start ${r.machine.loadAverage.join(' / ')}. Written by \`npm run bench:webhooks\`.`,
    targetTable(webhookTargets(r)),
    r.fast && `${fastSection(r.fast)}\n\n![fast receivers](bench/results/webhooks-fast.svg)`,
    r.scaleOut && `${scaleSection(r.scaleOut)}\n\n![scale-out](bench/results/webhooks-scale-out.svg)`,
    r.rebalance && rebalanceSection(r.rebalance),
  ]
    .filter(Boolean)
    .join('\n\n');
}

export async function webhookCharts(r: WebhookResult): Promise<void> {
  if (r.fast) {
    await barChart(
      'webhooks-fast.svg',
      'Drain to fast receivers, deliveries/s (median of rounds)',
      r.fast.configurations.map((c) => ({ label: c.label, value: c.drainPerSecond })),
    );
  }
  if (r.scaleOut) {
    const one = r.scaleOut.runs.find((x) => x.workers === 1)?.perSecond ?? 0;
    await barChart(
      'webhooks-scale-out.svg',
      `Scale-out: deliveries/s, receivers answering in ${r.scaleOut.settings.answerMs} ms`,
      r.scaleOut.runs.map((x) => ({
        label: `${x.workers} svc worker${x.workers > 1 ? 's' : ''}`,
        value: x.perSecond,
        text: `${int(x.perSecond)} (${round(x.perSecond / (one || 1), 2)}x)`,
        ...(SCALE_GOALS[x.workers] ? { target: one * (SCALE_GOALS[x.workers] as number) } : {}),
      })),
    );
  }
}

// The webhook benchmark's record: targets (issue 39), tables and charts for BENCHMARKS.md.
import type { WebhookResult } from '../webhooks.js';
import { barChart, int, pct, round, type Target, table, targetTable } from './report.js';

const SCALE_GOALS: Record<number, number> = { 2: 1.8, 4: 3.2 };

function webhookTargets(r: WebhookResult): Target[] {
  const targets: Target[] = [];
  const byName = (name: string) => r.fast?.configurations.find((c) => c.name === name);
  const serve = byName('serve');
  const withWorker = byName('serve+1');
  if (serve && withWorker) {
    const share = round(withWorker.drainPerSecond / (serve.drainPerSecond || 1), 3);
    targets.push(
      {
        name: 'Fast receivers: serve, drain',
        goal: '>= 90% of the reference',
        value: pct(serve.ofReference),
        met: serve.ofReference === null ? null : serve.ofReference >= 0.9,
      },
      {
        name: 'Fast receivers: serve + 1 worker, drain',
        goal: '>= 100% of serve',
        value: pct(share),
        met: share >= 1,
      },
    );
  }
  const runs = r.scaleOut?.runs ?? [];
  const one = runs.find((x) => x.workers === 1);
  for (const run of runs) {
    const goal = SCALE_GOALS[run.workers];
    if (!one || !goal) continue;
    const times = round(run.perSecond / (one.perSecond || 1), 2);
    targets.push({
      name: `Scale-out: ${run.workers} workers`,
      goal: `>= ${goal}x one worker`,
      value: `${times}x (${int(run.perSecond)} of ${int(one.perSecond)}/s)`,
      met: run.missing === 0 && times >= goal,
    });
  }
  const b = r.rebalance;
  if (b) {
    targets.push(
      {
        name: 'Rebalancing: deliveries lost',
        goal: '0',
        value: `${b.lost} of ${int(b.settings.deliveries)}`,
        met: b.lost === 0,
      },
      {
        name: 'Rebalancing: attempts in flight per webhook (at the receiver)',
        goal: `<= ${b.settings.perWebhook}`,
        value: String(b.maxInFlightPerWebhook),
        met: b.maxInFlightPerWebhook <= b.settings.perWebhook,
      },
      {
        name: "Rebalancing: the killed worker's webhooks resume",
        goal: `within the lease (${b.settings.leaseSeconds} s)`,
        value:
          b.resumedSeconds === null ? 'no webhook had work left after the kill' : `${b.resumedSeconds} s`,
        met: b.resumedSeconds === null ? null : b.resumedSeconds <= b.settings.leaseSeconds,
      },
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
      [
        'Configuration',
        'drain deliveries/s',
        'of reference',
        'p99 commit to arrival, ms',
        'feed write p99, ms',
        'CPU µs/delivery (Node / PostgreSQL)',
        'machine busy',
      ],
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
      [
        'svc worker processes',
        'deliveries/s',
        'of one worker',
        'in-flight bound, /s',
        'CPU µs/delivery (Node / PostgreSQL)',
        'machine busy',
        'missing',
      ],
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
  ].join('\n');
}

function rebalanceSection(b: NonNullable<WebhookResult['rebalance']>): string {
  return [
    `**Rebalancing** (${b.date.slice(0, 16).replace('T', ' ')} UTC): ${int(b.settings.deliveries)} deliveries to ${b.settings.webhooks} webhooks ` +
      `answering in ${b.settings.answerMs} ms, lease ${b.settings.leaseSeconds} s; ` +
      `${b.events.map((e) => `${e.what} at ${e.at} s`).join(', ')}. ` +
      `Lost ${b.lost}, duplicates ${b.duplicates}, first arrivals with an attempt above 1: ${b.firstArrivalAfterFirstAttempt}; ` +
      `most attempts in flight at one webhook ${b.maxInFlightPerWebhook} (bound ${b.settings.perWebhook}); ` +
      `after the kill every webhook with work left had a delivery within ${b.resumedSeconds ?? '-'} s ` +
      `(${b.webhooksPausedOverSecond} waited over 1 s).`,
  ].join('\n');
}

export function renderWebhooks(r: WebhookResult): string {
  return [
    `PostgreSQL, ${r.machine.cpus} cores (${r.machine.cpuModel}), Node ${r.machine.node}; ` +
      `load average at the start ${r.machine.loadAverage.join(' / ')}. Written by \`npm run bench:webhooks\`.`,
    '',
    targetTable(webhookTargets(r)),
    '',
    r.fast ? `${fastSection(r.fast)}\n\n![fast receivers](bench/results/webhooks-fast.svg)\n` : '',
    r.scaleOut ? `${scaleSection(r.scaleOut)}\n\n![scale-out](bench/results/webhooks-scale-out.svg)\n` : '',
    r.rebalance ? rebalanceSection(r.rebalance) : '',
  ]
    .filter((x) => x !== '')
    .join('\n');
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

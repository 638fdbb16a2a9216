// What every benchmark runs and reports with: its command line, the build, the machine, medians and
// percentiles, markdown tables, bar charts, and its record: the newest result kept in bench/results
// (older ones of the same benchmark deleted: history is in git), its charts and its section of
// BENCHMARKS.md.
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { withMarkdownSection } from './sections.js';

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const RESULTS = join(ROOT, 'bench', 'results');

export const log = (line: string) => process.stderr.write(`${line}\n`);
export const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
export const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
export const pct = (x: number | null | undefined) => (x == null ? '-' : `${round(x * 100)}%`);
export const int = (n: number) => Math.round(n).toLocaleString('en');
export const utc = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

type Flags = { quick: boolean; skipBuild: boolean; dryRun: boolean };

/**
 * A benchmark's options: `--drain-events 300` sets `drainEvents` of `defaults` (a number: 0 or more);
 * and the flags every benchmark takes: `--quick` (the sizes of `quick` for what is not given: a short
 * run that shows the harness works, figures not worth keeping), `--skip-build` (reuse dist/) and
 * `--dry-run` (print only).
 */
export function cli<T extends Record<string, number | string>>(
  defaults: T,
  quick: Partial<T> = {},
): T & Flags {
  const flag = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  const types = { ...defaults, quick: true, skipBuild: true, dryRun: true };
  const options = Object.entries(types).map(([name, v]) => [
    flag(name),
    { type: v === true ? 'boolean' : 'string' },
  ]);
  const values: Record<string, unknown> = parseArgs({ options: Object.fromEntries(options) }).values;
  const given = Object.fromEntries(Object.keys(types).map((name) => [name, values[flag(name)]]));
  const o: Record<string, unknown> = { ...defaults, ...(given.quick ? quick : {}) };
  for (const [name, value] of Object.entries(given)) if (value !== undefined) o[name] = value;
  for (const [name, value] of Object.entries(defaults)) {
    if (typeof value !== 'number') continue;
    o[name] = Number(o[name]);
    if (!((o[name] as number) >= 0)) throw new Error(`--${flag(name)} takes a number, 0 or more`);
  }
  return o as T & Flags;
}

/**
 * Builds the service (`npm run build` unless --skip-build: every benchmark runs it from dist, as
 * operators do), runs `main`, and sets the exit code when it throws or resolves false.
 */
export function runMain(o: Flags, main: () => Promise<unknown>): void {
  const build = () => spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' }).status;
  (async () => {
    if (!o.skipBuild && build() !== 0) throw new Error('npm run build failed');
    if ((await main()) === false) process.exitCode = 1;
  })().catch((error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    process.exitCode = 1;
  });
}

export function machine() {
  const all = cpus();
  return {
    cpus: all.length,
    cpuModel: all[0]?.model.trim() ?? 'unknown',
    node: process.version,
    loadAverage: loadavg().map((x) => round(x, 2)),
  };
}

/** The opening of every record: when, on what, how loaded, and what wrote it. */
export const conditions = (date: string, m: ReturnType<typeof machine>, command: string) =>
  `${utc(date)}, ${m.cpus} cores (${m.cpuModel}), Node ${m.node}, load average at the start ` +
  `${m.loadAverage.join(' / ')}. Written by \`${command}\`.`;

/** The middle value, or the mean of the middle two. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  if (s.length === 0) return 0;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The median of each field over `rows`. */
export const medians = <T extends Record<string, number>>(rows: T[]): T =>
  Object.fromEntries(
    Object.keys(rows[0] ?? {}).map((k) => [k, round(median(rows.map((x) => x[k]!)), 3)]),
  ) as T;

/** Nearest-rank percentile of unsorted samples. */
export function percentile(xs: readonly number[], share: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.min(s.length, Math.max(1, Math.ceil(share * s.length))) - 1]!;
}

/** `a` over `b` within each round, then the median: the machine's pace moves between rounds. */
export const shareByRound = (a: number[], b: number[]) => round(median(a.map((x, i) => x / (b[i] || 1))), 3);

/** The order of `items` turning each round, so that a slow patch of the machine does not fall on one. */
export const turns = <T>(items: T[], rounds: number) =>
  Array.from({ length: rounds }, (_, r) => items.map((_, i) => items[(i + r) % items.length]!)).flat();

/** A markdown table; `head` is the header row, cells separated by "|"; columns but the first aligned by `rule`. */
export function table(head: string, rows: (string | number)[][], rule = '---:'): string {
  const cells = head.split('|');
  const rules = cells.map((_, i) => (i === 0 ? '---' : rule)).join('|');
  return [`| ${cells.join(' | ')} |`, `|${rules}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** A goal: its name, the goal, the value measured, and whether it was met (null: not measured). */
export type Target = [name: string, goal: string, value: string, met: boolean | null];

export const targetTable = (targets: Target[]) =>
  table(
    'Target|Goal|Measured|',
    targets.map(([name, goal, value, met]) => [
      name,
      goal,
      value,
      met === null ? 'not measured' : met ? 'met' : 'MISSED',
    ]),
    '---',
  );

const isResult = (name: string, file: string) =>
  file.startsWith(`${name}-`) && /^\d{4}-.*\.json$/.test(file.slice(name.length + 1));

/** The newest saved result of a benchmark. */
export async function readNewest<T>(name: string): Promise<T | null> {
  const files = (await readdir(RESULTS).catch(() => [] as string[])).filter((f) => isResult(name, f)).sort();
  const last = files.at(-1);
  return last ? (JSON.parse(await readFile(join(RESULTS, last), 'utf8')) as T) : null;
}

/** A bar: its value, the text after it (the value by default), and a goal drawn as a tick across it. */
export type Bar = { label: string; value: number; text?: string; target?: number };
export type Chart = { file: string; title: string; bars: Bar[] };

/**
 * Prints the record; unless --dry-run, writes bench/results/<name>-<date>.json (deleting the older
 * results of the same name), the charts, and the section under `heading` in BENCHMARKS.md.
 */
export async function publish(
  o: Flags,
  record: {
    name: string;
    heading: string;
    result: { date: string };
    markdown: string;
    charts?: (Chart | null)[];
  },
): Promise<void> {
  process.stdout.write(`${record.markdown}\n`);
  if (o.dryRun) return;
  await mkdir(RESULTS, { recursive: true });
  const file = `${record.name}-${record.result.date.slice(0, 10)}.json`;
  for (const old of await readdir(RESULTS))
    if (old !== file && isResult(record.name, old)) await rm(join(RESULTS, old));
  await writeFile(join(RESULTS, file), `${JSON.stringify(record.result, null, 1)}\n`);
  for (const chart of record.charts ?? [])
    if (chart) await writeFile(join(RESULTS, chart.file), barChart(chart));
  const md = join(ROOT, 'BENCHMARKS.md');
  const section = `${record.heading}\n\n${record.markdown.trim()}\n`;
  await writeFile(md, withMarkdownSection(await readFile(md, 'utf8'), record.heading, section));
  log(`saved bench/results/${file} and "${record.heading}" in BENCHMARKS.md`);
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** Horizontal bars as SVG, one per row, scaled to the largest value or target. */
function barChart({ title, bars }: Chart): string {
  const [left, width, row] = [260, 380, 26];
  const max = Math.max(1e-9, ...bars.flatMap((b) => [b.value, b.target ?? 0])) * 1.05;
  const x = (v: number) => round(left + (v / max) * width);
  const rows = bars.map((b, i) => {
    const y = 34 + i * row;
    const tick = b.target
      ? `<line x1="${x(b.target)}" x2="${x(b.target)}" y1="${y - 3}" y2="${y + 19}" stroke="#c0392b" stroke-width="2"/>`
      : '';
    return (
      `<text x="${left - 8}" y="${y + 12}" text-anchor="end">${esc(b.label)}</text>` +
      `<rect x="${left}" y="${y}" width="${round(x(b.value) - left)}" height="16" fill="#4a7ab5"/>${tick}` +
      `<text x="${x(b.value) + 6}" y="${y + 12}">${esc(b.text ?? int(b.value))}</text>`
    );
  });
  const height = 44 + bars.length * row;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${left + width + 130}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="18" font-weight="bold">${esc(title)}</text>`,
    ...rows,
    bars.some((b) => b.target) ? `<text x="${left}" y="${height - 6}" fill="#c0392b">| target</text>` : '',
    '</svg>\n',
  ].join('\n');
}

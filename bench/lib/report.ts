// What every benchmark reports with: the machine, medians and percentiles, the newest result kept
// in bench/results (older ones of the same benchmark deleted: history is in git), its section of
// BENCHMARKS.md, and a bar chart drawn as SVG.
import { spawnSync } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withMarkdownSection } from './sections.js';

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const RESULTS = join(ROOT, 'bench', 'results');

export const log = (line: string) => process.stderr.write(`${line}\n`);
export const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
export const pct = (x: number | null | undefined) => (x == null ? '-' : `${round(x * 100)}%`);
export const int = (n: number) => Math.round(n).toLocaleString('en');

/** `npm run build` unless `skip`: every benchmark runs the service from dist, as operators do. */
export function build(skip: boolean): void {
  if (skip) return;
  if (spawnSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' }).status !== 0)
    throw new Error('npm run build failed');
}

/** Runs a benchmark's main; a failure is printed and sets the exit code. */
export function runMain(main: () => Promise<unknown>): void {
  main().then(
    (passed) => {
      if (passed === false) process.exitCode = 1;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? (error.stack ?? error.message) : error);
      process.exitCode = 1;
    },
  );
}

export function positive(name: string, raw: string | undefined): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`);
  return n;
}

export function machine() {
  const all = cpus();
  return {
    cpus: all.length,
    cpuModel: all[0]?.model.trim() ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    kernel: release(),
    loadAverage: loadavg().map((x) => round(x, 2)),
  };
}

/** The middle value, or the mean of the middle two. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  if (s.length === 0) return 0;
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Nearest-rank percentile of unsorted samples. */
export function percentile(xs: readonly number[], share: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return 0;
  return s[Math.min(s.length, Math.max(1, Math.ceil(share * s.length))) - 1] as number;
}

export interface Target {
  name: string;
  goal: string;
  value: string;
  met: boolean | null;
}

export const targetTable = (targets: Target[]) =>
  [
    '| Target | Goal | Measured | |',
    '|---|---|---|---|',
    ...targets.map(
      (t) =>
        `| ${t.name} | ${t.goal} | ${t.value} | ${t.met === null ? 'not measured' : t.met ? 'met' : 'MISSED'} |`,
    ),
  ].join('\n');

/** A markdown table; `head` is the header row, cells separated by "|". */
export function table(head: string, rows: (string | number)[][]): string {
  const cells = head.split('|');
  const rule = cells.map((_, i) => (i === 0 ? '---' : '---:')).join('|');
  return [`| ${cells.join(' | ')} |`, `|${rule}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** Writes bench/results/<name>-<date>.json and deletes the older results of the same name. */
export async function saveNewest(name: string, result: { date: string }): Promise<string> {
  const file = `${name}-${result.date.slice(0, 10)}.json`;
  for (const old of await readdir(RESULTS).catch(() => [] as string[])) {
    if (old !== file && old.startsWith(`${name}-`) && /^\d{4}-/.test(old.slice(name.length + 1)))
      await rm(join(RESULTS, old));
  }
  await writeFile(join(RESULTS, file), `${JSON.stringify(result, null, 1)}\n`);
  return join('bench', 'results', file);
}

export async function readNewest<T>(name: string): Promise<T | null> {
  const files = (await readdir(RESULTS).catch(() => [] as string[]))
    .filter((f) => f.startsWith(`${name}-`) && /^\d{4}-/.test(f.slice(name.length + 1)))
    .sort();
  const last = files.at(-1);
  return last ? (JSON.parse(await readFile(join(RESULTS, last), 'utf8')) as T) : null;
}

/** Replaces the section under `heading` in BENCHMARKS.md. */
export async function writeSection(heading: string, section: string): Promise<void> {
  const file = join(ROOT, 'BENCHMARKS.md');
  const current = await readFile(file, 'utf8').catch(() => '# Benchmarks\n');
  await writeFile(file, withMarkdownSection(current, heading, `${heading}\n\n${section.trim()}\n`));
  log(`updated "${heading}" in BENCHMARKS.md`);
}

export interface Bar {
  label: string;
  value: number;
  /** Shown after the bar (the value by default). */
  text?: string;
  /** A goal drawn as a tick across the bar. */
  target?: number;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** Horizontal bars, one per row, scaled to the largest value or target; written to bench/results. */
export async function barChart(file: string, title: string, bars: Bar[]): Promise<void> {
  const left = 260;
  const width = 380;
  const row = 26;
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
  const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${left + width + 130}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="18" font-weight="bold">${esc(title)}</text>`,
    ...rows,
    bars.some((b) => b.target) ? `<text x="${left}" y="${height - 6}" fill="#c0392b">| target</text>` : '',
    '</svg>',
  ].join('\n');
  await writeFile(join(RESULTS, file), `${svg}\n`);
}

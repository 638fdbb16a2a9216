// Where the API spent its CPU during a run made with `npm run bench -- --profile <dir>`: self time
// by function and by module (a package of node_modules, a file of the service, node itself).
//
//   node --import tsx bench/profile.ts <dir>/<file>.cpuprofile [--top 25]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** `node_modules/<package>`, `src/<file>` (or dist), `node:<module>`, or what V8 calls it. */
export function moduleOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  const own = /\/(?:src|dist)\/(.+)$/.exec(url);
  if (own) return own[1] as string;
  return url.startsWith('node:') ? url : url.replace(/^file:\/\//, '');
}

function table(title: string, totals: Map<string, number>, all: number, top: number): string {
  const rows = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  return [
    title,
    ...rows.map(
      ([name, us]) =>
        `${((us / all) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`,
    ),
  ].join('\n');
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '25' } },
  });
  const file = positionals[0];
  if (!file) throw new Error('usage: profile.ts <file.cpuprofile> [--top 25]');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  let all = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    if (!node) return;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') return;
    all += us;
    const module = moduleOf(url, functionName);
    const fn = `${functionName || '(anonymous)'} ${module}:${lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    byModule.set(module, (byModule.get(module) ?? 0) + us);
  });
  const top = Number(values.top);
  process.stdout.write(
    `busy ${(all / 1e6).toFixed(1)} s\n\n${table('by module', byModule, all, top)}\n\n` +
      `${table('by function (self time)', byFunction, all, top)}\n`,
  );
}

main();

// The layering the README draws, checked on the import statements of src/: arrows point down
// (nothing below the composition root imports apps/), no module imports itself back through
// another, and the rules written once (the UUID spelling, who sees a booking) stay written once.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = dirname(fileURLToPath(import.meta.url));

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.cases.ts'))
      out.push(path);
  }
  return out;
}

const files = sources(SRC);
const rel = (path: string) => relative(SRC, path);
const text = new Map(files.map((f) => [rel(f), readFileSync(f, 'utf8')]));

/** Local imports of a module, as paths relative to src/ (`x.js` read as `x.ts`). */
function importsOf(file: string): string[] {
  const found = [...(text.get(file) as string).matchAll(/^import[^;]*?from '(\.[^']+)'/gms)];
  return found.map((m) => rel(resolve(SRC, dirname(file), (m[1] as string).replace(/\.js$/, '.ts'))));
}

test('nothing below the composition root imports apps/', () => {
  const composition = (f: string) =>
    f.startsWith('apps/') || f === 'cli.ts' || f === 'runtime.ts' || f === 'delivery-thread.ts';
  const offenders = [...text.keys()].filter(
    (f) => !composition(f) && importsOf(f).some((i) => i.startsWith('apps/')),
  );
  assert.deepEqual(offenders, []);
});

test('the delivery engine reads bookings through the domain, never through the API', () => {
  const offenders = [...text.keys()].filter(
    (f) => f.startsWith('delivery/') && importsOf(f).some((i) => i.startsWith('api/')),
  );
  assert.deepEqual(offenders, []);
});

test('no import cycles', () => {
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      cycles.push([...path.slice(path.indexOf(file)), file].join(' -> '));
      return;
    }
    state.set(file, 'open');
    for (const next of importsOf(file)) if (text.has(next)) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of text.keys()) visit(file, []);
  assert.deepEqual(cycles, []);
});

test('the UUID spelling and the visibility of a booking are each written once', () => {
  const where = (pattern: RegExp) => [...text.entries()].filter(([, t]) => pattern.test(t)).map(([f]) => f);
  assert.deepEqual(where(/\{8\}-\[0-9a-f/i), ['domain/ids.ts']);
  assert.deepEqual(where(/originator_organization_id = \$\d+ OR\b/), []);
  assert.deepEqual(where(/executor_organization_id = \$\{/), ['api/bookings/visibility.ts']);
});

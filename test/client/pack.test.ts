// The client as an integrator gets it: packages/client built and packed by npm, the tarball installed with no network into a new project outside the repository, a program using the
// page iterator, the lookup by external id, a PUT with Idempotency-Key, verifyWebhook, webhook `data`
// assigned to the API's Booking and `pricing` narrowed by `role` without casts, compiled
// under `tsc --strict` (TypeScript 7 with and without skipLibCheck, TypeScript 5 with it), then run against a live server whose worker delivers to the
// program's HTTPS receiver.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { seedBookings } from '../api/read-support.js';
import { WEBHOOK_SCOPES, webhookHarness, webhookTenant } from '../support/webhooks.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLIENT = join(ROOT, 'packages', 'client');
const TLS = join(ROOT, 'test', 'fixtures', 'tls');

/** A compiler an integrator may have: the repository's (7) or the client's own dev one (5). */
function compiler(from: string) {
  const manifest = createRequire(join(from, 'package.json')).resolve('typescript/package.json');
  return { tsc: join(dirname(manifest), 'bin', 'tsc'), manifest };
}
const TS7 = compiler(ROOT);
const TS5 = compiler(CLIENT);

/** npm as a person runs it: none of the npm_* settings of an `npm test` that may have started us. */
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

function run(command: string, args: string[], cwd: string, env = cleanEnv): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout: 120_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr, ms: Math.round(performance.now() - started) });
    });
  });
}

const npm = (args: string[], cwd: string) => run('npm', [...args, '--no-audit', '--no-fund'], cwd);

let dir: string;
let project: string;
let files: string[];
const timings: Record<string, number> = {};

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-client-pack-'));
  // The build of `npm run build` (the package's prepack makes the same one with its own compiler,
  // several times slower), in a copy of the package: a clean dist/, so nothing stale is packed,
  // and the repository's own dist/ (which the examples import) is never touched while other tests
  // run.
  const copy = join(dir, 'package');
  for (const name of ['package.json', 'README.md', 'LICENSE', 'src']) {
    await cp(join(CLIENT, name), join(copy, name), { recursive: true });
  }
  const tsconfig = JSON.parse(await readFile(join(CLIENT, 'tsconfig.json'), 'utf8'));
  tsconfig.extends = join(ROOT, 'tsconfig.json');
  tsconfig.compilerOptions.typeRoots = [join(ROOT, 'node_modules', '@types')];
  await writeFile(join(copy, 'tsconfig.json'), JSON.stringify(tsconfig));
  const built = await run(process.execPath, [TS7.tsc, '-p', copy], ROOT);
  assert.equal(built.code, 0, built.stdout + built.stderr);
  timings.build = built.ms;
  const packed = await npm(['pack', '--ignore-scripts', '--json', '--pack-destination', dir], copy);
  assert.equal(packed.code, 0, packed.stdout + packed.stderr);
  timings.pack = packed.ms;
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  assert.ok(info);
  files = info.files.map((f) => f.path);

  project = join(dir, 'consumer');
  await mkdir(project);
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({
      name: 'consumer',
      private: true,
      type: 'module',
      dependencies: { '@svc/integration-client': `file:${join(dir, info.filename)}` },
    }),
  );
  // The package has no dependencies: nothing to fetch.
  const installed = await npm(['install', '--offline', '--ignore-scripts'], project);
  assert.equal(installed.code, 0, installed.stdout + installed.stderr);
  timings.install = installed.ms;
  // Node's types from the repository, as a project would have them from its own install.
  await mkdir(join(project, 'node_modules', '@types'));
  await symlink(
    join(ROOT, 'node_modules', '@types', 'node'),
    join(project, 'node_modules', '@types', 'node'),
  );
  await copyFile(join(ROOT, 'test', 'client', 'pack-consumer.mts'), join(project, 'consumer.mts'));
});

after(() => rm(dir, { recursive: true, force: true }));

test('the tarball holds the build with its generated types, the sources, README and LICENSE, and no tests', () => {
  for (const file of [
    'package.json',
    'README.md',
    'LICENSE',
    'dist/index.js',
    'dist/index.d.ts',
    'dist/client.d.ts',
    'dist/schema.d.ts',
    'dist/operations.js',
    'dist/verify.js',
    'src/index.ts',
    'src/schema.ts',
  ]) {
    assert.ok(files.includes(file), `${file} is packed: ${files.join(' ')}`);
  }
  assert.deepEqual(
    files.filter((f) => /test|scripts\/|tsconfig/.test(f)),
    [],
  );
});

for (const skipLibCheck of [false, true]) {
  test(`a strict project compiles against the installed package (skipLibCheck ${skipLibCheck})`, async () => {
    const config = `tsconfig.${skipLibCheck ? 'skip' : 'full'}.json`;
    await writeFile(
      join(project, config),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck,
          // What the strictest projects add, on the run that checks the package's own types too.
          ...(skipLibCheck ? {} : { exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true }),
          types: ['node'],
          outDir: 'out',
          noEmit: skipLibCheck,
        },
        files: ['consumer.mts'],
      }),
    );
    // TypeScript 5, still what most projects have, reads the declarations TypeScript 7 emitted, on
    // the common setting (checking every declaration of @types/node too took it 12 to 29 s).
    for (const { tsc, manifest } of skipLibCheck ? [TS7, TS5] : [TS7]) {
      const { version } = JSON.parse(await readFile(manifest, 'utf8'));
      const compiled = await run(process.execPath, [tsc, '-p', config], project);
      timings[`tsc ${version} skipLibCheck=${skipLibCheck}`] = compiled.ms;
      assert.equal(compiled.code, 0, `TypeScript ${version}:\n${compiled.stdout}${compiled.stderr}`);
    }
  });
}

test("the README's TypeScript examples compile against the installed package", async () => {
  const readme = await readFile(
    join(project, 'node_modules', '@svc', 'integration-client', 'README.md'),
    'utf8',
  );
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  assert.ok(blocks.length >= 5, `${blocks.length} examples`);
  // Each example in a block of its own, its imports hoisted, what it takes from the text declared.
  const imports = new Set<string>();
  const bodies = blocks.map((block) => {
    const lines = block.split('\n');
    for (const line of lines.filter((l) => l.startsWith('import '))) imports.add(line);
    return `{\n${lines.filter((l) => !l.startsWith('import ')).join('\n')}\n}`;
  });
  const given = [
    "declare const svc: import('@svc/integration-client').TypedClient;",
    "declare const booking: import('@svc/integration-client').Booking;",
    'declare const id: string, baseUrl: string, apiKey: string;',
  ];
  await writeFile(join(project, 'readme.mts'), [...imports, ...given, ...bodies, 'export {};'].join('\n'));
  await writeFile(
    join(project, 'tsconfig.readme.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        strict: true,
        skipLibCheck: true,
        types: ['node'],
        noEmit: true,
      },
      files: ['readme.mts'],
    }),
  );
  const compiled = await run(process.execPath, [TS7.tsc, '-p', 'tsconfig.readme.json'], project);
  timings.readme = compiled.ms;
  assert.equal(compiled.code, 0, compiled.stdout + compiled.stderr);
});

test('the compiled program runs against a live server', async () => {
  const { svc } = await webhookHarness();
  await svc.api.listen({ host: '127.0.0.1', port: 0 });
  const port = (svc.api.server.address() as AddressInfo).port;
  const tenant = await webhookTenant(svc, { scopes: [...WEBHOOK_SCOPES, 'pricing:read'] });
  const ids = await seedBookings(svc, tenant.organization.id, 5);

  const ran = await run(process.execPath, [join(project, 'out', 'consumer.mjs')], project, {
    ...cleanEnv,
    // The origin only: the client adds /api/v1.
    SVC_BASE_URL: `http://127.0.0.1:${port}`,
    SVC_API_KEY: tenant.key,
    SVC_EXTERNAL_ID: 'ERP-1001',
    SVC_TLS_KEY: join(TLS, 'server-key.pem'),
    SVC_TLS_CERT: join(TLS, 'server.pem'),
  });
  timings.program = ran.ms;
  assert.equal(ran.code, 0, ran.stdout + ran.stderr);
  const seen = JSON.parse(ran.stdout.trim().split('\n').at(-1) ?? '');
  assert.deepEqual(seen.bookings, ids, 'every booking over three pages, newest first');
  assert.equal(seen.linked, 'ERP-1001');
  assert.equal(seen.replayed, 'ERP-1001');
  assert.equal(seen.foundId, ids[0]);
  assert.deepEqual(
    { status: seen.error?.status, code: seen.error?.code },
    { status: 404, code: 'not_found' },
  );
  assert.match(seen.error.request_id, /^req_/);
  assert.equal(seen.event.type, 'webhook.test');
  assert.equal(seen.event.id, seen.event.queued);
  assert.equal(seen.event.resource.type, 'webhook');
  assert.equal(seen.wrongSecret, 'signature_mismatch');
  assert.equal(seen.firstPrice, 95.5, "the originator's total, read through the pricing its role narrowed");
  assert.equal(seen.priced, null, 'a webhook.test carries no booking');
  console.log(`# pack, install, compile and run (ms): ${JSON.stringify(timings)}`);
});

// README "Try it in five minutes", run as written: the commands are read out of the section (so
// the README cannot drift from what works) and run by a shell in a fresh copy of the project
// folder (links to this one, with a data directory and build output of its own), as real processes:
// `npm start` serves (its build current, see projectCopy), the example receiver gets a verified
// webhook, the mirror writes every booking, and `listen` forwards events to the receiver started
// again with its secret. Only ports are changed (through the environment, and the listen step's
// 3000), and the secret `listen` printed is put in place of `whsec_…`, so nothing else on the
// machine is disturbed.
import assert from 'node:assert/strict';
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { freePort, start } from '../support/processes.js';

const ROOT = resolve('.');

/** The shell commands of the README section, one list per code block. */
function fiveMinuteCommands(readme: string): string[][] {
  const section = /^## Try it in five minutes\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1];
  assert.ok(section, 'README has a "Try it in five minutes" section');
  const blocks = [...section.matchAll(/^( *)```sh\n([\s\S]*?)^\1```/gm)];
  return blocks.map((b) =>
    (b[2] ?? '')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#')),
  );
}

/**
 * This folder again, with `data/` and `dist/` of its own (bin/ and tsconfig.json copied so they
 * resolve there). dist/ is copied with its times when it is current (scripts/test.mjs builds it
 * before the suite), so `npm start` finds nothing to build, as on a checkout built before.
 */
async function projectCopy(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-five-minutes-'));
  for (const entry of await readdir(ROOT)) {
    if (['data', 'dist', '.git', 'bin', 'tsconfig.json'].includes(entry)) continue;
    await symlink(join(ROOT, entry), join(dir, entry));
  }
  await mkdir(join(dir, 'bin'));
  await copyFile(join(ROOT, 'bin', 'svc.js'), join(dir, 'bin', 'svc.js'));
  await cp(join(ROOT, 'tsconfig.json'), join(dir, 'tsconfig.json'), { preserveTimestamps: true });
  await cp(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true, preserveTimestamps: true }).catch(
    (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    },
  );
  return dir;
}

let dir: string | undefined;
after(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

test('the README section runs as written and a verified webhook arrives', async () => {
  const blocks = fiveMinuteCommands(await readFile(join(ROOT, 'README.md'), 'utf8'));
  assert.equal(blocks.length, 5, 'the service, the receiver, the mirror, listen and its receiver');
  const [serve, receive, mirror, listenStep, listenReceive] = blocks.map((b) => {
    assert.equal(b.length, 1, `one command a block: ${b.join(' / ')}`);
    return b[0] as string;
  }) as [string, string, string, string, string];
  assert.match(serve, /^npm start\b/);

  dir = await projectCopy();
  const port = await freePort();
  const env = {
    ...process.env,
    SVC_PORT: String(port),
    SVC_OPERATOR_PORT: String(await freePort()),
    SVC_HOST: '127.0.0.1',
    RECEIVER_PORT: String(await freePort()),
  };
  // `exec`: the command itself leads its process group, and Ctrl-C (SIGINT to the group, as a
  // terminal sends it) is answered by it, not by a shell around it. Variables set before a command
  // stay before the `exec`.
  const shell = (command: string) =>
    start('sh', ['-c', command.replace(/^((?:\w+=\S+\s+)*)/, '$1exec ')], { cwd: dir, env, group: true });

  // 1. The service: built, seeded, listening, the banner printed, traffic simulated.
  const server = shell(serve);
  const banner = await server.waitFor(/Operator API: .*\n/, 240_000);
  assert.match(banner, /API key \(live, every scope/);
  assert.match(banner, new RegExp(`API reference: http://localhost:${port}/docs`));
  assert.match(banner, /another link: node bin\/svc\.js admin portal open --integration [0-9a-f-]{36}\n/);
  assert.ok(banner.includes(receive), `the banner tells how to start the receiver: ${receive}`);
  assert.match(banner, /Simulated traffic: 1 booking change\(s\) per second/);

  // 2. The receiver: registered, and deliveries from the service's worker verified, simulated
  // changes as well as the test delivery.
  const receiver = shell(receive);
  await receiver.waitFor(/registered webhook \S+ -> https:\/\/localhost:\d+\/webhooks/, 60_000);
  await receiver.waitFor(/verified webhook\.test /, 30_000);
  await receiver.waitFor(/verified booking\.\w+ \S+ booking \d+ \w+/, 30_000);
  assert.ok(!receiver.output().includes('refused'), receiver.output());

  // The receiver's copy of every booking, kept in data/bookings.json.
  await receiver.waitFor(/full copy \(first start\): \d+ bookings/);
  assert.equal(await receiver.stop('SIGINT'), 0, receiver.output());
  const kept = JSON.parse(await readFile(join(dir, 'data', 'bookings.json'), 'utf8'));
  assert.ok(kept.count >= 60, `the demo's bookings: ${kept.count}`);
  assert.equal(typeof kept.last_event_id, 'string', 'the copy carries its bookmark');

  // 3. The full copy, with the receiver stopped.
  const copy = shell(mirror);
  assert.equal(await copy.exited(), 0, copy.output());
  const mirrored = JSON.parse(await readFile(join(dir, 'data', 'bookings.json'), 'utf8'));
  assert.ok(mirrored.count >= 60, `the demo's bookings: ${mirrored.count}`);
  assert.match(copy.output(), new RegExp(`mirrored ${mirrored.count} bookings`));

  // 4. listen, and the receiver again over plain HTTP with the secret listen printed.
  const listenPort = String(await freePort());
  const listen = shell(listenStep.replaceAll('3000', listenPort));
  const printed = await listen.waitFor(/Listening; Ctrl-C stops\./, 120_000);
  const secret = /^(whsec_\S+)$/m.exec(printed)?.[1];
  assert.ok(secret, printed);
  assert.ok(listenReceive.includes('whsec_…'), listenReceive);
  const local = shell(listenReceive.replace('whsec_…', secret).replaceAll('3000', listenPort));
  await local.waitFor(/listening on http:\/\/127\.0\.0\.1:\d+\/webhooks/, 60_000);
  await local.waitFor(/verified booking\.\w+ \S+ booking \d+ \w+/, 60_000);
  assert.ok(!local.output().includes('refused'), local.output());
  assert.equal(await local.stop('SIGINT'), 0, local.output());
  // npx, like npm, may end by the signal; listen itself says it stopped.
  const listenCode = await listen.stop('SIGINT');
  assert.ok(listenCode === 0 || listen.child.signalCode === 'SIGINT', `listen ended with ${listenCode}`);
  assert.match(listen.output(), /stopped: [1-9]\d* forwarded/);
  // 5. The delivery portal, from the link in the banner: opened once, it lists the receiver's webhook.
  const link = new RegExp(
    `Delivery portal .*: (http://localhost:${port}/portal#token=[A-Za-z0-9_-]{43})\n`,
  ).exec(banner)?.[1];
  assert.ok(link, banner);
  const opened = await fetch(new URL('/portal/api/session', link), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: new URL(link).hash.slice('#token='.length) }),
  });
  assert.equal(opened.status, 204, await opened.text());
  const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const hooks = await (await fetch(new URL('/portal/api/webhooks', link), { headers: { cookie } })).json();
  assert.ok(
    hooks.data.some((h: { url: string }) => /^https:\/\/localhost:\d+\/webhooks$/.test(h.url)),
    JSON.stringify(hooks),
  );

  // npm itself may end by the signal, as it does at a terminal; the service must have stopped cleanly.
  const code = await server.stop('SIGINT');
  assert.ok(code === 0 || server.child.signalCode === 'SIGINT', `npm start ended with ${code}`);
  assert.match(server.output(), /"msg":"stopped cleanly"/, 'Ctrl-C stops the service cleanly');
});

// The local sandbox: `svc serve --demo --simulate` with SVC_ENVIRONMENT=test prints a test key,
// refuses live keys, fills the event log with simulated traffic, logs JSON when its output is not
// a terminal, writes the examples' env file, and stops cleanly on SIGINT.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { dataDirMigrated } from '../support/pglite-template.js';
import { freePort, svc } from '../support/processes.js';

// Past initdb already (a first start is serve.happy's subject); the demo data and the rest are made here.
const dataDir = await dataDirMigrated(await mkdtemp(join(tmpdir(), 'svc-sandbox-')));
after(() => rm(dataDir, { recursive: true, force: true }));

test('a test-environment sandbox with simulated traffic', async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}/api/v1`;
  const server = svc(['serve', '--demo', '--simulate', '--rate', '20', '--seed', '5'], {
    SVC_ENVIRONMENT: 'test',
    SVC_DATA_DIR: dataDir,
    SVC_PORT: String(port),
    SVC_OPERATOR_PORT: String(await freePort()),
    SVC_HOST: '127.0.0.1',
    SVC_LOG_LEVEL: 'info',
  });
  const banner = await server.waitFor(/Operator API: .*\n/, 90_000);
  const key = /svc_test_[A-Za-z0-9]{40}/.exec(banner)?.[0];
  assert.ok(key, banner);
  assert.ok(!banner.includes('svc_live_'));
  assert.match(banner, /API key \(test, every scope/);
  assert.match(banner, new RegExp(`API reference: http://localhost:${port}/docs`));
  assert.match(banner, /Simulated traffic: 20 booking change\(s\) per second, seed 5\./);
  const envFile = join(dataDir, 'demo.env');
  assert.ok(banner.includes(`node --env-file=${envFile} examples/webhook-receiver.mjs`), banner);
  const env = await readFile(envFile, 'utf8');
  assert.match(env, new RegExp(`^SVC_API_KEY=${key}$`, 'm'));
  assert.match(env, new RegExp(`^SVC_BASE_URL=http://localhost:${port}/api/v1$`, 'm'));
  assert.equal((await stat(envFile)).mode & 0o777, 0o600);

  const get = (path: string, bearer = key) =>
    fetch(`${base}${path}`, { headers: { authorization: `Bearer ${bearer}` } });
  const me = await get('/integrations/me');
  assert.equal(me.status, 200);
  assert.equal((await me.json()).environment, 'test');
  const live = await get('/integrations/me', `svc_live_${'a'.repeat(40)}`);
  assert.equal(live.status, 401);
  assert.equal((await live.json()).error.code, 'wrong_environment');

  // The log fills with the simulation's events, newest first.
  const newest = async () => (await (await get('/events?limit=1')).json()).data[0]?.id as string | undefined;
  const firstSeen = await newest();
  const until = Date.now() + 20_000;
  let latest = firstSeen;
  while (latest === firstSeen) {
    assert.ok(Date.now() < until, 'new events within 20 s');
    await new Promise((r) => setTimeout(r, 100));
    latest = await newest();
  }
  const page = (await (await get('/events?limit=20')).json()).data as { type: string }[];
  assert.ok(page.every((e) => e.type.startsWith('booking.')));

  // Standard output is a pipe here: JSON lines, not the terminal format.
  const logLines = server
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'));
  assert.ok(logLines.some((l) => JSON.parse(l).msg?.startsWith('simulated: booking')));

  assert.equal(await server.stop('SIGINT'), 0, 'SIGINT stops the server and the simulation cleanly');
});

// The newcomer's path end to end: `svc serve --demo` on an embedded database in a new folder
// listens on loopback only and prints a key that works, `svc admin` drives the operator API, the
// data and the key survive a restart, and SIGTERM stops the process cleanly. The CLI runs from
// source, as `npm start` runs it from dist. The folder starts as PGlite's initdb leaves it (its
// migrations and demo are the first start's): the initdb itself, 2.7 s of CPU, is five-minutes'.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { dataDirAfterInitdb } from '../support/pglite-template.js';
import { freePort, svc } from '../support/processes.js';

const TOKEN = 'cli-test-operator-token-0123456789abcdef';

let dataDir: string;
before(async () => {
  dataDir = await dataDirAfterInitdb(await mkdtemp(join(tmpdir(), 'svc-cli-')));
});
after(() => rm(dataDir, { recursive: true, force: true }));

/** Without SVC_HOST, as `npm start` runs it. */
async function startDemo(port: number, operatorPort: number, args: string[] = []) {
  const env: Record<string, string> = {
    SVC_DATA_DIR: dataDir,
    SVC_PORT: String(port),
    SVC_OPERATOR_PORT: String(operatorPort),
    SVC_OPERATOR_TOKEN: TOKEN,
    SVC_HOST: '', // unset
  };
  const server = svc(['serve', '--demo', ...args], env);
  // A first start makes the database: on a loaded machine that can take a minute.
  const banner = await server.waitFor(/Operator API: .*\n/, 120_000);
  const key = /svc_live_[A-Za-z0-9]{40}/.exec(banner)?.[0];
  assert.ok(key, banner);
  return { server, key, banner };
}

/** Whether something answers on `address` (127.0.0.2 is loopback too on Linux, but not 127.0.0.1). */
async function answers(address: string, port: number): Promise<boolean> {
  return fetch(`http://${address}:${port}/api/v1/openapi.json`).then(
    () => true,
    () => false,
  );
}

test('serve --demo listens on loopback, prints a working key kept across restarts; admin, data and shutdown behave', async () => {
  const [port, operatorPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}/api/v1`;

  const first = await startDemo(port, operatorPort);
  assert.match(first.banner, new RegExp(`curl -s -H "Authorization: Bearer ${first.key}" `));
  assert.match(first.banner, /API key \(live, every scope; new, kept in \S+demo\.env for the next starts\)/);
  assert.match(first.banner, /Listening on 127\.0\.0\.1: this machine only \(SVC_HOST or --host to change\)/);
  if (process.platform === 'linux') assert.equal(await answers('127.0.0.2', port), false, 'not on 127.0.0.2');
  const envFile = join(dataDir, 'demo.env');
  assert.equal((await stat(envFile)).mode & 0o777, 0o600);
  assert.match(await readFile(envFile, 'utf8'), new RegExp(`^SVC_API_KEY=${first.key}$`, 'm'));
  const me = await fetch(`${base}/integrations/me`, { headers: { authorization: `Bearer ${first.key}` } });
  assert.equal(me.status, 200);
  assert.equal((await me.json()).organization.code, '100');
  const page = await (
    await fetch(`${base}/bookings?limit=100`, { headers: { authorization: `Bearer ${first.key}` } })
  ).json();
  assert.ok(page.data.length > 0, 'the demo has bookings');

  const admin = svc(['admin', 'org', 'create', '--code', '4242', '--name', 'Desde la CLI'], {
    SVC_OPERATOR_TOKEN: TOKEN,
    SVC_OPERATOR_PORT: String(operatorPort),
  });
  const printed = await admin.waitFor(/\}\s*$/);
  assert.equal(await admin.exited(), 0);
  assert.equal(JSON.parse(printed).code, '4242');

  assert.equal(await first.server.stop('SIGTERM'), 0, 'SIGTERM stops the service cleanly');

  const second = await startDemo(port, operatorPort);
  try {
    const again = await (
      await fetch(`${base}/bookings?limit=100`, { headers: { authorization: `Bearer ${second.key}` } })
    ).json();
    assert.deepEqual(
      again.data.map((b: { id: string }) => b.id),
      page.data.map((b: { id: string }) => b.id),
      'the same bookings after a restart',
    );
    assert.equal(second.key, first.key, 'the same key after a restart of the same data directory');
    assert.match(second.banner, /API key \(live, every scope; the one of the previous start, kept in /);
  } finally {
    await second.server.stop('SIGTERM');
  }

  // A demo.env others could read no longer holds a key worth keeping: a new one, the old revoked.
  // And --host widens the listener.
  await chmod(envFile, 0o644);
  const third = await startDemo(port, operatorPort, ['--host', '0.0.0.0']);
  try {
    assert.notEqual(third.key, first.key);
    assert.equal((await stat(envFile)).mode & 0o777, 0o600);
    const old = await fetch(`${base}/integrations/me`, { headers: { authorization: `Bearer ${first.key}` } });
    assert.equal(old.status, 401, 'the previous demo key is revoked');
    assert.equal((await old.json()).error.code, 'revoked_key');
    assert.match(third.banner, /Listening on 0\.0\.0\.0: other machines can reach it/);
    if (process.platform === 'linux') assert.equal(await answers('127.0.0.2', port), true);
  } finally {
    await third.server.stop('SIGTERM');
  }
});

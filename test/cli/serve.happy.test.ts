// The newcomer's path end to end: `svc serve --demo` on an embedded database in a fresh folder
// prints a key that works, `svc admin` drives the operator API, the data survives a restart and
// SIGTERM stops the process cleanly. The CLI runs from source, as `npm start` runs it from dist.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { svc } from '../support/processes.js';

const TOKEN = 'cli-test-operator-token-0123456789abcdef';

let dataDir: string;
before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-cli-'));
});
after(() => rm(dataDir, { recursive: true, force: true }));

async function startDemo(port: number, operatorPort: number) {
  const server = svc(['serve', '--demo'], {
    SVC_DATA_DIR: dataDir,
    SVC_PORT: String(port),
    SVC_OPERATOR_PORT: String(operatorPort),
    SVC_OPERATOR_TOKEN: TOKEN,
    SVC_HOST: '127.0.0.1',
  });
  const banner = await server.waitFor(/Operator API: .*\n/);
  const key = /svc_live_[A-Za-z0-9]{40}/.exec(banner)?.[0];
  assert.ok(key, banner);
  return { server, key, banner };
}

test('serve --demo prints a working key; admin works; data and shutdown behave', async () => {
  const port = 18_400 + (process.pid % 500);
  const operatorPort = port + 1;
  const base = `http://127.0.0.1:${port}/api/v1`;

  const first = await startDemo(port, operatorPort);
  assert.match(first.banner, new RegExp(`curl -s -H "Authorization: Bearer ${first.key}" `));
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
    const old = await fetch(`${base}/integrations/me`, { headers: { authorization: `Bearer ${first.key}` } });
    assert.equal(old.status, 401, 'the previous demo key is revoked');
    assert.equal((await old.json()).error.code, 'revoked_key');
  } finally {
    await second.server.stop('SIGTERM');
  }
});

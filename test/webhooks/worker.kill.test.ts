// At least once, proved with real processes: a worker killed with SIGKILL in the middle of an
// attempt leaves its delivery leased; when the lease ends another worker sends it again, with the
// same X-SVC-Delivery and a higher X-SVC-Attempt. On the embedded database the second worker is a
// restarted `svc serve`; on PostgreSQL it is a `svc worker` beside nothing else.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createPostgresDb } from '../../src/db/db.js';
import { bookingBody } from '../support/feed.js';
import { startReceiver } from '../support/https-receiver.js';
import { dataDirMigrated } from '../support/pglite-template.js';
import { freePort, svc as svcProcess } from '../support/processes.js';
import { until } from '../support/wait.js';
import { WEBHOOK_SCOPES } from '../support/webhooks.js';

const TOKEN = 'kill-test-operator-token-0123456789abcdef';
const serverUrl = process.env.TEST_DATABASE_URL;

const receiver = await startReceiver();
const dataDir = await mkdtemp(join(tmpdir(), 'svc-kill-'));
// The embedded database past initdb already: this file is about the worker, not the first start.
if (!serverUrl) await dataDirMigrated(dataDir);
const schema = `t_${randomBytes(6).toString('hex')}`;
const admin = serverUrl ? createPostgresDb({ url: serverUrl, max: 1 }) : null;
if (admin) await admin.exec(`CREATE SCHEMA ${schema}`);
after(async () => {
  await receiver.close();
  await rm(dataDir, { recursive: true, force: true });
  if (admin) {
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
    await admin.close();
  }
});

/** `svc` on this file's database, delivering to the loopback receiver (killed after the file). */
function svc(args: string[], env: Record<string, string>) {
  return svcProcess(args, {
    SVC_HOST: '127.0.0.1',
    SVC_OPERATOR_TOKEN: TOKEN,
    SVC_DATA_DIR: dataDir,
    SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    SVC_WEBHOOK_CA_FILE: receiver.caFile,
    SVC_WEBHOOK_TIMEOUT_MS: '20000',
    SVC_WEBHOOK_LEASE_SECONDS: '21',
    // A worker is dead 3 s after its last beat (the default is 10 s).
    SVC_WEBHOOK_WORKER_LEASE_MS: '3000',
    ...(serverUrl
      ? {
          DATABASE_URL: `${serverUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
          SVC_MASTER_KEY: '07'.repeat(32),
        }
      : {}),
    ...env,
  });
}

async function call(base: string, method: string, path: string, auth: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${auth}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

test('a delivery interrupted by SIGKILL arrives again with the same X-SVC-Delivery and a higher attempt', async () => {
  const [port, operatorPort] = [await freePort(), await freePort()];
  const env = { SVC_PORT: String(port), SVC_OPERATOR_PORT: String(operatorPort) };
  const api = `http://127.0.0.1:${port}/api/v1`;
  const op = `http://127.0.0.1:${operatorPort}/operator/v1`;
  // The first attempt hangs: the worker is inside it when it dies.
  receiver.respond((_req, n) => (n === 1 ? { hang: true } : { status: 200 }));

  const first = svc(['serve'], { ...env, SVC_WEBHOOK_LEASE_SECONDS: '3', SVC_WEBHOOK_TIMEOUT_MS: '2000' });
  const ready = async () =>
    (await fetch(`${op}/healthz`, { headers: { authorization: `Bearer ${TOKEN}` } })).ok ? true : undefined;
  await until('serve answers', ready);
  const org = await call(op, 'POST', '/organizations', TOKEN, {
    code: String(500 + (process.pid % 400)),
    name: 'Kill test',
    webhooks_enabled: true,
    outbox_enabled: true,
  });
  const integration = await call(op, 'POST', `/organizations/${org.id}/integrations`, TOKEN, {
    name: 'ERP',
    kind: 'erp',
    scopes: WEBHOOK_SCOPES,
  });
  const key = await call(op, 'POST', `/integrations/${integration.id}/keys`, TOKEN, {
    name: 'k',
    scopes: WEBHOOK_SCOPES,
    environment: 'live',
  });
  await call(api, 'POST', '/webhooks', key.key, { url: receiver.url('/kill'), events: ['booking.created'] });
  await call(op, 'PUT', `/organizations/${org.id}/bookings/${randomUUID()}`, TOKEN, bookingBody());

  const [interrupted] = await receiver.waitFor(1, 30_000);
  await first.stop('SIGKILL');
  assert.equal(interrupted?.headers['x-svc-attempt'], '1');

  // Another worker takes the delivery back once the dead one's 3 s leases (its delivery's and its
  // own) have ended.
  const second = serverUrl ? svc(['worker'], {}) : svc(['serve'], env);
  const [, again] = await receiver.waitFor(2, 45_000);
  assert.equal(again?.headers['x-svc-delivery'], interrupted?.headers['x-svc-delivery']);
  assert.equal(again?.headers['x-svc-event-id'], interrupted?.headers['x-svc-event-id']);
  assert.equal(again?.headers['x-svc-attempt'], '2');
  assert.equal(again?.body, interrupted?.body, 'the same event, the same body');
  assert.ok((again?.receivedAt ?? 0) - (interrupted?.receivedAt ?? 0) >= 2500, 'not before the lease ended');

  // SIGTERM stops the worker cleanly.
  assert.equal(await second.stop('SIGTERM'), 0);
});

test('svc worker refuses the embedded database with a clear message', async () => {
  const child = svcProcess(['worker'], { DATABASE_URL: '', SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'silent' });
  assert.notEqual(await child.exited(), 0);
  assert.match(child.output(), /svc worker needs DATABASE_URL/);
});

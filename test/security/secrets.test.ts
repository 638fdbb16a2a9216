// No secret leaves the process through its logs or its error answers. A real `svc serve` (APIs and
// delivery worker) logs at trace level while representative flows run against it: keys issued,
// used, revoked and mistyped; webhooks created, replayed, rotated and delivered to a receiver that
// fails and then succeeds; the operator token used and mistyped; malformed and oversized requests.
// Everything the process wrote and every error body is then searched for each API key, webhook
// secret, the operator token and the master key, whole and by its random part.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { startReceiver } from '../support/https-receiver.js';
import { dataDirMigrated } from '../support/pglite-template.js';
import { freePort, svc } from '../support/processes.js';
import { FAST_SCHEDULE } from '../support/webhooks.js';

const OPERATOR_TOKEN = `op_${randomBytes(24).toString('base64url')}`;
const MASTER_KEY = randomBytes(32).toString('base64');

const dataDir = await dataDirMigrated(await mkdtemp(join(tmpdir(), 'svc-secrets-')));
const receiver = await startReceiver();
after(async () => {
  await receiver.close();
  await rm(dataDir, { recursive: true, force: true });
});

const [port, operatorPort] = [await freePort(), await freePort()];
const server = svc(['serve'], {
  DATABASE_URL: '',
  SVC_DATA_DIR: dataDir,
  SVC_HOST: '127.0.0.1',
  SVC_PORT: String(port),
  SVC_OPERATOR_PORT: String(operatorPort),
  SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
  SVC_MASTER_KEY: MASTER_KEY,
  SVC_LOG_LEVEL: 'trace',
  SVC_LOG_FORMAT: 'json',
  SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  SVC_WEBHOOK_CA_FILE: receiver.caFile,
  SVC_WEBHOOK_RETRY_SCHEDULE: FAST_SCHEDULE,
  SVC_WEBHOOK_TIMEOUT_MS: '1500',
  SVC_WEBHOOK_LEASE_SECONDS: '3',
});
after(() => server.stop('SIGKILL'));

const api = `http://127.0.0.1:${port}/api/v1`;
const operator = `http://127.0.0.1:${operatorPort}/operator/v1`;

/** Every error answer's body, as text. */
const errorBodies: string[] = [];

async function request(url: string, init: RequestInit & { auth?: string; json?: unknown } = {}) {
  const headers = new Headers(init.headers);
  if (init.auth !== undefined) headers.set('authorization', init.auth);
  let body = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers.set('content-type', 'application/json');
  }
  const res = await fetch(url, { ...init, headers, body });
  const text = await res.text();
  if (res.status >= 400) errorBodies.push(text);
  return { status: res.status, text, body: text.startsWith('{') ? JSON.parse(text) : undefined };
}

const op = (method: string, path: string, json?: unknown) =>
  request(`${operator}${path}`, { method, auth: `Bearer ${OPERATOR_TOKEN}`, json });
const call = (key: string, method: string, path: string, json?: unknown, headers?: Record<string, string>) =>
  request(`${api}${path}`, { method, auth: `Bearer ${key}`, json, headers });

function ok<T = any>(res: { status: number; text: string; body: T }, status = 200): T {
  assert.equal(res.status, status, res.text);
  return res.body;
}

/** Until the receiver has `count` requests (bounded). */
async function arrivals(count: number) {
  return receiver.waitFor(count, 15_000);
}

test('no API key, webhook secret, operator token or master key in any log line or error body', async () => {
  await server.waitFor(
    /"msg":"Server listening at http:\/\/127\.0\.0\.1:\d+"[\s\S]*"msg":"Server listening/,
    60_000,
  );
  const secrets: string[] = [OPERATOR_TOKEN, MASTER_KEY];

  // The platform sets up a tenant; keys are issued.
  const org = ok(
    await op('POST', '/organizations', { code: '7731', name: 'Secretos SL', webhooks_enabled: true }),
    201,
  );
  const scopes = ['bookings:read', 'webhooks:read', 'webhooks:write', 'events:read'];
  const integration = ok(
    await op('POST', `/organizations/${org.id}/integrations`, { name: 'ERP', kind: 'erp', scopes }),
    201,
  );
  const issue = async (environment: 'live' | 'test') => {
    const key = ok(
      await op('POST', `/integrations/${integration.id}/keys`, { name: environment, scopes, environment }),
      201,
    );
    secrets.push(key.key);
    return key as { id: string; key: string };
  };
  const main = await issue('live');
  const spare = await issue('test');
  const revoked = await issue('live');

  // Keys used, and mistyped in the ways a client gets them wrong.
  ok(await call(main.key, 'GET', '/integrations/me'));
  // A test key against a live service: refused.
  assert.equal((await call(spare.key, 'GET', '/bookings?limit=1')).body.error.code, 'wrong_environment');
  ok(await op('POST', `/keys/${revoked.id}/revoke`));
  assert.equal((await call(revoked.key, 'GET', '/integrations/me')).status, 401);
  assert.equal((await call(`${main.key}x`, 'GET', '/integrations/me')).status, 401);
  assert.equal((await call(main.key.slice(0, -1), 'GET', '/integrations/me')).status, 401);
  assert.equal((await request(`${api}/integrations/me`, { auth: main.key })).status, 401);
  assert.equal((await request(`${api}/integrations/me`, { auth: `Basic ${main.key}` })).status, 401);
  assert.equal((await request(`${api}/integrations/me?api_key=${main.key}`)).status, 401);
  assert.equal((await call(main.key, 'GET', `/bookings/${main.key}`)).status, 404);
  assert.equal((await call(main.key, 'GET', `/bookings?cursor=${main.key}`)).status, 400);
  assert.equal((await call(main.key, 'GET', `/bookings?external_id=${main.key}`)).status, 200);
  assert.equal((await call(main.key, 'PUT', '/integrations/me')).status, 405);

  // The operator token used, and mistyped.
  assert.equal(
    (await request(`${operator}/organizations/${org.id}`, { auth: `Bearer ${OPERATOR_TOKEN}x` })).status,
    401,
  );
  assert.equal((await request(`${operator}/organizations/${org.id}`, { auth: OPERATOR_TOKEN })).status, 401);
  assert.equal((await request(`${operator}/organizations/${org.id}?token=${OPERATOR_TOKEN}`)).status, 401);
  assert.equal((await op('POST', '/organizations', { code: OPERATOR_TOKEN, name: 'x' })).status, 400);

  // A webhook: created (the secret shown once; a replay does not show it again), tested, rotated.
  receiver.respond((_req, n) => (n === 1 ? { status: 500, body: 'try again' } : { status: 200 }));
  const idempotency = { 'idempotency-key': `create-${randomBytes(4).toString('hex')}` };
  const create = async () =>
    ok(
      await call(
        main.key,
        'POST',
        '/webhooks',
        { url: receiver.url('/hook'), events: ['booking.created'] },
        idempotency,
      ),
      201,
    );
  const created = await create();
  secrets.push(created.secret);
  const replay = await create();
  assert.equal(replay.secret, null);
  assert.equal(
    (
      await call(main.key, 'POST', '/webhooks', {
        url: `https://user:${created.secret}@example.com/`,
        events: ['*'],
      })
    ).status,
    400,
  );
  ok(await call(main.key, 'POST', `/webhooks/${created.id}/test`), 202);
  await arrivals(2); // a failure (500) and its retry
  for (const overlap of [60, 0]) {
    const rotated = ok(
      await call(main.key, 'POST', `/webhooks/${created.id}/rotate-secret`, { overlap_minutes: overlap }),
    );
    secrets.push(rotated.secret);
  }
  ok(await call(main.key, 'POST', `/webhooks/${created.id}/test`), 202);
  await arrivals(3);
  const shown = [
    await call(main.key, 'GET', `/webhooks/${created.id}`),
    await call(main.key, 'GET', '/webhooks'),
    await call(main.key, 'GET', `/webhooks/${created.id}/deliveries`),
    replay,
  ].map((r) => ('text' in r ? r.text : JSON.stringify(r)));

  // Malformed and oversized requests.
  assert.equal(
    (await call(main.key, 'POST', '/webhooks', undefined, { 'content-type': 'application/json' })).status,
    400,
  );
  assert.equal(
    (
      await request(`${api}/webhooks`, {
        method: 'POST',
        auth: `Bearer ${main.key}`,
        headers: { 'content-type': 'application/json' },
        body: `{"url":"${main.key}`,
      })
    ).status,
    400,
  );
  assert.equal(
    (
      await request(`${api}/webhooks`, {
        method: 'POST',
        auth: `Bearer ${main.key}`,
        headers: { 'content-type': 'application/json' },
        body: `{"url":"${'x'.repeat(300_000)}"}`,
      })
    ).status,
    413,
  );

  // Stopped the way an operator stops it: whatever shutdown logs is searched too.
  assert.equal(await server.stop('SIGTERM'), 0);

  const logged = server.output();
  assert.ok(logged.split('\n').length > 50, `the process logged ${logged.split('\n').length} lines`);
  // Whole, and by the random part alone (a prefix such as `svc_live_` or `whsec_` may be logged).
  const needles = secrets.flatMap((s) => [s, s.replace(/^(svc_(live|test)_|whsec_|op_)/, '').slice(-24)]);
  const haystacks = [
    ['the process output', logged],
    ['the error bodies', errorBodies.join('\n')],
    ['the webhook views and the replay', shown.join('\n')],
  ] as const;
  for (const [where, text] of haystacks) {
    for (const needle of needles) {
      const at = text.indexOf(needle);
      assert.equal(
        at,
        -1,
        `${where} holds a secret (${needle.slice(0, 10)}…): ${text.slice(Math.max(0, text.lastIndexOf('\n', at)), at + 60)}`,
      );
    }
  }
  console.log(
    `# secrets: ${secrets.length} secrets, ${logged.split('\n').length} log lines and ${errorBodies.length} error bodies searched`,
  );
});

// Master-key rotation online, as docs/operations.md runs it: the service starts with a new key and
// the old one as a fallback, the operator re-seals every stored secret in batches (interrupted and
// run again, a secret sealed meanwhile by a process still on the old key picked up by a further
// run) while bookings keep flowing, then the old key is removed. Every delivery arrives once, first
// time, and verifies at the receiver with a secret the integrator was given.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { buildOperatorApp } from '../../src/apps/operator.js';
import { startDeliveryWorker } from '../../src/runtime.js';
import { masterKeyCheck } from '../../src/security/master-key.js';
import {
  createSecretBox,
  deriveKey,
  masterKeyId,
  type SecretBox,
  sealSecret,
} from '../../src/security/secrets.js';
import { inject, MASTER_KEY, OPERATOR_TOKEN } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import type { ReceivedRequest } from '../support/https-receiver.js';
import { outputAfterExit, svc as svcCommand } from '../support/processes.js';
import { expectOk, type Tenant } from '../support/tenants.js';
import { until } from '../support/wait.js';
import { createWebhook, signatureMatches, webhookService, webhookTenant } from '../support/webhooks.js';

// The receiver answers in the worker's own process, beside the embedded database and a `svc admin`
// starting: an attempt time-out and a lease far above any stall of a loaded machine, so a delivery
// sent twice would be a fault of the rotation, not an answer that came late.
const { svc, receiver } = await webhookService({
  SVC_WEBHOOK_TIMEOUT_MS: '20000',
  SVC_WEBHOOK_LEASE_SECONDS: '60',
});

const OLD = MASTER_KEY;
const NEW = randomBytes(32);

interface Hook {
  id: string;
  path: string;
  tenant: Tenant;
  /** Every secret the integrator was given for it. */
  secrets: string[];
}

/** The service as restarted with another ring: its operator API and a delivery worker on it. */
async function withRing(box: SecretBox) {
  const deps = { ...svc.deps, secrets: box };
  const operator = await buildOperatorApp(deps, OPERATOR_TOKEN);
  await operator.listen({ host: '127.0.0.1', port: 0 });
  const worker = await startDeliveryWorker(deps);
  return {
    url: `http://127.0.0.1:${(operator.server.address() as AddressInfo).port}`,
    op: (method: string, path: string, body?: unknown) =>
      inject(operator, method, `/operator/v1${path}`, { body }, `Bearer ${OPERATOR_TOKEN}`),
    async close() {
      await worker.stop(1000);
      await operator.close();
    },
  };
}

async function makeHooks(t: Tenant, count: number): Promise<Hook[]> {
  const hooks: Hook[] = [];
  for (let i = 0; i < count; i++) {
    const path = `/rotation/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path));
    hooks.push({ id: hook.id, path, tenant: t, secrets: [hook.secret] });
  }
  return hooks;
}

/** A webhook secret as stored before key ids: nonce | tag | ciphertext under the old key. */
async function sealInOldFormat(hook: Hook): Promise<void> {
  const legacy = sealSecret(deriveKey(OLD, 'webhook-secrets'), hook.secrets[0] as string, hook.id);
  await svc.db.query('UPDATE webhooks SET secret = $2 WHERE id = $1', [hook.id, legacy]);
}

/** A booking per tenant: one delivery to each of its webhooks. */
async function bookings(tenants: Tenant[], rounds: number): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    for (const t of tenants) await putBooking(svc, t.organization.id);
  }
}

test('rotation with deliveries running: none lost, each first time, every signature valid', async () => {
  const tenants = [await webhookTenant(svc), await webhookTenant(svc)];
  const hooks = [
    ...(await makeHooks(tenants[0] as Tenant, 5)),
    ...(await makeHooks(tenants[1] as Tenant, 5)),
  ];
  const [legacy1, legacy2, rotated] = hooks as [Hook, Hook, Hook];
  await sealInOldFormat(legacy1);
  await sealInOldFormat(legacy2);
  // One webhook in a secret rotation's overlap: a previous secret to re-seal as well.
  const answer = await expectOk(
    await svc.call('POST', `/webhooks/${rotated.id}/rotate-secret`, {
      key: rotated.tenant.key,
      body: { overlap_minutes: 60 },
    }),
  );
  rotated.secrets.push(answer.secret);
  const storedSecrets = hooks.length + 1;
  let expected = 0;

  // The service again, with the new key and the old one as a fallback: it starts (the check opens
  // what is stored) and delivers while the re-seal runs.
  const during = createSecretBox(NEW, [OLD]);
  assert.ok((await masterKeyCheck(svc.db, during)).ok);
  const ring = await withRing(during);
  try {
    const status = await expectOk(await ring.op('GET', '/master-key'));
    assert.equal(status.key_id, masterKeyId(NEW));
    assert.deepEqual(status.fallback_key_ids, [masterKeyId(OLD)]);
    assert.equal(status.awaiting_reseal, storedSecrets);
    assert.deepEqual(
      status.sealed.sort((a: { secrets: number }, b: { secrets: number }) => b.secrets - a.secrets),
      [
        { key_id: masterKeyId(OLD), secrets: storedSecrets - 2 },
        { key_id: null, secrets: 2 },
      ],
    );

    // Two batches of three, bookings flowing between them; then the run is cut short.
    const batch = (after?: string) => ring.op('POST', '/master-key/rotate', { limit: 3, after });
    await bookings(tenants, 2);
    const first = await expectOk(await batch());
    await bookings(tenants, 2);
    const second = await expectOk(await batch(first.next_after));
    assert.equal(first.resealed + second.resealed, 6);
    assert.deepEqual([...first.unopened, ...second.unopened], []);
    expected += 4 * hooks.length;

    // Run again from the start, as the runbook does (`svc admin master-key rotate`), bookings
    // flowing meanwhile: what is done is skipped, the rest re-sealed.
    const admin = svcCommand(['admin', 'master-key', 'rotate', '--limit', '2'], {
      SVC_OPERATOR_URL: ring.url,
      SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
    });
    let finished = false;
    const exited = admin.exited().finally(() => {
      finished = true;
    });
    do {
      await bookings(tenants, 1);
      expected += hooks.length;
    } while (!finished);
    assert.equal(await exited, 0, admin.output());
    const printed = await outputAfterExit(admin);
    const summary = JSON.parse(printed.split('\n').findLast((l) => l.startsWith('{')) ?? '');
    assert.equal(summary.key_id, masterKeyId(NEW));
    assert.equal(summary.resealed, hooks.length - 6);
    assert.equal(summary.awaiting_reseal, 0);
    assert.deepEqual(summary.unopened, []);

    // A process still on the old key seals a rotated secret under it: the status says so, and
    // another run takes it.
    const late = await expectOk(
      await svc.call('POST', `/webhooks/${rotated.id}/rotate-secret`, {
        key: rotated.tenant.key,
        body: { overlap_minutes: 60 },
      }),
    );
    rotated.secrets.push(late.secret);
    assert.equal((await expectOk(await ring.op('GET', '/master-key'))).awaiting_reseal, 1);
    assert.equal((await expectOk(await batch())).resealed, 1);
    const done = await expectOk(await ring.op('GET', '/master-key'));
    assert.equal(done.awaiting_reseal, 0);
    assert.deepEqual(done.sealed, [{ key_id: masterKeyId(NEW), secrets: storedSecrets }]);
    assert.equal((await expectOk(await batch())).resealed, 0, 'idempotent');
    await bookings(tenants, 1);
    expected += hooks.length;
    await receiver.waitFor(expected, 30_000);
  } finally {
    await ring.close();
  }

  // The old key removed: everything opens with the new one alone.
  const after = createSecretBox(NEW);
  assert.ok((await masterKeyCheck(svc.db, after)).ok);
  const alone = await withRing(after);
  try {
    await bookings(tenants, 2);
    expected += 2 * hooks.length;
    await receiver.waitFor(expected, 30_000);
  } finally {
    await alone.close();
  }

  const arrived = receiver.requests.filter((r) => r.path.startsWith('/rotation/'));
  const deliveries = new Set(arrived.map((r) => r.headers['x-svc-delivery']));
  assert.equal(deliveries.size, expected, 'none lost');
  assert.equal(arrived.length, expected, 'each delivery once');
  for (const hook of hooks) {
    const own = arrived.filter((r) => r.path === hook.path);
    assert.equal(own.length, expected / hooks.length, hook.path);
    for (const req of own) assertSigned(hook, req);
  }
  const rows = await svc.db.query<{ status: string; attempt: number; n: number }>(
    `SELECT status, attempt, count(*)::int AS n FROM webhook_deliveries
     WHERE webhook_id = ANY($1::uuid[]) GROUP BY 1, 2`,
    [hooks.map((h) => h.id)],
  );
  assert.deepEqual(rows, [{ status: 'succeeded', attempt: 1, n: expected }], 'first time, no fault');
});

function assertSigned(hook: Hook, req: ReceivedRequest): void {
  assert.ok(
    hook.secrets.some((secret) => signatureMatches(secret, req.headers, req.body)),
    `${hook.path}: signed with none of the secrets the integrator was given`,
  );
}

test('a secret no key of the ring opens is reported with the key it names, and left as it is', async () => {
  const t = await webhookTenant(svc);
  const [hook] = (await makeHooks(t, 1)) as [Hook];
  const stranger = randomBytes(32);
  const sealed = createSecretBox(stranger).seal('whsec_x', hook.id);
  await svc.db.query('UPDATE webhooks SET secret = $2 WHERE id = $1', [hook.id, sealed]);
  const ring = await withRing(createSecretBox(NEW, [OLD]));
  try {
    const unopened = [];
    for (let after: string | undefined; ; ) {
      const batch = await expectOk(await ring.op('POST', '/master-key/rotate', { after }));
      unopened.push(...batch.unopened);
      if (batch.next_after === null) break;
      after = batch.next_after;
    }
    assert.deepEqual(unopened, [{ webhook_id: hook.id, key_id: masterKeyId(stranger) }]);
    const [row] = await svc.db.query<{ secret: Uint8Array }>('SELECT secret FROM webhooks WHERE id = $1', [
      hook.id,
    ]);
    assert.ok(Buffer.from(row?.secret as Uint8Array).equals(sealed), 'not written');
    const status = await expectOk(await ring.op('GET', '/master-key'));
    assert.ok(status.awaiting_reseal >= 1);
    assert.equal((await ring.op('POST', '/master-key/rotate', { limit: 0 })).status, 400);
  } finally {
    await ring.close();
    await svc.db.query('DELETE FROM webhooks WHERE id = $1', [hook.id]);
  }
});

// After the rotation above, every stored secret is under the new key.
test('the check names the key the stored secrets expect', async () => {
  await until('a stored webhook', async () => (await svc.db.query('SELECT 1 FROM webhooks LIMIT 1')).length);
  const wrong = createSecretBox(randomBytes(32));
  const check = await masterKeyCheck(svc.db, wrong);
  assert.equal(check.ok, false);
  assert.ok(check.unopened.length > 0);
  assert.match(check.message ?? '', new RegExp(`sealed under master key ${masterKeyId(NEW)}`));
  assert.match(check.message ?? '', new RegExp(`\\(${wrong.keyId}\\)`));
});

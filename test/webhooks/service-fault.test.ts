// A fault of the service's own (here: a webhook secret that does not open under the master key in
// use, as after a change of master key) is an attempt like any other for its delivery: retried on
// the schedule, then dead, with a last_error that names the service; never counted against the
// webhook, which stays active; logged at error with every id, and counted in a metric of its own.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { createSecretBox } from '../../src/security/secrets.js';
import { putBooking } from '../support/feed.js';
import { createWebhook, deliveriesUntil, webhookHarness, webhookTenant } from '../support/webhooks.js';

const { svc, receiver } = await webhookHarness();

const faults = async () => {
  const metric = await svc.deps.metrics.registry.getSingleMetric('svc_webhook_service_faults_total')?.get();
  return metric?.values[0]?.value ?? 0;
};

test('a secret that does not open: eight attempts, dead, the service named, the webhook untouched', async () => {
  const t = await webhookTenant(svc);
  const path = `/fault/${randomUUID()}`;
  const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  // Sealed under a master key this service does not have, as after the key was changed.
  const other = createSecretBox(Buffer.alloc(32, 9));
  await svc.db.query('UPDATE webhooks SET secret = $2 WHERE id = $1', [
    hook.id,
    other.seal(hook.secret, hook.id),
  ]);
  const before = await faults();
  const logged = svc.logs.length;
  await putBooking(svc, t.organization.id);
  const [d] = await deliveriesUntil(svc, t, hook.id, (x) => x[0]?.status === 'dead', 30_000);
  assert.equal(d?.attempt, 8, 'every attempt of the schedule counted');
  assert.equal(d?.last_status, null);
  assert.match(d?.last_error ?? '', /error interno del servicio \(no del destino\)/);
  assert.match(d?.last_error ?? '', new RegExp(`clave maestra ${other.keyId}, que no está configurada`));
  assert.equal(receiver.requests.filter((r) => r.path === path).length, 0, 'nothing was sent');

  const w = (await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key })).body;
  assert.equal(w.active, true);
  assert.equal(w.consecutive_failures, 0, 'the receiver is not blamed');
  assert.equal((await faults()) - before, 8);

  const lines = svc.logs
    .slice(logged)
    .map((l) => JSON.parse(l))
    .filter((l) => l.level >= 50 && l.delivery_id === d?.id);
  assert.equal(lines.length, 8, 'one error line per attempt');
  for (const line of lines) {
    assert.equal(line.organization_id, t.organization.id);
    assert.equal(line.webhook_id, hook.id);
    assert.ok(line.integration_id);
    assert.ok(line.event_id);
    assert.doesNotMatch(JSON.stringify(line), /whsec_/, 'no secret in the log');
  }
});

// Every delivery carries the Standard Webhooks headers beside the contract's: the specification's
// own TypeScript library (`standardwebhooks`) verifies a real delivery received over HTTPS with the
// webhook's secret exactly as it was shown, and X-SVC-Signature still verifies as before.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { putBooking } from '../support/feed.js';
import type { ReceivedRequest } from '../support/https-receiver.js';
import { expectOk } from '../support/tenants.js';
import {
  arrivalsAt,
  createWebhook,
  deliveriesUntil,
  signatureMatches,
  webhookHarness,
  webhookTenant,
} from '../support/webhooks.js';

const { svc, receiver } = await webhookHarness();

/** What the library's verify returns: the parsed body, or a WebhookVerificationError thrown. */
const verifies = (secret: string, req: ReceivedRequest): boolean => {
  try {
    new Webhook(secret).verify(req.body, req.headers);
    return true;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return false;
    throw error;
  }
};

describe('Standard Webhooks headers', () => {
  test('a booking delivery verifies with standardwebhooks and with X-SVC-Signature', async () => {
    const t = await webhookTenant(svc);
    const path = `/std/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path));
    await putBooking(svc, t.organization.id, {}, randomUUID());
    const [req] = await arrivalsAt(receiver, path, 1);
    assert.ok(req);
    const event = new Webhook(hook.secret).verify(req.body, req.headers) as { id: string; type: string };
    assert.equal(event.type, 'booking.created');
    assert.equal(req.headers['webhook-id'], event.id, 'the id is the event id');
    assert.equal(req.headers['webhook-id'], req.headers['x-svc-event-id']);
    assert.equal(req.headers['webhook-timestamp'], req.headers['x-svc-timestamp']);
    assert.match(req.headers['webhook-signature'] ?? '', /^v1,[A-Za-z0-9+/]{43}=$/);
    assert.ok(signatureMatches(hook.secret, req.headers, req.body), 'the contract signature is unchanged');
    assert.match(req.headers['x-svc-signature'] ?? '', /^v1=[0-9a-f]{64}$/);

    const other = await createWebhook(svc, t, receiver.url('/std/unused'), ['booking.deleted']);
    assert.ok(!verifies(other.secret, req), 'another secret does not verify');
    assert.ok(!verifies(hook.secret, { ...req, body: `${req.body} ` }), 'nor a changed body');
    const id = req.headers['webhook-id'] ?? '';
    const otherId = `${id.slice(0, -1)}${id.endsWith('0') ? '1' : '0'}`;
    assert.ok(
      !verifies(hook.secret, { ...req, headers: { ...req.headers, 'webhook-id': otherId } }),
      'nor another id',
    );
  });

  test('a retry carries the same webhook-id, signed afresh', async () => {
    const t = await webhookTenant(svc);
    const path = `/std/${randomUUID()}`;
    let refused = false;
    receiver.respond((req) => {
      if (req.path !== path || refused) return {};
      refused = true;
      return { status: 503 };
    });
    const hook = await createWebhook(svc, t, receiver.url(path));
    await putBooking(svc, t.organization.id, {}, randomUUID());
    const [first, second] = await arrivalsAt(receiver, path, 2);
    assert.ok(first && second);
    assert.equal(first.headers['x-svc-attempt'], '1');
    assert.equal(second.headers['x-svc-attempt'], '2');
    assert.equal(second.headers['webhook-id'], first.headers['webhook-id']);
    assert.ok(verifies(hook.secret, first) && verifies(hook.secret, second));
    await deliveriesUntil(svc, t, hook.id, (d) => d[0]?.status === 'succeeded');
    receiver.respond(() => ({}));
  });

  test('during a rotation overlap two space-separated signatures: either secret verifies', async () => {
    const t = await webhookTenant(svc);
    const path = `/std/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path));
    const rotated = await expectOk(
      await svc.call('POST', `/webhooks/${hook.id}/rotate-secret`, {
        key: t.key,
        body: { overlap_minutes: 60 },
      }),
    );
    await putBooking(svc, t.organization.id, {}, randomUUID());
    const [req] = await arrivalsAt(receiver, path, 1);
    assert.ok(req);
    assert.equal((req.headers['webhook-signature'] ?? '').split(' ').length, 2);
    assert.ok(verifies(rotated.secret, req), 'the new secret');
    assert.ok(verifies(hook.secret, req), 'the previous secret');
    assert.ok(signatureMatches(rotated.secret, req.headers, req.body));
    assert.ok(signatureMatches(hook.secret, req.headers, req.body));
  });

  test('a base64url secret issued before verifies once written in standard base64', async () => {
    const t = await webhookTenant(svc);
    const path = `/std/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path));
    // A secret of the earlier form, with both characters the standard alphabet lacks.
    const old = `whsec_${Buffer.from('fbff'.repeat(16), 'hex').toString('base64url')}`;
    assert.match(old, /[-_]/);
    await svc.db.query('UPDATE webhooks SET secret = $1 WHERE id = $2', [
      svc.deps.secrets.seal(old, hook.id),
      hook.id,
    ]);
    await putBooking(svc, t.organization.id, {}, randomUUID());
    const [req] = await arrivalsAt(receiver, path, 1);
    assert.ok(req);
    assert.ok(signatureMatches(old, req.headers, req.body), 'the contract signature, keyed with it as shown');
    const converted = `whsec_${Buffer.from(old.slice('whsec_'.length), 'base64url').toString('base64')}`;
    assert.ok(verifies(converted, req));
  });
});

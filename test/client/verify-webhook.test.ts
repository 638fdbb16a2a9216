// verifyWebhook of @svc/integration-client against deliveries the real worker made to a real HTTPS
// receiver: the exact bytes and headers an integrator's server gets.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  verifyWebhook,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from '../../packages/client/src/index.js';
import { putBooking } from '../support/feed.js';
import type { ReceivedRequest } from '../support/https-receiver.js';
import { expectOk, type Tenant } from '../support/tenants.js';
import { createWebhook, webhookHarness, webhookTenant } from '../support/webhooks.js';

const { svc, receiver } = await webhookHarness();

async function arrivals(path: string, count: number, timeoutMs = 10_000): Promise<ReceivedRequest[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const got = receiver.requests.filter((r) => r.path === path);
    if (got.length >= count) return got;
    if (Date.now() > until) assert.fail(`only ${got.length} of ${count} deliveries reached ${path}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function refusal(fn: () => unknown): WebhookVerificationReason {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    assert.equal(error.name, 'WebhookVerificationError');
    return error.reason;
  }
  assert.fail('verified, but should have been refused');
}

/** One booking.created delivered to a fresh webhook; its secret, the request and the tenant. */
async function delivered(): Promise<{
  t: Tenant;
  hook: { id: string; secret: string };
  req: ReceivedRequest;
}> {
  const t = await webhookTenant(svc);
  const path = `/h/${randomUUID()}`;
  const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  await putBooking(svc, t.organization.id, {}, randomUUID());
  const [req] = await arrivals(path, 1);
  assert.ok(req);
  return { t, hook, req };
}

describe('verifyWebhook on real deliveries', () => {
  test('a valid delivery returns the typed event, whatever form the headers and body take', async () => {
    const { t, hook, req } = await delivered();
    const event = verifyWebhook(req.body, req.headers, hook.secret);
    assert.deepEqual(event, JSON.parse(req.body));
    assert.equal(event.id, req.headers['x-svc-event-id']);
    assert.equal(event.type, 'booking.created');
    assert.equal(event.version, 1);
    assert.deepEqual(event.organization, { id: t.organization.id });
    assert.equal(event.resource.type, 'booking');
    assert.equal(event.data?.status, 'confirmed', 'narrowed to a booking event by its type');

    // Raw bytes, a Fetch Headers, and header names in any case.
    assert.deepEqual(verifyWebhook(Buffer.from(req.body), new Headers(req.headers), hook.secret), event);
    const shouted = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k.toUpperCase(), v]));
    assert.deepEqual(verifyWebhook(new TextEncoder().encode(req.body), shouted, hook.secret), event);
  });

  test('a tampered body, re-encoded JSON, a wrong secret or missing headers are refused', async () => {
    const { hook, req } = await delivered();
    const body = JSON.parse(req.body);
    assert.equal(
      refusal(() => verifyWebhook(req.body.replace('"confirmed"', '"cancelled"'), req.headers, hook.secret)),
      'signature_mismatch',
    );
    assert.equal(
      refusal(() => verifyWebhook(JSON.stringify(body, null, 1), req.headers, hook.secret)),
      'signature_mismatch',
      'verification needs the raw body, not JSON encoded again',
    );
    assert.equal(
      refusal(() => verifyWebhook(req.body, req.headers, `${hook.secret}x`)),
      'signature_mismatch',
    );
    assert.equal(
      refusal(() => verifyWebhook(req.body, req.headers, hook.secret.replace('whsec_', ''))),
      'signature_mismatch',
      'keyed with the whole secret, prefix included',
    );
    const later = { ...req.headers, 'x-svc-timestamp': String(Number(req.headers['x-svc-timestamp']) + 1) };
    assert.equal(
      refusal(() => verifyWebhook(req.body, later, hook.secret)),
      'signature_mismatch',
    );

    const { 'x-svc-signature': _s, 'webhook-signature': _w, ...unsigned } = req.headers;
    assert.equal(
      refusal(() => verifyWebhook(req.body, unsigned, hook.secret)),
      'missing_header',
    );
    const { 'x-svc-timestamp': _t, ...undated } = req.headers;
    assert.equal(
      refusal(() => verifyWebhook(req.body, undated, hook.secret)),
      'missing_header',
    );
    const upper = { ...req.headers, 'x-svc-signature': (req.headers['x-svc-signature'] ?? '').toUpperCase() };
    assert.equal(
      refusal(() => verifyWebhook(req.body, upper, hook.secret)),
      'malformed_header',
    );
    assert.equal(
      refusal(() => verifyWebhook(req.body, { ...req.headers, 'x-svc-timestamp': 'soon' }, hook.secret)),
      'malformed_header',
    );
    assert.throws(() => verifyWebhook(req.body, req.headers, ''), TypeError);
  });

  test('during a rotation overlap either secret verifies; after it only the new one', async () => {
    const t = await webhookTenant(svc);
    const path = `/h/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path), ['booking.created', 'booking.updated']);
    const rotated = await expectOk(
      await svc.call('POST', `/webhooks/${hook.id}/rotate-secret`, {
        key: t.key,
        body: { overlap_minutes: 30 },
      }),
    );
    const id = randomUUID();
    await putBooking(svc, t.organization.id, {}, id);
    const [during] = await arrivals(path, 1);
    assert.ok(during);
    assert.equal((during.headers['x-svc-signature'] ?? '').split(',').length, 2, 'two signatures');
    assert.equal(
      verifyWebhook(during.body, during.headers, rotated.secret).id,
      during.headers['x-svc-event-id'],
    );
    assert.equal(
      verifyWebhook(during.body, during.headers, hook.secret).id,
      during.headers['x-svc-event-id'],
    );
    assert.equal(
      refusal(() => verifyWebhook(during.body, during.headers, 'whsec_other')),
      'signature_mismatch',
    );

    const ended = await expectOk(
      await svc.call('POST', `/webhooks/${hook.id}/rotate-secret`, {
        key: t.key,
        body: { overlap_minutes: 0 },
      }),
    );
    await putBooking(svc, t.organization.id, { distance_km: 61 }, id);
    const [, after] = await arrivals(path, 2);
    assert.ok(after);
    assert.equal(verifyWebhook(after.body, after.headers, ended.secret).type, 'booking.updated');
    assert.equal(
      refusal(() => verifyWebhook(after.body, after.headers, rotated.secret)),
      'signature_mismatch',
    );
  });

  test('a timestamp beyond the tolerance, either way, is refused; within it, accepted', async () => {
    const { hook, req } = await delivered();
    const signedMs = Number(req.headers['x-svc-timestamp']) * 1000;
    const at = (offsetS: number, toleranceSeconds?: number) => () =>
      verifyWebhook(req.body, req.headers, hook.secret, { now: signedMs + offsetS * 1000, toleranceSeconds });

    assert.equal(refusal(at(301)), 'stale_timestamp', 'a replay six minutes later');
    assert.equal(refusal(at(-301)), 'future_timestamp');
    assert.equal(at(300)().id, req.headers['x-svc-event-id']);
    assert.equal(at(-300)().id, req.headers['x-svc-event-id']);
    assert.equal(refusal(at(31, 30)), 'stale_timestamp');
    assert.equal(
      verifyWebhook(req.body, req.headers, hook.secret, { now: new Date(signedMs + 1000) }).id,
      req.headers['x-svc-event-id'],
    );
    // A forged signature is refused as a mismatch, not as stale: a stale reason is only given for
    // a delivery that really came from the service.
    assert.equal(
      refusal(() => verifyWebhook(`${req.body} `, req.headers, hook.secret, { now: signedMs + 3_600_000 })),
      'signature_mismatch',
    );
  });

  test('a test delivery verifies to a webhook.test event', async () => {
    const t = await webhookTenant(svc);
    const path = `/h/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path));
    await expectOk(await svc.call('POST', `/webhooks/${hook.id}/test`, { key: t.key }), 202);
    const [req] = await arrivals(path, 1);
    const event = verifyWebhook(req?.body ?? '', req?.headers ?? {}, hook.secret);
    assert.equal(event.type, 'webhook.test');
    assert.deepEqual(event.resource, { type: 'webhook', id: hook.id });
    assert.equal(event.data, null);
  });

  test('the Standard Webhooks header set alone verifies too, as that specification signs it', async () => {
    const { hook, req } = await delivered();
    const standard = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !k.startsWith('x-svc-')));
    assert.ok(standard['webhook-signature']);
    assert.deepEqual(verifyWebhook(req.body, standard, hook.secret), JSON.parse(req.body));

    // Signed by the specification's own library, with a space-separated previous signature.
    const id = randomUUID();
    const at = new Date();
    const body = JSON.stringify({ ...JSON.parse(req.body), id });
    const other = (await createWebhook(svc, await webhookTenant(svc), receiver.url('/h/other'))).secret;
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': `${new Webhook(other).sign(id, at, body)} ${new Webhook(hook.secret).sign(id, at, body)}`,
    };
    assert.equal(verifyWebhook(body, headers, hook.secret).id, id);
    assert.equal(verifyWebhook(body, headers, other).id, id);
    assert.equal(
      refusal(() => verifyWebhook(`${body} `, headers, hook.secret)),
      'signature_mismatch',
    );
    assert.equal(
      refusal(() => verifyWebhook(body, { ...headers, 'webhook-id': randomUUID() }, hook.secret)),
      'signature_mismatch',
    );
    const { 'webhook-id': _id, ...noId } = headers;
    assert.equal(
      refusal(() => verifyWebhook(body, noId, hook.secret)),
      'missing_header',
    );
    assert.equal(
      refusal(() => verifyWebhook(body, { ...headers, 'webhook-signature': 'v1=abc' }, hook.secret)),
      'malformed_header',
    );
  });
});

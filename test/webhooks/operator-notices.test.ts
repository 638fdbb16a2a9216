// Operator notices: a webhook deactivated, or nearing it, is announced to the platform's URL
// (SVC_OPERATOR_NOTIFY_URL), signed like a delivery with SVC_OPERATOR_NOTIFY_SECRET, in the
// background and retried; one that cannot be delivered is logged at warn.
import assert from 'node:assert/strict';
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import { createLogger } from '../../src/logger.js';
import { createOperatorNotifier } from '../../src/operator/notices.js';
import { createSender } from '../../src/outbound/send.js';
import { putBooking } from '../support/feed.js';
import { type ReceivedRequest, startReceiver } from '../support/https-receiver.js';
import { expectOk } from '../support/tenants.js';
import { until } from '../support/wait.js';
import {
  createWebhook,
  deliveriesUntil,
  signatureMatches,
  webhookHarness,
  webhookTenant,
} from '../support/webhooks.js';

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const operator = await startReceiver();
after(() => operator.close());

const { svc, receiver } = await webhookHarness({
  SVC_WEBHOOK_RETRY_SCHEDULE: '0.05,0.1,0.15,0.2,0.25,0.3,0.35',
  SVC_WEBHOOK_CONCURRENCY: '16',
  SVC_OPERATOR_NOTIFY_URL: operator.url('/svc-notices'),
  SVC_OPERATOR_NOTIFY_SECRET: SECRET,
});
// Every tenant webhook of this file answers 404: each delivery ends dead at its third attempt.
receiver.respond(() => ({ status: 404 }));

/** Standard Webhooks' check, written from its specification, not from the service's code. */
function standardSignatureMatches(headers: Record<string, string>, body: string): boolean {
  const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
  const signed = `${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`;
  const expected = Buffer.from(`v1,${createHmac('sha256', key).update(signed).digest('base64')}`);
  return (headers['webhook-signature'] ?? '')
    .split(' ')
    .map((s) => Buffer.from(s))
    .some((given) => given.length === expected.length && timingSafeEqual(given, expected));
}

const noticesOf = (webhookId: string) =>
  operator.requests.filter((r) => (JSON.parse(r.body) as NoticeBody).data.webhook_id === webhookId);

interface NoticeBody {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

function verified(req: ReceivedRequest): NoticeBody {
  assert.equal(req.method, 'POST');
  assert.equal(req.path, '/svc-notices');
  assert.equal(req.headers['content-type'], 'application/json');
  assert.ok(signatureMatches(SECRET, req.headers, req.body), 'the X-SVC-Signature verifies');
  assert.ok(standardSignatureMatches(req.headers, req.body), 'the webhook-signature verifies');
  assert.ok(signatureMatches(`whsec_${'A'.repeat(43)}=`, req.headers, req.body) === false);
  const body = JSON.parse(req.body) as NoticeBody;
  assert.deepEqual(Object.keys(body), ['id', 'type', 'created_at', 'data']);
  assert.equal(req.headers['webhook-id'], body.id);
  assert.equal(req.headers['x-svc-event'], body.type);
  assert.ok(Math.abs(Date.parse(body.created_at) - Date.now()) < 60_000);
  return body;
}

test('a webhook deactivated by its hundredth dead delivery is announced, signed, to the operator URL', async () => {
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url(`/gone/${randomUUID()}`), ['booking.created']);
  await svc.db.query('UPDATE webhooks SET consecutive_failures = 97 WHERE id = $1', [hook.id]);
  for (let i = 0; i < 3; i++) await putBooking(svc, t.organization.id);
  await deliveriesUntil(svc, t, hook.id, (d) => d.length === 3 && d.every((x) => x.status === 'dead'));

  const [req] = await until('the operator received the deactivation', () => {
    const got = noticesOf(hook.id);
    return got.length > 0 && got;
  });
  assert.ok(req);
  const body = verified(req);
  assert.equal(body.type, 'webhook.disabled');
  assert.deepEqual(body.data, {
    organization_id: t.organization.id,
    integration_id: t.integration.id,
    webhook_id: hook.id,
    consecutive_failures: 100,
    reason: '100 deliveries in a row ended dead',
  });
  const state = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }));
  assert.equal(state.active, false);
  assert.equal(noticesOf(hook.id).length, 1, 'one notice: the warnings at 50 and 90 were crossed before');
  assert.equal(svc.logs.join('').includes(SECRET.slice(6, 30)), false, 'the secret is never logged');
});

test('a webhook past 50 dead deliveries in a row is announced as failing, and stays active', async () => {
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url(`/gone/${randomUUID()}`), ['booking.created']);
  await svc.db.query('UPDATE webhooks SET consecutive_failures = 48 WHERE id = $1', [hook.id]);
  for (let i = 0; i < 3; i++) await putBooking(svc, t.organization.id);
  await deliveriesUntil(svc, t, hook.id, (d) => d.length === 3 && d.every((x) => x.status === 'dead'));

  const [req] = await until('the operator received the warning', () => {
    const got = noticesOf(hook.id);
    return got.length > 0 && got;
  });
  assert.ok(req);
  const body = verified(req);
  assert.equal(body.type, 'webhook.failing');
  assert.equal(body.data.webhook_id, hook.id);
  assert.equal(body.data.organization_id, t.organization.id);
  assert.equal(body.data.integration_id, t.integration.id);
  assert.ok(Number(body.data.consecutive_failures) >= 50);
  assert.match(String(body.data.reason), /deactivated at 100/);
  assert.equal(noticesOf(hook.id).length, 1, 'announced once, when 50 is crossed');
  const state = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }));
  assert.equal(state.active, true);
});

/** A notifier on its own, with the gaps compressed, writing its log lines into `lines`. */
function notifier(path: string, retryGapsMs: number[]) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const sender = createSender({
    policy: { allowPrivateTargets: true },
    timeoutMs: 2000,
    ca: readFileSync(operator.caFile),
  });
  const n = createOperatorNotifier({
    url: operator.url(path),
    secret: SECRET,
    sender,
    logger: createLogger('warn', sink),
    retryGapsMs,
  });
  after(() => sender.close());
  return { notify: n.notify, close: n.close, lines };
}

const NOTICE = {
  type: 'webhook.disabled' as const,
  organization_id: randomUUID(),
  integration_id: randomUUID(),
  webhook_id: randomUUID(),
  consecutive_failures: 100,
  reason: '100 deliveries in a row ended dead',
};

test('a notice the receiver refuses is retried with the same id until it is taken', async () => {
  const path = `/flaky/${randomUUID()}`;
  let answered = 0;
  operator.respond((req) => (req.path === path && ++answered <= 2 ? { status: 503 } : { status: 200 }));
  const n = notifier(path, [20, 40, 80]);
  n.notify(NOTICE);
  await until('the third attempt', () => operator.requests.filter((r) => r.path === path).length === 3);
  const attempts = operator.requests.filter((r) => r.path === path);
  assert.deepEqual(
    attempts.map((r) => r.headers['x-svc-attempt']),
    ['1', '2', '3'],
  );
  assert.equal(new Set(attempts.map((r) => r.headers['webhook-id'])).size, 1, 'one id across attempts');
  for (const r of attempts) verified({ ...r, path: '/svc-notices' });
  await n.close(1000);
  assert.deepEqual(n.lines, [], 'delivered: nothing logged');
});

test('a notice never taken is logged at warn with the ids, once its attempts are spent', async () => {
  const path = `/down/${randomUUID()}`;
  operator.respond((req) => (req.path === path ? { status: 500 } : { status: 200 }));
  const n = notifier(path, [10, 10]);
  n.notify(NOTICE);
  const [line] = await until('the notice is given up', () => n.lines.length > 0 && n.lines);
  assert.equal(operator.requests.filter((r) => r.path === path).length, 3);
  assert.equal(line?.level, 40);
  assert.equal(line?.webhook_id, NOTICE.webhook_id);
  assert.equal(line?.organization_id, NOTICE.organization_id);
  assert.equal(line?.integration_id, NOTICE.integration_id);
  assert.equal(line?.http_status, 500);
  assert.match(String(line?.msg), /not delivered/);
  await n.close(1000);
});

test('a notice waiting for its retry when the worker stops is given up at once, and logged', async () => {
  const path = `/stop/${randomUUID()}`;
  operator.respond((req) => (req.path === path ? { status: 503 } : { status: 200 }));
  const n = notifier(path, [600_000]);
  n.notify(NOTICE);
  await until('the first attempt', () => operator.requests.some((r) => r.path === path));
  await until('its answer is taken', () => operator.requests.find((r) => r.path === path)?.answeredAt);
  await n.close(1000);
  assert.equal(n.lines.length, 1);
  assert.match(String(n.lines[0]?.msg), /stopped before it was delivered/);
  n.notify(NOTICE);
  assert.equal(n.lines.length, 2, 'a notice after the stop is logged, not sent');
});

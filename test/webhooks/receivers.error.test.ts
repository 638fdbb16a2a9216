// Misbehaving receivers, over real TLS on loopback with a compressed attempt time-out: one hangs,
// one answers slowly with 5 MB, one trickles its answer, one resets, one resets half-way through a
// 200, one redirects, one presents a certificate the CA did not sign, one answers 410. Each ends in
// the state docs/webhooks.md gives within its time-out; another organization's deliveries stay on
// time meanwhile. (What the sender keeps of large answers: src/outbound/send.test.ts.)
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, test } from 'node:test';
import { putBooking } from '../support/feed.js';
import { startReceiver } from '../support/https-receiver.js';
import {
  arrivalsAt,
  createWebhook,
  type DeliveryView,
  deliveriesUntil,
  requestsTo,
  webhookHarness,
  webhookTenant,
} from '../support/webhooks.js';

const TIMEOUT_MS = 2_000;
// Three quick attempts, then a minute's wait: every delivery below settles after its third attempt
// (a permanent 4xx is dead by then).
const { svc, receiver } = await webhookHarness({
  SVC_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
  SVC_WEBHOOK_RETRY_SCHEDULE: '0.05,0.1,60,60,60,60,60',
  SVC_WEBHOOK_LEASE_SECONDS: '10',
});
const untrusted = await startReceiver({ useUntrustedCert: true });
const other = await startReceiver();
after(() => other.close());
after(() => untrusted.close());

const FIVE_MB = Buffer.alloc(5 * 1024 * 1024, 'y');

function trickle(res: ServerResponse, everyMs: number) {
  const timer = setInterval(() => res.write('.'), everyMs);
  res.on('close', () => clearInterval(timer));
}

type Custom = (res: ServerResponse, reset: () => void) => void;
const CUSTOM: Record<string, Custom> = {
  '/slow-5mb': (res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-length': String(FIVE_MB.length) });
      res.end(FIVE_MB);
    }, 300);
  },
  '/trickle': (res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    trickle(res, 50);
  },
  '/reset-mid-body': (res, reset) => {
    res.writeHead(200, { 'content-length': '10000' });
    res.write('x'.repeat(100));
    setTimeout(reset, 30);
  },
};
receiver.respond((req) => {
  const custom = CUSTOM[req.path];
  if (custom) return { custom };
  if (req.path === '/hang') return { hang: true };
  if (req.path === '/reset') return { reset: true };
  if (req.path === '/redirect') return { status: 302, headers: { location: receiver.url('/elsewhere') } };
  if (req.path === '/gone') return { status: 410, body: 'this endpoint is gone' };
  return { status: 200 };
});

/** What each receiver's delivery must look like once it has settled. */
const EXPECTED: Record<string, (d: DeliveryView) => void> = {
  '/hang': (d) => {
    assert.deepEqual([d.status, d.attempt, d.last_status], ['failed', 3, null]);
    assert.equal(d.last_error, `tiempo de espera agotado (${TIMEOUT_MS} ms)`);
  },
  '/slow-5mb': (d) => {
    assert.deepEqual([d.status, d.attempt, d.last_status, d.last_error], ['succeeded', 1, 200, null]);
  },
  '/trickle': (d) => {
    assert.deepEqual([d.status, d.attempt, d.last_status], ['failed', 3, 200]);
    assert.equal(d.last_error, `respuesta 200 incompleta: tiempo de espera agotado (${TIMEOUT_MS} ms)`);
  },
  '/reset': (d) => {
    assert.deepEqual([d.status, d.attempt, d.last_status], ['failed', 3, null]);
    assert.equal(d.last_error, 'conexión reiniciada (ECONNRESET)');
  },
  '/reset-mid-body': (d) => {
    assert.deepEqual([d.status, d.attempt, d.last_status], ['failed', 3, 200]);
    assert.match(d.last_error ?? '', /^respuesta 200 incompleta: /);
  },
  '/redirect': (d) => {
    assert.deepEqual([d.status, d.attempt, d.last_status], ['failed', 3, 302]);
    assert.match(d.last_error ?? '', /^redirección no seguida \(302 a https:\/\/localhost:\d+\/elsewhere\)$/);
  },
  untrusted: (d) => {
    assert.deepEqual([d.status, d.attempt, d.last_status], ['failed', 3, null]);
    assert.match(d.last_error ?? '', /^certificado TLS no válido \(/);
  },
  '/gone': (d) => {
    assert.deepEqual([d.status, d.attempt, d.max_attempts, d.last_status], ['dead', 3, 3, 410]);
    assert.equal(d.last_error, 'HTTP 410: this endpoint is gone');
  },
};

const settled = (d: DeliveryView[]) =>
  d.length === 1 &&
  (d[0]?.status === 'succeeded' ||
    d[0]?.status === 'dead' ||
    (d[0]?.status === 'failed' && d[0].attempt >= 3));

// Lags of another organization's deliveries made while the misbehaving ones were in flight.
const lags: number[] = [];

test('each misbehaving receiver ends in its documented state within its time-out', async (ctx) => {
  const bad = await webhookTenant(svc);
  const good = await webhookTenant(svc);
  const hooks = new Map<string, string>();
  for (const name of Object.keys(EXPECTED)) {
    const url = name === 'untrusted' ? untrusted.url('/in') : receiver.url(name);
    hooks.set(name, (await createWebhook(svc, bad, url, ['booking.created'])).id);
  }
  const healthy = await createWebhook(svc, good, other.url('/healthy'), ['booking.created']);

  await putBooking(svc, bad.organization.id);
  // While the hanging and trickling attempts hold their connections, another organization's
  // deliveries arrive well within one time-out.
  await arrivalsAt(receiver, '/hang', 1);
  await arrivalsAt(receiver, '/trickle', 1);
  lags.length = 0;
  for (let i = 1; i <= 3; i++) {
    const sent = Date.now();
    await putBooking(svc, good.organization.id);
    const [arrival] = (await arrivalsAt(other, '/healthy', i)).slice(-1);
    lags.push((arrival?.receivedAt ?? Number.POSITIVE_INFINITY) - sent);
  }
  ctx.diagnostic(`another organization's deliveries meanwhile: ${lags.join(', ')} ms`);

  for (const [name, id] of hooks) {
    const [d] = await deliveriesUntil(svc, bad, id, settled, 15_000);
    assert.ok(d, name);
    EXPECTED[name]?.(d);
    assert.ok(d.last_duration_ms <= TIMEOUT_MS + 500, `${name}: ${d.last_duration_ms} ms`);
  }
  // Redirects are not followed; the untrusted receiver never saw a request; the 410 was asked 3 times.
  assert.equal(requestsTo(receiver, '/elsewhere').length, 0);
  assert.equal(untrusted.requests.length, 0);
  assert.equal(requestsTo(receiver, '/gone').length, 3);
  const [healthyDelivery] = await deliveriesUntil(svc, good, healthy.id, (d) => d.length === 3);
  assert.equal(healthyDelivery?.status, 'succeeded');
});

test('another organization’s deliveries stay on time meanwhile', () => {
  // Within one attempt time-out: never queued behind the receivers that hold their connections.
  assert.equal(lags.length, 3);
  assert.ok(Math.max(...lags) < TIMEOUT_MS, `healthy deliveries took ${lags.join(', ')} ms`);
});

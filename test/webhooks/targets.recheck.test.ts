// The destination is judged again at every attempt, on the addresses the attempt connects to
// (DNS rebinding). The service allows only 127.0.0.1 and ::1 among private addresses
// (SVC_WEBHOOK_ALLOWED_PRIVATE_RANGES), so the test receiver is reachable while everything else
// private is refused. A name that resolved to 127.0.0.1 when the webhook was saved and resolves to
// 127.0.0.2 at the attempt, where an internal service listens, must fail as a refused destination
// without a single connection to that service. Without the check at the attempt it would be reached.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { after, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { createTargetResolver } from '../../src/security/resolver.js';
import { startDnsServer } from '../support/dns-server.js';
import { putBooking } from '../support/feed.js';
import {
  arrivalsAt,
  createWebhook,
  deliveriesUntil,
  webhookHarness,
  webhookTenant,
} from '../support/webhooks.js';

const dns = await startDnsServer();
after(() => dns.close());

// The internal service: plain TCP on another loopback address; it only counts who connects.
let connections = 0;
const internal = createServer((socket) => {
  connections++;
  socket.destroy();
});
await new Promise<void>((resolve) => internal.listen(0, '127.0.0.2', resolve));
after(() => new Promise<void>((resolve) => internal.close(() => resolve())));
const internalPort = (internal.address() as AddressInfo).port;

const ENV = {
  SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false',
  SVC_WEBHOOK_ALLOWED_PRIVATE_RANGES: '127.0.0.1,::1',
  SVC_WEBHOOK_DNS_TIMEOUT_MS: '1000',
};
const resolver = createTargetResolver({
  servers: [dns.server],
  timeoutMs: loadConfig(ENV).webhooks.dnsTimeoutMs,
});
const { svc, receiver } = await webhookHarness(ENV, resolver);

test('a name rebound to a private address after it was vetted is refused at the attempt', async () => {
  const t = await webhookTenant(svc);
  // TTL 0: nothing cached, so the attempt asks DNS again (a cache would only delay the rebinding).
  dns.set('rebind.example.test', { a: ['127.0.0.1'], ttl: 0 });
  const rebound = await createWebhook(svc, t, `https://rebind.example.test:${internalPort}/in`, [
    'booking.created',
  ]);
  // The control: the receiver on localhost is allowed and reached by the same worker.
  const control = await createWebhook(svc, t, receiver.url('/control'), ['booking.created']);
  // And 127.0.0.2 itself is refused when asked directly.
  const direct = await svc.call('POST', '/webhooks', {
    key: t.key,
    body: { url: `https://127.0.0.2:${internalPort}/in`, events: ['*'] },
  });
  assert.equal(direct.status, 400, direct.text);

  dns.set('rebind.example.test', { a: ['127.0.0.2'], ttl: 0 });
  await putBooking(svc, t.organization.id);

  await arrivalsAt(receiver, '/control', 1);
  const [d] = await deliveriesUntil(
    svc,
    t,
    rebound.id,
    (x) => (x[0]?.attempt ?? 0) >= 1 && x[0]?.status !== 'delivering',
  );
  assert.equal(d?.last_status, null);
  assert.equal(
    d?.last_error,
    'destino no permitido: la dirección 127.0.0.2 (de rebind.example.test) no es pública.',
  );
  assert.equal(connections, 0, 'the internal service was never connected to');
  // The arrival is seen before its outcome is written (outcomes are written in batches).
  const controlled = await deliveriesUntil(svc, t, control.id, (x) => x[0]?.status !== 'delivering');
  assert.equal(controlled[0]?.status, 'succeeded');
});

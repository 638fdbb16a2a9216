// Hostile webhook destinations, with production's policy (no private targets) and real DNS on
// loopback: every spelling of a loopback, private, link-local or unspecified address, userinfo,
// ports other than 443, and names that do not resolve (or whose DNS never answers) are refused at
// POST and at PATCH with 400 validation_error and details {field: "url", reason}, and again at
// every attempt when such a url is already stored. A silent DNS does not hold libuv's thread pool.
import assert from 'node:assert/strict';
import { pbkdf2, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config.js';
import { createTargetResolver } from '../../src/security/resolver.js';
import type { TargetRefusal } from '../../src/security/url-guard.js';
import { assertError } from '../api/read-support.js';
import { serviceForFile } from '../support/context.js';
import { startDnsServer } from '../support/dns-server.js';
import { putBooking } from '../support/feed.js';
import { expectOk } from '../support/tenants.js';
import {
  type DeliveryView,
  deliveriesUntil,
  deliveryWorker,
  FAST_SCHEDULE,
  webhookTenant,
} from '../support/webhooks.js';

const DNS_TIMEOUT_MS = 800;
const ENV = {
  SVC_WEBHOOK_DNS_TIMEOUT_MS: String(DNS_TIMEOUT_MS),
  SVC_WEBHOOK_RETRY_SCHEDULE: FAST_SCHEDULE,
  SVC_WEBHOOK_TIMEOUT_MS: '1500',
  SVC_WEBHOOK_LEASE_SECONDS: '3',
};

const dns = await startDnsServer();
after(() => dns.close());
const PUBLIC = '93.184.215.14';
dns.set('hooks.example.test', { a: [PUBLIC] });
dns.set('internal.example.test', { a: ['10.1.2.3'] });
dns.set('metadata.example.test', { a: ['169.254.169.254'] });
dns.set('loopback.example.test', { a: ['127.0.0.1'] });
dns.set('mixed.example.test', { a: [PUBLIC, '192.168.1.10'] });
dns.set('ula.example.test', { aaaa: ['fd00::1'] });
dns.set('mapped.example.test', { aaaa: ['::ffff:127.0.0.1'] });
dns.set('nat64.example.test', { aaaa: ['64:ff9b::a9fe:a9fe'] });
dns.set('6to4.example.test', { aaaa: ['2002:7f00:1::1'] });
dns.set('teredo.example.test', { aaaa: ['2001:0:4136:e378:8000:63bf:3fff:fdd2'] });
dns.set('empty.example.test', {});
dns.silence('silent.example.test');

// The resolver the configuration asks for, pointed at the DNS above.
const resolver = createTargetResolver({
  servers: [dns.server],
  timeoutMs: loadConfig(ENV).webhooks.dnsTimeoutMs,
});
const svc = await serviceForFile(ENV, resolver);

const GOOD = 'https://hooks.example.test/in';

const HOSTILE: [string, TargetRefusal][] = [
  // Loopback, in every spelling the URL parser turns into 127.0.0.1 (decimal, octal, hex, short).
  ['https://127.0.0.1/', 'not_public'],
  ['https://2130706433/', 'not_public'],
  ['https://0177.0.0.1/', 'not_public'],
  ['https://017700000001/', 'not_public'],
  ['https://0x7f.1/', 'not_public'],
  ['https://0x7f000001/', 'not_public'],
  ['https://0x7F.0x0.0x0.0x1/', 'not_public'],
  ['https://127.1/', 'not_public'],
  ['https://127.0.1/', 'not_public'],
  ['https://127.255.255.254/', 'not_public'],
  ['https://127.0.0.1./', 'not_public'],
  ['https://localhost/', 'not_public'],
  ['https://LOCALHOST./', 'not_public'],
  ['https://api.localhost/', 'not_public'],
  // Unspecified.
  ['https://0.0.0.0/', 'not_public'],
  ['https://0/', 'not_public'],
  ['https://[::]/', 'not_public'],
  // Private, shared and link-local IPv4.
  ['https://10.0.0.1/', 'not_public'],
  ['https://10.1/', 'not_public'],
  ['https://012.0.0.1/', 'not_public'],
  ['https://0xa000001/', 'not_public'],
  ['https://172.16.0.1/', 'not_public'],
  ['https://172.31.255.255/', 'not_public'],
  ['https://192.168.0.1/', 'not_public'],
  ['https://3232235521/', 'not_public'],
  ['https://100.64.0.1/', 'not_public'],
  ['https://169.254.169.254/latest/meta-data/', 'not_public'],
  ['https://0xa9.0xfe.0xa9.0xfe/', 'not_public'],
  ['https://2852039166/', 'not_public'],
  // IPv6: loopback, IPv4-compatible, IPv4-mapped, NAT64, 6to4, Teredo, ULA, link-local, site-local, multicast.
  ['https://[::1]/', 'not_public'],
  ['https://[0:0:0:0:0:0:0:1]/', 'not_public'],
  ['https://[::127.0.0.1]/', 'not_public'],
  ['https://[::ffff:127.0.0.1]/', 'not_public'],
  ['https://[::ffff:7f00:1]/', 'not_public'],
  ['https://[0:0:0:0:0:ffff:a9fe:a9fe]/', 'not_public'],
  ['https://[::ffff:10.0.0.1]/', 'not_public'],
  ['https://[64:ff9b::127.0.0.1]/', 'not_public'],
  ['https://[64:ff9b::a00:1]/', 'not_public'],
  ['https://[64:ff9b::a9fe:a9fe]/', 'not_public'],
  ['https://[2002:7f00:1::]/', 'not_public'],
  ['https://[2002:a9fe:a9fe::1]/', 'not_public'],
  ['https://[2002:c0a8:1::1]/', 'not_public'],
  ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'not_public'],
  ['https://[2001::1]/', 'not_public'],
  ['https://[fc00::1]/', 'not_public'],
  ['https://[fd12:3456::1]/', 'not_public'],
  ['https://[fe80::1]/', 'not_public'],
  ['https://[fec0::1]/', 'not_public'],
  ['https://[ff02::1]/', 'not_public'],
  // Names that resolve to such addresses (all of a name's addresses must be public).
  ['https://internal.example.test/', 'not_public'],
  ['https://metadata.example.test/', 'not_public'],
  ['https://loopback.example.test/', 'not_public'],
  ['https://mixed.example.test/', 'not_public'],
  ['https://ula.example.test/', 'not_public'],
  ['https://mapped.example.test/', 'not_public'],
  ['https://nat64.example.test/', 'not_public'],
  ['https://6to4.example.test/', 'not_public'],
  ['https://teredo.example.test/', 'not_public'],
  // Userinfo, including the form that hides the real host after the @.
  ['https://user@hooks.example.test/', 'credentials'],
  ['https://user:pw@hooks.example.test/', 'credentials'],
  ['https://:pw@hooks.example.test/', 'credentials'],
  ['https://hooks.example.test@127.0.0.1/', 'credentials'],
  ['https://hooks.example.test%40evil@hooks.example.test/', 'credentials'],
  // Ports other than 443.
  ['https://hooks.example.test:8443/', 'port'],
  ['https://hooks.example.test:80/', 'port'],
  ['https://hooks.example.test:1/', 'port'],
  ['https://hooks.example.test:65535/', 'port'],
  ['https://93.184.215.14:444/', 'port'],
  // Names that do not resolve, resolve to nothing, or whose DNS never answers.
  ['https://nowhere.example.test/', 'unresolvable'],
  ['https://empty.example.test/', 'unresolvable'],
  ['https://silent.example.test/', 'dns_timeout'],
];

describe('hostile destinations at POST and PATCH', () => {
  test('every one is refused with 400 validation_error and details naming the rule', async () => {
    assert.ok(HOSTILE.length >= 70);
    const t = await webhookTenant(svc);
    const hook = await expectOk(
      await svc.call('POST', '/webhooks', { key: t.key, body: { url: GOOD, events: ['*'] } }),
      201,
    );
    for (const [url, reason] of HOSTILE) {
      const posted = await svc.call('POST', '/webhooks', { key: t.key, body: { url, events: ['*'] } });
      assertError(posted, 400, 'validation_error', { field: 'url', reason });
      const patched = await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { url } });
      assertError(patched, 400, 'validation_error', { field: 'url', reason });
    }
    const list = await expectOk(await svc.call('GET', '/webhooks', { key: t.key }));
    assert.deepEqual(
      list.data.map((w: { url: string }) => w.url),
      [GOOD],
      'nothing created, nothing changed',
    );
  });

  test('a public name on 443 is accepted, so the refusals above are the rules at work', async () => {
    const t = await webhookTenant(svc);
    const created = await svc.call('POST', '/webhooks', {
      key: t.key,
      body: { url: 'https://HOOKS.example.test:443/x', events: ['*'] },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.url, 'https://hooks.example.test/x');
  });
});

describe('a DNS that never answers', () => {
  test('POST /webhooks answers 400 dns_timeout within the time limit', async () => {
    const t = await webhookTenant(svc);
    dns.silence('never.example.test');
    const started = performance.now();
    const res = await svc.call('POST', '/webhooks', {
      key: t.key,
      body: { url: 'https://never.example.test/in', events: ['*'] },
    });
    const took = performance.now() - started;
    assertError(res, 400, 'validation_error', { field: 'url', reason: 'dns_timeout' });
    assert.match(res.body.error.message, /never\.example\.test no resolvió a tiempo/);
    // c-ares may give up on its own a little before the budget (its two tries share it): the rule is
    // an answer within the limit, and the reason above proves it was a time-out, not a refusal.
    assert.ok(took >= DNS_TIMEOUT_MS / 2 && took < DNS_TIMEOUT_MS + 1_000, `${Math.round(took)} ms`);
  });

  test('eight hanging lookups do not hold libuv’s thread pool', async (ctx) => {
    const t = await webhookTenant(svc);
    const derive = async () => {
      const started = performance.now();
      await promisify(pbkdf2)('password', 'salt', 20_000, 32, 'sha256');
      return performance.now() - started;
    };
    let answered = 0;
    const hanging = Array.from({ length: 8 }, (_, i) => {
      dns.silence(`hang-${i}.example.test`);
      return svc
        .call('POST', '/webhooks', {
          key: t.key,
          body: { url: `https://hang-${i}.example.test/in`, events: ['*'] },
        })
        .finally(() => answered++);
    });
    // Four at once fill the pool's four threads: lookups holding threads would queue them all
    // behind the DNS time-out. They end while every lookup still hangs.
    const during = Math.max(...(await Promise.all([derive(), derive(), derive(), derive()])));
    assert.equal(answered, 0, 'pbkdf2 finished before any lookup gave up');
    const answers = await Promise.all(hanging);
    for (const res of answers) {
      assertError(res, 400, 'validation_error', { field: 'url', reason: 'dns_timeout' });
    }
    ctx.diagnostic(`4 × pbkdf2 during 8 hanging lookups: ${Math.round(during)} ms`);
  });
});

describe('stored hostile destinations are refused again at every attempt', () => {
  test('each attempt fails as a refused destination, never reaching the network', async () => {
    const worker = await deliveryWorker(svc);
    try {
      const t = await webhookTenant(svc);
      // Rows as a webhook saved before its address changed (the API refuses them today).
      const urls = new Map<string, string>();
      for (const [url] of HOSTILE) {
        const id = randomUUID();
        urls.set(id, url);
        await svc.db.query(
          `INSERT INTO webhooks (id, integration_id, organization_id, url, events, secret)
           VALUES ($1, $2, $3, $4, '{*}', $5)`,
          [id, t.integration.id, t.organization.id, url, svc.deps.secrets.seal('whsec_x', id)],
        );
      }
      await putBooking(svc, t.organization.id);
      for (const [id, url] of urls) {
        const [d] = await deliveriesUntil(
          svc,
          t,
          id,
          (x: DeliveryView[]) => (x[0]?.attempt ?? 0) >= 1 && x[0]?.status !== 'delivering',
        );
        assert.ok(d?.status === 'failed' || d?.status === 'dead', `${url}: ${d?.status}`);
        assert.equal(d?.last_status, null, url);
        assert.match(d?.last_error ?? '', /^destino no permitido: /, `${url}: ${d?.last_error}`);
      }
    } finally {
      await worker.stop(100);
    }
  });
});

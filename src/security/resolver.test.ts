import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { type DnsServer, startDnsServer } from '../../test/support/dns-server.js';
import { createTargetResolver, type TargetResolverOptions } from './resolver.js';

let dns: DnsServer;
let silent: DnsServer;
let clock = 0;

before(async () => {
  dns = await startDnsServer();
  silent = await startDnsServer({ silentByDefault: true });
});
after(async () => {
  await dns.close();
  await silent.close();
});
beforeEach(() => {
  dns.queries.length = 0;
  clock = 1_000_000;
});

function resolver(overrides: Partial<TargetResolverOptions> = {}) {
  return createTargetResolver({ servers: [dns.server], timeoutMs: 1_000, now: () => clock, ...overrides });
}

async function code(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code;
  }
  assert.fail('the lookup should have failed');
}

test('A and AAAA records, IPv4 first', async () => {
  dns.set('both.test', { a: ['93.184.215.14', '93.184.215.15'], aaaa: ['2606:4700::1111'] });
  assert.deepEqual(await resolver()('both.test'), [
    { address: '93.184.215.14', family: 4 },
    { address: '93.184.215.15', family: 4 },
    { address: '2606:4700::1111', family: 6 },
  ]);
  dns.set('v6only.test', { aaaa: ['2606:4700::1111'] });
  assert.deepEqual(await resolver()('V6ONLY.test.'), [{ address: '2606:4700::1111', family: 6 }]);
});

test('an answer is reused for its TTL, never longer than the cap', async () => {
  const resolve = resolver({ maxTtlMs: 60_000 });
  dns.set('short.test', { a: ['93.184.215.14'], ttl: 10 });
  dns.set('long.test', { a: ['93.184.215.14'], ttl: 3600 });
  await resolve('short.test');
  await resolve('long.test');
  assert.equal(dns.queries.length, 4, 'A and AAAA for each name');
  clock += 9_000;
  await resolve('short.test');
  assert.equal(dns.queries.length, 4, 'within the TTL: from the cache');
  clock += 2_000;
  dns.set('short.test', { a: ['93.184.215.99'], ttl: 10 });
  assert.deepEqual(await resolve('short.test'), [{ address: '93.184.215.99', family: 4 }]);
  assert.equal(dns.queries.length, 6, 'past the TTL: asked again');
  clock += 50_000;
  await resolve('long.test');
  assert.equal(dns.queries.length, 8, 'an hour of TTL is cut to the 60 s cap');
});

test('a name that does not exist is remembered briefly', async () => {
  const resolve = resolver({ negativeTtlMs: 5_000 });
  assert.equal(await code(resolve('missing.test')), 'ENOTFOUND');
  assert.equal(await code(resolve('missing.test')), 'ENOTFOUND');
  assert.equal(dns.queries.length, 2, 'the second failure came from the cache');
  clock += 5_001;
  dns.set('missing.test', { a: ['93.184.215.14'] });
  assert.deepEqual(await resolve('missing.test'), [{ address: '93.184.215.14', family: 4 }]);
});

test('a name with no address of either family resolves to nothing, as an error', async () => {
  dns.set('empty.test', {});
  assert.match((await code(resolver()('empty.test'))) ?? '', /^(ENODATA|ENOTFOUND)$/);
});

test('lookups of one name in flight share one query', async () => {
  dns.set('shared.test', { a: ['93.184.215.14'] });
  const resolve = resolver();
  const answers = await Promise.all(Array.from({ length: 20 }, () => resolve('shared.test')));
  assert.equal(new Set(answers.map((a) => JSON.stringify(a))).size, 1);
  assert.equal(dns.queries.filter((q) => q.type === 'A').length, 1);
});

test('a DNS that never answers is a time-out within the limit, and the time-out is remembered briefly', async () => {
  const resolve = createTargetResolver({ servers: [silent.server], timeoutMs: 300, now: () => clock });
  const started = performance.now();
  assert.equal(await code(resolve('hang.test')), 'ETIMEOUT');
  const took = performance.now() - started;
  assert.ok(took >= 290 && took < 800, `${took} ms`);
  const asked = silent.queries.length;
  assert.equal(await code(resolve('hang.test')), 'ETIMEOUT');
  assert.equal(silent.queries.length, asked, 'not asked again at once');
});

test('localhost and its sub-names are loopback without asking DNS', async () => {
  const resolve = resolver();
  for (const name of ['localhost', 'LOCALHOST.', 'api.localhost']) {
    assert.deepEqual(await resolve(name), [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
  }
  assert.equal(dns.queries.length, 0);
});

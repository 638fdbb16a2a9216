import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type Address,
  checkTargetSyntax,
  isPublicAddress,
  type Resolver,
  type TargetRefusal,
  TargetRefused,
  vetTarget,
} from './url-guard.js';

const strict = { allowPrivateTargets: false };
const lax = { allowPrivateTargets: true };
const answers =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address): Address => ({ address, family: address.includes(':') ? 6 : 4 }));
const publicResolver = answers('93.184.215.14');
const failing: Resolver = async () => {
  throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
};

async function refusal(raw: string, resolve: Resolver = publicResolver, policy = strict) {
  try {
    await vetTarget(raw, policy, resolve);
  } catch (error) {
    assert.ok(error instanceof TargetRefused, `${raw}: ${String(error)}`);
    return error;
  }
  assert.fail(`${raw} should have been refused`);
}

const hostile: [string, TargetRefusal][] = [
  [`https://example.com/${'a'.repeat(481)}`, 'too_long'],
  ['not a url', 'invalid'],
  ['https://exa mple.com/', 'invalid'],
  [' https://example.com/', 'invalid'],
  ['https://example.com/\n', 'invalid'],
  ['https://example.com/a\tb', 'invalid'],
  ['https://', 'invalid'],
  ['https://[::1/', 'invalid'],
  ['https://1.2.3.4.5/', 'invalid'],
  ['http://example.com/hook', 'not_https'],
  ['ftp://example.com/', 'not_https'],
  ['file:///etc/passwd', 'not_https'],
  ['javascript:alert(1)', 'not_https'],
  ['wss://example.com/', 'not_https'],
  ['https://example.com:8443/hook', 'port'],
  ['https://example.com:80/', 'port'],
  ['https://user:pass@example.com/', 'credentials'],
  ['https://user@example.com/', 'credentials'],
  ['https://:pass@example.com/', 'credentials'],
  // IPv4 literals, including the forms the URL parser normalises.
  ['https://127.0.0.1/', 'not_public'],
  ['https://0x7f.1/', 'not_public'],
  ['https://2130706433/', 'not_public'],
  ['https://127.1/', 'not_public'],
  ['https://0177.0.0.1/', 'not_public'],
  ['https://127.0.0.1./', 'not_public'],
  ['https://0.0.0.0/', 'not_public'],
  ['https://0/', 'not_public'],
  ['https://10.0.0.1/', 'not_public'],
  ['https://100.64.0.1/', 'not_public'],
  ['https://100.127.255.254/', 'not_public'],
  ['https://169.254.169.254/latest/meta-data/', 'not_public'],
  ['https://172.16.0.1/', 'not_public'],
  ['https://172.31.255.255/', 'not_public'],
  ['https://192.0.0.1/', 'not_public'],
  ['https://192.0.2.1/', 'not_public'],
  ['https://192.88.99.1/', 'not_public'],
  ['https://192.168.1.1/', 'not_public'],
  ['https://198.18.0.1/', 'not_public'],
  ['https://198.19.255.1/', 'not_public'],
  ['https://198.51.100.7/', 'not_public'],
  ['https://203.0.113.9/', 'not_public'],
  ['https://224.0.0.1/', 'not_public'],
  ['https://239.255.255.250/', 'not_public'],
  ['https://240.0.0.1/', 'not_public'],
  ['https://255.255.255.255/', 'not_public'],
  // IPv6 literals.
  ['https://[::]/', 'not_public'],
  ['https://[::1]/', 'not_public'],
  ['https://[0:0:0:0:0:0:0:1]/', 'not_public'],
  ['https://[::ffff:7f00:1]/', 'not_public'],
  ['https://[0:0:0:0:0:ffff:127.0.0.1]/', 'not_public'],
  ['https://[::ffff:169.254.169.254]/', 'not_public'],
  ['https://[::ffff:10.0.0.1]/', 'not_public'],
  ['https://[::127.0.0.1]/', 'not_public'],
  ['https://[::8.8.8.8]/', 'not_public'],
  ['https://[64:ff9b::127.0.0.1]/', 'not_public'],
  ['https://[64:ff9b::a9fe:a9fe]/', 'not_public'],
  ['https://[64:ff9b:1::1]/', 'not_public'],
  ['https://[100::1]/', 'not_public'],
  ['https://[2001::1]/', 'not_public'],
  ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'not_public'],
  ['https://[2001:10::1]/', 'not_public'],
  ['https://[2001:db8::1]/', 'not_public'],
  ['https://[2002:7f00:1::]/', 'not_public'],
  ['https://[2002:a9fe:a9fe::1]/', 'not_public'],
  ['https://[fc00::1]/', 'not_public'],
  ['https://[fd12:3456:789a::1]/', 'not_public'],
  ['https://[fe80::1]/', 'not_public'],
  ['https://[febf::1]/', 'not_public'],
  ['https://[fec0::1]/', 'not_public'],
  ['https://[ff02::1]/', 'not_public'],
];

test('hostile urls are refused with the right reason and a Spanish message', async () => {
  for (const [raw, reason] of hostile) {
    const error = await refusal(raw);
    assert.equal(error.reason, reason, `${raw}: ${error.message}`);
    assert.match(error.message, /^[A-ZÁÉÍÓÚ].*\.$/, `${raw}: ${error.message}`);
  }
});

test('messages name the problem', async () => {
  assert.equal((await refusal('http://example.com/')).message, 'La url debe usar https://.');
  assert.equal((await refusal('https://10.0.0.1/')).message, 'La dirección 10.0.0.1 no es pública.');
  assert.equal((await refusal('https://0x7f.1/')).message, 'La dirección 127.0.0.1 no es pública.');
  assert.equal(
    (await refusal('https://intranet.example/', answers('10.1.2.3'))).message,
    'La dirección 10.1.2.3 (de intranet.example) no es pública.',
  );
  assert.equal((await refusal('https://example.com:8443/')).message, 'La url debe usar el puerto 443.');
});

test('good urls pass with the addresses that were vetted', async () => {
  const named = await vetTarget('https://example.com/hook', strict, publicResolver);
  assert.equal(named.url.href, 'https://example.com/hook');
  assert.deepEqual(named.addresses, [{ address: '93.184.215.14', family: 4 }]);

  const v6 = await vetTarget('https://[2606:4700::1111]/x', strict, failing);
  assert.deepEqual(v6.addresses, [{ address: '2606:4700::1111', family: 6 }]);

  const v4 = await vetTarget('https://1.1.1.1/', strict, failing);
  assert.deepEqual(v4.addresses, [{ address: '1.1.1.1', family: 4 }]);

  // An explicit :443, a query and a fragment are fine; 500 characters exactly is the limit.
  await vetTarget('https://example.com:443/hook?x=1#y', strict, publicResolver);
  await vetTarget(`https://example.com/${'a'.repeat(480)}`, strict, publicResolver);
  await vetTarget('https://both.example/', strict, answers('2606:4700::1111', '1.1.1.1'));
});

test('IP literals are judged without asking the resolver', async () => {
  let calls = 0;
  const counting: Resolver = async (host) => {
    calls++;
    return publicResolver(host);
  };
  await refusal('https://127.0.0.1/', counting);
  await vetTarget('https://[2606:4700::1111]/', strict, counting);
  assert.equal(calls, 0);
});

test('every resolved address must be public', async () => {
  assert.equal(
    (await refusal('https://mixed.example/', answers('1.1.1.1', '10.0.0.7'))).reason,
    'not_public',
  );
  assert.equal(
    (await refusal('https://mixed.example/', answers('2606:4700::1111', '::1'))).reason,
    'not_public',
  );
  assert.equal((await refusal('https://rebind.example/', answers('169.254.169.254'))).reason, 'not_public');
});

test('a name that does not resolve, or resolves to nothing, is unresolvable', async () => {
  const notFound = await refusal('https://nowhere.invalid/', failing);
  assert.equal(notFound.reason, 'unresolvable');
  assert.equal(notFound.message, 'No se pudo resolver el host nowhere.invalid (ENOTFOUND).');
  assert.equal((await refusal('https://empty.example/', answers())).reason, 'unresolvable');
  assert.equal((await refusal('https://empty.example/', answers(), lax)).reason, 'unresolvable');
});

test('allowPrivateTargets admits private addresses and any port, but still only https without credentials', async () => {
  const local = await vetTarget('https://localhost:8443/hook', lax, answers('127.0.0.1'));
  assert.deepEqual(local.addresses, [{ address: '127.0.0.1', family: 4 }]);
  await vetTarget('https://10.0.0.1/', lax);
  await vetTarget('https://[::1]:9000/', lax);
  assert.equal((await refusal('http://localhost/', publicResolver, lax)).reason, 'not_https');
  assert.equal((await refusal('https://u:p@localhost/', publicResolver, lax)).reason, 'credentials');
});

test('checkTargetSyntax does no DNS and returns the parsed url', () => {
  const url = checkTargetSyntax('HTTPS://Example.COM:443/Hook', strict);
  assert.equal(url.href, 'https://example.com/Hook');
  assert.throws(() => checkTargetSyntax('https://example.com:444/', strict), { reason: 'port' });
  assert.equal(checkTargetSyntax('https://example.com:444/', lax).port, '444');
});

test('isPublicAddress', () => {
  const publicOnes = [
    '1.1.1.1',
    '8.8.8.8',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.169.0.1',
    '223.255.255.255',
    '2606:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '[2606:4700::1111]',
  ];
  const notPublic = [
    '127.0.0.1',
    '10.255.255.255',
    '169.254.169.254',
    '::1',
    '::',
    '::ffff:127.0.0.1',
    '::ffff:0.0.0.0',
    'fe80::1%eth0',
    '4000::1', // outside 2000::/3: not assigned as global unicast
    '3fff::1',
    'example.com',
    '',
    '1.2.3',
  ];
  for (const a of publicOnes) assert.equal(isPublicAddress(a), true, a);
  for (const a of notPublic) assert.equal(isPublicAddress(a), false, a);
});

test('allowedPrivateRanges admits those ranges on any port, and nothing else', async () => {
  const ranges = {
    allowPrivateTargets: false,
    allowedPrivateRanges: ['127.0.0.1', '10.1.0.0/16', 'fd00::/8'],
  };
  assert.deepEqual((await vetTarget('https://127.0.0.1:8443/', ranges)).addresses, [
    { address: '127.0.0.1', family: 4 },
  ]);
  await vetTarget('https://internal.example:9000/', ranges, answers('10.1.2.3', 'fd00::5'));
  assert.equal((await refusal('https://127.0.0.2:8443/', undefined, ranges)).reason, 'not_public');
  assert.equal((await refusal('https://10.2.0.1/', undefined, ranges)).reason, 'not_public');
  assert.equal(
    (await refusal('https://mixed.example/', answers('10.1.2.3', '192.168.0.1'), ranges)).reason,
    'not_public',
  );
  // Public addresses keep the port rule.
  assert.equal((await refusal('https://example.com:8443/', publicResolver, ranges)).reason, 'port');
  await vetTarget('https://example.com/', ranges, publicResolver);
});

test('a name whose DNS does not answer in time is refused as such', async () => {
  const silent: Resolver = async () => {
    throw Object.assign(new Error('DNS lookup of slow.example did not answer within 300 ms'), {
      code: 'ETIMEOUT',
    });
  };
  const error = await refusal('https://slow.example/', silent);
  assert.equal(error.reason, 'dns_timeout');
  assert.equal(error.message, 'El host slow.example no resolvió a tiempo: su DNS no respondió.');
});

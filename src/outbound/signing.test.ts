import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { signatureHeaders, signingKey, standardKeyBytes, standardSignature } from './signing.js';

test("Standard Webhooks: the specification's example signs as its libraries do", () => {
  // The example message of the specification's libraries, with its published signature.
  const key = signingKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
  assert.equal(
    standardSignature(key.standard, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}'),
    'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  );
});

test('the Standard Webhooks key is the base64 after whsec_, in either alphabet', () => {
  const bytes = randomBytes(32);
  assert.deepEqual(standardKeyBytes(`whsec_${bytes.toString('base64')}`), bytes);
  assert.deepEqual(standardKeyBytes(`whsec_${bytes.toString('base64url')}`), bytes, 'a secret issued before');
});

test('both header sets: the same timestamp, newest secret first, the schemes own separators', () => {
  const [a, b] = [
    'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
    'whsec_/////////////////////////////////////////w=',
  ];
  const body = Buffer.from('{"id":"e1"}');
  const h = signatureHeaders([signingKey(a), signingKey(b)], { id: 'e1', timestamp: 1700000000, body });
  const hex = (secret: string) =>
    createHmac('sha256', secret).update('1700000000.').update(body).digest('hex');
  assert.deepEqual(h.contract, {
    'x-svc-timestamp': '1700000000',
    'x-svc-signature': `v1=${hex(a)},v1=${hex(b)}`,
  });
  const b64 = (secret: string) =>
    createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
      .update('e1.1700000000.')
      .update(body)
      .digest('base64');
  assert.deepEqual(h.standard, {
    'webhook-id': 'e1',
    'webhook-timestamp': '1700000000',
    'webhook-signature': `v1,${b64(a)} v1,${b64(b)}`,
  });
});

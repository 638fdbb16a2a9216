import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deriveKey, generateWebhookSecret, openSecret, sealSecret } from './secrets.js';

const key = deriveKey(Buffer.alloc(32, 1), 'webhook-secrets');

test('a webhook secret is whsec_ and 32 random bytes in padded standard base64', () => {
  const a = generateWebhookSecret();
  assert.match(a, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.equal(Buffer.from(a.slice('whsec_'.length), 'base64').length, 32);
  assert.notEqual(a, generateWebhookSecret());
});

test('a sealed secret opens with the same key and context only', () => {
  const secret = generateWebhookSecret();
  const sealed = sealSecret(key, secret, 'webhook-1');
  assert.ok(!sealed.includes(Buffer.from(secret)), 'no plaintext at rest');
  assert.notDeepEqual(sealed, sealSecret(key, secret, 'webhook-1'), 'a fresh nonce each time');
  assert.equal(openSecret(key, sealed, 'webhook-1'), secret);
  assert.throws(() => openSecret(key, sealed, 'webhook-2'), 'copied onto another webhook');
  assert.throws(() => openSecret(deriveKey(Buffer.alloc(32, 2), 'webhook-secrets'), sealed, 'webhook-1'));
  const tampered = Buffer.from(sealed);
  tampered[tampered.length - 1] = (tampered[tampered.length - 1] as number) ^ 1;
  assert.throws(() => openSecret(key, tampered, 'webhook-1'));
});

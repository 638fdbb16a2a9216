import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import {
  createSecretBox,
  deriveKey,
  generateWebhookSecret,
  masterKeyId,
  openSecret,
  SealedSecretError,
  sealedKeyId,
  sealSecret,
} from './secrets.js';

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

const OLD = Buffer.alloc(32, 1);
const NEW = Buffer.alloc(32, 2);

test('a master key id is the first 8 hex characters of the SHA-256 of its bytes', () => {
  assert.equal(masterKeyId(OLD), createHash('sha256').update(OLD).digest('hex').slice(0, 8));
  assert.match(masterKeyId(NEW), /^[0-9a-f]{8}$/);
  assert.notEqual(masterKeyId(OLD), masterKeyId(NEW));
});

test('a box seals under its current key, naming it, and opens under any key of its ring', () => {
  const before = createSecretBox(OLD);
  const during = createSecretBox(NEW, [OLD]);
  const after = createSecretBox(NEW);
  const sealedBefore = before.seal('whsec_a', 'webhook-1');
  assert.equal(sealedKeyId(sealedBefore), masterKeyId(OLD));
  assert.ok(sealedBefore.subarray(0, before.header.length).equals(before.header));
  assert.equal(during.open(sealedBefore, 'webhook-1'), 'whsec_a');
  const sealedDuring = during.seal('whsec_b', 'webhook-1');
  assert.equal(sealedKeyId(sealedDuring), masterKeyId(NEW));
  assert.equal(after.open(sealedDuring, 'webhook-1'), 'whsec_b');
  assert.equal(before.keyId, masterKeyId(OLD));
  assert.deepEqual(during.fallbackKeyIds, [masterKeyId(OLD)]);
  assert.throws(
    () => after.open(sealedBefore, 'webhook-1'),
    (error: unknown) => error instanceof SealedSecretError && error.keyId === masterKeyId(OLD),
  );
  assert.throws(() => during.open(sealedBefore, 'webhook-2'), SealedSecretError, 'bound to its webhook');
});

test('a secret sealed in the format without a key id opens under whichever key of the ring sealed it', () => {
  const legacy = sealSecret(deriveKey(OLD, 'webhook-secrets'), 'whsec_legacy', 'webhook-1');
  assert.equal(sealedKeyId(legacy), null);
  assert.equal(createSecretBox(OLD).open(legacy, 'webhook-1'), 'whsec_legacy');
  assert.equal(createSecretBox(NEW, [OLD]).open(legacy, 'webhook-1'), 'whsec_legacy');
  assert.throws(
    () => createSecretBox(NEW).open(legacy, 'webhook-1'),
    (error: unknown) => error instanceof SealedSecretError && error.keyId === null,
  );
});

test('a key given twice, or as a plain Uint8Array (from a thread), is the same ring', () => {
  const box = createSecretBox(new Uint8Array(NEW), [NEW, new Uint8Array(OLD), OLD]);
  assert.equal(box.keyId, masterKeyId(NEW));
  assert.deepEqual(box.fallbackKeyIds, [masterKeyId(OLD)]);
});

// Key material: API key format and hashing, and subkeys derived from the master key.
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hash,
  hkdfSync,
  randomBytes,
  randomInt,
  timingSafeEqual,
} from 'node:crypto';
import type { Environment } from '../config.js';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const API_KEY_PATTERN = /^svc_(live|test)_[A-Za-z0-9]{40}$/;
const VISIBLE_SECRET_CHARS = 6;

export function randomAlphanumeric(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return out;
}

export interface NewApiKey {
  key: string;
  prefix: string;
  hash: Buffer;
}

export function generateApiKey(environment: Environment): NewApiKey {
  const key = `svc_${environment}_${randomAlphanumeric(40)}`;
  return { key, prefix: visiblePrefix(key), hash: hashApiKey(key) };
}

/** `svc_live_` plus the first characters of the secret: enough to recognise a key, not to use it. */
export function visiblePrefix(key: string): string {
  return key.slice(0, 'svc_live_'.length + VISIBLE_SECRET_CHARS);
}

/** Keys have 238 bits of entropy, so a plain SHA-256 is a safe and fast lookup hash. */
export function hashApiKey(key: string): Buffer {
  return Buffer.from(apiKeyDigest(key), 'base64');
}

/** The same SHA-256 as base64 text, from the one-shot hash (a quarter of the cost of a Hash object). */
export function apiKeyDigest(key: string): string {
  return hash('sha256', key, 'base64');
}

export function keyEnvironment(key: string): Environment | null {
  const m = API_KEY_PATTERN.exec(key);
  return m ? (m[1] as Environment) : null;
}

/** A subkey for one purpose (cursor signing, webhook secret encryption...) from the master key. */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), purpose, 32));
}

export function hmac(key: Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

export function safeEqual(a: Buffer | string, b: Buffer | string): boolean {
  const x = Buffer.isBuffer(a) ? a : Buffer.from(a);
  const y = Buffer.isBuffer(b) ? b : Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function newMasterKey(): Buffer {
  return randomBytes(32);
}

/**
 * A webhook signing secret: `whsec_` and 32 random bytes in base64 (256 bits). The standard
 * alphabet with its padding, because the Standard Webhooks libraries of every language decode the
 * part after `whsec_` with it (docs/decisions.md, "Standard Webhooks headers").
 */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM with a fresh nonce: nonce | tag | ciphertext. `context` (the webhook id) is bound as
 * additional data, so a ciphertext copied onto another row does not decrypt there.
 */
export function sealSecret(key: Buffer, plaintext: string, context: string): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([nonce, cipher.getAuthTag(), body]);
}

/** Throws when the data was altered, sealed under another key or for another context. */
export function openSecret(key: Buffer, sealed: Buffer, context: string): string {
  const nonce = sealed.subarray(0, NONCE_BYTES);
  const tag = sealed.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, nonce);
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(tag);
  return Buffer.concat([
    decipher.update(sealed.subarray(NONCE_BYTES + TAG_BYTES)),
    decipher.final(),
  ]).toString('utf8');
}

/** Seals and opens webhook secrets under a key derived from the master key for that purpose. */
export interface SecretBox {
  seal(plaintext: string, context: string): Buffer;
  open(sealed: Buffer, context: string): string;
}

export function createSecretBox(master: Buffer): SecretBox {
  const key = deriveKey(master, 'webhook-secrets');
  return {
    seal: (plaintext, context) => sealSecret(key, plaintext, context),
    open: (sealed, context) => openSecret(key, sealed, context),
  };
}

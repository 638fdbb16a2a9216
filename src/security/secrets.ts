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

/** A master key's id: the first 8 hex characters of the SHA-256 of its 32 bytes. Names it, reveals nothing. */
export function masterKeyId(master: Uint8Array): string {
  return hash('sha256', master, 'hex').slice(0, 8);
}

/**
 * The sealed format with a key id: `SVK1` | key id (4 bytes) | nonce | tag | ciphertext. The format
 * before it (nonce | tag | ciphertext) names no key; its first bytes are a random nonce, which
 * spells this magic once in 2^32 secrets, and even then the authentication tag decides.
 */
const MAGIC = Buffer.from('SVK1');
const HEADER_BYTES = MAGIC.length + 4;

function headerOf(id: string): Buffer {
  return Buffer.concat([MAGIC, Buffer.from(id, 'hex')]);
}

/** The key id a sealed secret names, or null for the format without one. */
export function sealedKeyId(sealed: Uint8Array): string | null {
  const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  if (bytes.length < HEADER_BYTES || !bytes.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  return bytes.subarray(MAGIC.length, HEADER_BYTES).toString('hex');
}

/** No configured master key opens a sealed secret; `keyId` is the key it names (null: it names none). */
export class SealedSecretError extends Error {
  constructor(readonly keyId: string | null) {
    super(
      keyId === null
        ? 'no configured master key opens this secret (sealed before key ids)'
        : `this secret is sealed under master key ${keyId}, which is not configured`,
    );
  }
}

/**
 * Seals webhook secrets under the current master key and opens them under any key of the ring
 * (the current one and the fallbacks), each through a subkey derived for that purpose.
 */
export interface SecretBox {
  seal(plaintext: string, context: string): Buffer;
  /** Throws SealedSecretError when no key of the ring opens it. */
  open(sealed: Buffer, context: string): string;
  /** The id of the key that seals. */
  readonly keyId: string;
  /** The ids of the keys that only open, in the order given. */
  readonly fallbackKeyIds: readonly string[];
  /** The first bytes of every secret this box seals: a stored secret without them awaits a re-seal. */
  readonly header: Buffer;
}

export function createSecretBox(master: Uint8Array, fallbacks: readonly Uint8Array[] = []): SecretBox {
  // Buffer.from: a key that crossed to a thread arrives as a plain Uint8Array.
  const ring = [master, ...fallbacks].map((k) => {
    const key = Buffer.from(k);
    return { id: masterKeyId(key), key: deriveKey(key, 'webhook-secrets') };
  });
  const ids = new Set<string>();
  const keys = ring.filter((k) => !ids.has(k.id) && ids.add(k.id));
  const current = keys[0] as (typeof keys)[number];
  const header = headerOf(current.id);

  const tryOpen = (key: Buffer, sealed: Buffer, context: string) => {
    try {
      return openSecret(key, sealed, context);
    } catch {
      return null;
    }
  };

  return {
    keyId: current.id,
    fallbackKeyIds: keys.slice(1).map((k) => k.id),
    header,
    seal: (plaintext, context) => Buffer.concat([header, sealSecret(current.key, plaintext, context)]),
    open(sealed, context) {
      const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
      const id = sealedKeyId(bytes);
      const named = id === null ? undefined : keys.find((k) => k.id === id);
      if (named) {
        const opened = tryOpen(named.key, bytes.subarray(HEADER_BYTES), context);
        if (opened !== null) return opened;
      }
      // The format without a key id: whichever key of the ring sealed it, the current one first.
      for (const { key } of keys) {
        const opened = tryOpen(key, bytes, context);
        if (opened !== null) return opened;
      }
      throw new SealedSecretError(id);
    },
  };
}

// Key material: API key format and hashing, and subkeys derived from the master key.
import { createHash, createHmac, hkdfSync, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
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
  return createHash('sha256').update(key).digest();
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

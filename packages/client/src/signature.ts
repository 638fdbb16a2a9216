// The two signatures of a webhook delivery, with one secret (docs/webhooks.md of the API):
//   X-SVC-Signature:   v1=<hex HMAC-SHA256(secret string, "{timestamp}.{raw body}")>
//   webhook-signature: v1,<base64 HMAC-SHA256(key, "{webhook-id}.{timestamp}.{raw body}")>, where
//                      key is the bytes the base64 after `whsec_` encodes (Standard Webhooks)
// verify.ts checks them; `listen` signs what it forwards with them.
import { createHmac } from 'node:crypto';

const PREFIX = 'whsec_';

/** The Standard Webhooks key of a secret; base64url secrets of before 2026-11-28 decode too. */
export function standardKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** The digest of `X-SVC-Signature`. */
export function contractDigest(secret: string, timestamp: string, body: Uint8Array): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
}

/** The digest of `webhook-signature`. */
export function standardDigest(secret: string, id: string, timestamp: string, body: Uint8Array): Buffer {
  return createHmac('sha256', standardKey(secret)).update(`${id}.${timestamp}.`).update(body).digest();
}

/** Both signed header sets of a body, as a delivery carries them. */
export function signatureHeaders(
  secret: string,
  id: string,
  timestamp: number,
  body: Uint8Array,
): Record<string, string> {
  const t = String(timestamp);
  return {
    'x-svc-timestamp': t,
    'x-svc-signature': `v1=${contractDigest(secret, t, body).toString('hex')}`,
    'webhook-id': id,
    'webhook-timestamp': t,
    'webhook-signature': `v1,${standardDigest(secret, id, t, body).toString('base64')}`,
  };
}

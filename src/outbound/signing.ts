// How a delivery is signed (docs/webhooks.md tells receivers how to verify). Two header sets, the
// same secret, on every delivery:
//   the contract's:      X-SVC-Timestamp: <unix seconds>
//                        X-SVC-Signature: v1=<hex HMAC-SHA256(key, "{timestamp}.{raw body}")>
//     keyed with the whole secret string as it was shown (whsec_ included); during a rotation
//     overlap the new signature first, then the previous one, separated by a comma.
//   Standard Webhooks': webhook-id: <event id>, webhook-timestamp: <the same unix seconds>
//                        webhook-signature: v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{raw body}")>
//     keyed with the bytes the text after whsec_ encodes in base64 (what the specification's
//     libraries derive from the secret as given); during an overlap the signatures are separated
//     by a space, the new one first.
// docs/decisions.md ("Standard Webhooks headers") says why the id is the event id.
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

const PREFIX = 'whsec_';

/**
 * The HMAC keys of a secret, one per scheme. A worker keeps them with the opened secret: keyed
 * with a string, every signature would first copy the string into a new key.
 */
export interface SigningKey {
  contract: KeyObject;
  standard: KeyObject;
}

/**
 * The Standard Webhooks key: the base64 after `whsec_` decoded. Node reads both alphabets, so the
 * base64url secrets issued before the standard alphabet sign the same bytes a converted copy of
 * them verifies with.
 */
export function standardKeyBytes(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

export const signingKey = (secret: string): SigningKey => ({
  contract: createSecretKey(Buffer.from(secret, 'utf8')),
  standard: createSecretKey(standardKeyBytes(secret)),
});

/** The contract's signature of a body (its exact bytes, or the string they encode as UTF-8). */
export function signature(key: string | KeyObject, timestamp: number, body: string | Buffer): string {
  return `v1=${createHmac('sha256', key).update(`${timestamp}.`).update(body).digest('hex')}`;
}

/** The Standard Webhooks signature of a message. */
export function standardSignature(
  key: KeyObject,
  id: string,
  timestamp: number,
  body: string | Buffer,
): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}

export interface SignedMessage {
  /** The event id: Standard Webhooks' idempotency key of the message. */
  id: string;
  /** Unix time in seconds. */
  timestamp: number;
  body: string | Buffer;
}

export interface SignatureHeaders {
  contract: { 'x-svc-timestamp': string; 'x-svc-signature': string };
  standard: { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string };
}

/** Both header sets of a delivery, for the keys in force, newest first. */
export function signatureHeaders(keys: readonly SigningKey[], message: SignedMessage): SignatureHeaders {
  const { id, timestamp, body } = message;
  return {
    contract: {
      'x-svc-timestamp': String(timestamp),
      'x-svc-signature': keys.map((k) => signature(k.contract, timestamp, body)).join(','),
    },
    standard: {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': keys.map((k) => standardSignature(k.standard, id, timestamp, body)).join(' '),
    },
  };
}

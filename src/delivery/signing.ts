// How a delivery is signed (docs/webhooks.md tells receivers how to verify):
//   X-SVC-Signature: v1=<hex HMAC-SHA256(secret, "{X-SVC-Timestamp}.{raw body}")>
// keyed with the whole secret string as it was shown (whsec_ included). During a rotation overlap
// the header carries the new signature first, then the previous one, separated by a comma.
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

/**
 * The HMAC key of a secret. A worker keeps it with the opened secret: keyed with a string, every
 * signature would first copy the string into a new key.
 */
export const signingKey = (secret: string): KeyObject => createSecretKey(Buffer.from(secret, 'utf8'));

/** The signature of a body (its exact bytes, or the string they encode as UTF-8). */
export function signature(secret: string | KeyObject, timestamp: number, body: string | Buffer): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex')}`;
}

/** The header for the secrets in force, newest first. */
export function signatureHeader(
  secrets: readonly (string | KeyObject)[],
  timestamp: number,
  body: string | Buffer,
): string {
  return secrets.length === 1
    ? signature(secrets[0] as string | KeyObject, timestamp, body)
    : secrets.map((s) => signature(s, timestamp, body)).join(',');
}

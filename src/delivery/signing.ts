// How a delivery is signed (docs/webhooks.md tells receivers how to verify):
//   X-SVC-Signature: v1=<hex HMAC-SHA256(secret, "{X-SVC-Timestamp}.{raw body}")>
// keyed with the whole secret string as it was shown (whsec_ included). During a rotation overlap
// the header carries the new signature first, then the previous one, separated by a comma.
import { createHmac } from 'node:crypto';

export function signature(secret: string, timestamp: number, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The header for the secrets in force, newest first. */
export function signatureHeader(secrets: readonly string[], timestamp: number, body: string): string {
  return secrets.map((s) => signature(s, timestamp, body)).join(',');
}

// Verifying a webhook delivery before trusting it (docs/webhooks.md, "Verify a delivery"):
//   X-SVC-Signature: v1=<hex HMAC-SHA256(secret, "{X-SVC-Timestamp}.{raw body}")>[,v1=<previous>]
// keyed with the whole secret string as it was shown (`whsec_` included).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { WebhookEvent } from './events.js';

export const SIGNATURE_HEADER = 'x-svc-signature';
export const TIMESTAMP_HEADER = 'x-svc-timestamp';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookVerificationReason =
  /** `X-SVC-Signature` or `X-SVC-Timestamp` is absent. */
  | 'missing_header'
  /** A header is present but not in the documented form (no `v1=` value of 64 hex characters, a timestamp that is not a whole number). */
  | 'malformed_header'
  /** No signature of the header matches this secret and this raw body. */
  | 'signature_mismatch'
  /** Signed longer ago than the tolerance allows: a replay, or a clock far behind. */
  | 'stale_timestamp'
  /** Signed further in the future than the tolerance allows: a clock far ahead. */
  | 'future_timestamp'
  /** The signature is valid but the body is not a JSON event envelope. */
  | 'malformed_body';

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
  }
}

/** Node's `IncomingHttpHeaders`, a Fetch `Headers`, or any plain object of header names (any case). */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifyOptions {
  /** Allowed distance between `X-SVC-Timestamp` and now, either way. Default 300 (5 minutes). */
  toleranceSeconds?: number;
  /** The clock to judge the timestamp by, in milliseconds since the epoch (or a Date). Default: now. */
  now?: number | Date;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  let value = record[name];
  if (value === undefined) {
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : record[key];
  }
  // A header sent twice arrives as an array (or joined by a comma): keep every value.
  return typeof value === 'string' ? value : value?.join(',');
}

const V1 = /^v1=([0-9a-f]{64})$/;

/** The v1 digests of the header; values of other schemes are ignored, so later schemes can be added. */
function parseSignatures(value: string): Buffer[] {
  const digests: Buffer[] = [];
  for (const part of value.split(',')) {
    const match = V1.exec(part.trim());
    if (match) digests.push(Buffer.from(match[1] as string, 'hex'));
  }
  return digests;
}

/**
 * Checks a delivery and returns its event. Pass the body exactly as received (a string or the raw
 * bytes), before any JSON parsing: re-encoded JSON does not verify. Throws a
 * `WebhookVerificationError` whose `reason` says why a delivery is refused; answer it with a 4xx
 * and do not act on it.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyOptions = {},
): WebhookEvent {
  if (typeof secret !== 'string' || secret.length === 0) {
    throw new TypeError('verifyWebhook: secret must be the webhook secret string (whsec_…)');
  }
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isFinite(tolerance) || tolerance < 0) {
    throw new TypeError('verifyWebhook: toleranceSeconds must be a number of seconds, 0 or more');
  }
  const signatureValue = header(headers, SIGNATURE_HEADER);
  const timestampValue = header(headers, TIMESTAMP_HEADER);
  if (signatureValue === undefined) {
    throw new WebhookVerificationError('missing_header', 'X-SVC-Signature is missing');
  }
  if (timestampValue === undefined) {
    throw new WebhookVerificationError('missing_header', 'X-SVC-Timestamp is missing');
  }
  const timestampText = timestampValue.trim();
  if (!/^\d{1,12}$/.test(timestampText)) {
    throw new WebhookVerificationError('malformed_header', 'X-SVC-Timestamp is not Unix time in seconds');
  }
  const given = parseSignatures(signatureValue);
  if (given.length === 0) {
    throw new WebhookVerificationError('malformed_header', 'X-SVC-Signature has no v1= signature');
  }

  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const expected = createHmac('sha256', secret).update(`${timestampText}.`).update(body).digest();
  // Every value is compared, in constant time, whichever matches.
  let matched = false;
  for (const digest of given) {
    if (timingSafeEqual(digest, expected)) matched = true;
  }
  if (!matched) {
    throw new WebhookVerificationError(
      'signature_mismatch',
      'No signature matches: wrong secret, or the body was changed (verify the raw bytes, not re-encoded JSON)',
    );
  }

  const nowMs = options.now === undefined ? Date.now() : Number(options.now);
  const age = nowMs / 1000 - Number(timestampText);
  if (age > tolerance) {
    throw new WebhookVerificationError(
      'stale_timestamp',
      `Signed ${Math.round(age)} s ago, more than the ${tolerance} s allowed`,
    );
  }
  if (-age > tolerance) {
    throw new WebhookVerificationError(
      'future_timestamp',
      `Signed ${Math.round(-age)} s in the future, more than the ${tolerance} s allowed`,
    );
  }

  let event: unknown;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('malformed_body', 'The body is not JSON');
  }
  if (!isEnvelope(event)) {
    throw new WebhookVerificationError('malformed_body', 'The body is not an event envelope');
  }
  return event;
}

function isEnvelope(value: unknown): value is WebhookEvent {
  if (typeof value !== 'object' || value === null) return false;
  const e = value as Record<string, unknown>;
  return (
    typeof e.id === 'string' &&
    typeof e.type === 'string' &&
    typeof e.version === 'number' &&
    typeof e.created_at === 'string' &&
    typeof e.resource === 'object' &&
    e.resource !== null &&
    Array.isArray(e.changes) &&
    'data' in e
  );
}

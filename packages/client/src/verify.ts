// Verifying a webhook delivery before trusting it (docs/webhooks.md, "Verify a delivery"), by
// either header set a delivery carries (signature.ts):
//   X-SVC-Signature: v1=<hex>[,v1=<previous>] over "{X-SVC-Timestamp}.{raw body}", or, without it,
//   webhook-signature: v1,<base64>[ v1,<previous>] over "{webhook-id}.{webhook-timestamp}.{raw body}".
import { timingSafeEqual } from 'node:crypto';
import type { WebhookEvent } from './events.js';
import { contractDigest, standardDigest } from './signature.js';

export const SIGNATURE_HEADER = 'x-svc-signature';
export const TIMESTAMP_HEADER = 'x-svc-timestamp';
const STANDARD_SIGNATURE = 'webhook-signature';
const STANDARD_TIMESTAMP = 'webhook-timestamp';
const STANDARD_ID = 'webhook-id';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type WebhookVerificationReason =
  /** Neither signature header, or the timestamp (or `webhook-id`) that goes with it, is present. */
  | 'missing_header'
  /** A header is present but not in the documented form (no `v1=` value of 64 hex characters, no `v1,` value of 32 bytes in base64, a timestamp that is not a whole number). */
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
  /** Allowed distance between the signed timestamp and now, either way. Default 300 (5 minutes). */
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
const STANDARD_V1 = /^v1,([A-Za-z0-9+/]{43}=)$/;

/** The v1 digests of a header; values of other schemes are ignored, so later schemes can be added. */
function digests(value: string, separator: string, form: RegExp, encoding: 'hex' | 'base64'): Buffer[] {
  const found: Buffer[] = [];
  for (const part of value.split(separator)) {
    const match = form.exec(part.trim());
    if (match) found.push(Buffer.from(match[1] as string, encoding));
  }
  return found;
}

/** What a delivery was signed with, read from whichever header set it carries. */
interface Signed {
  timestamp: string;
  given: Buffer[];
  expected(secret: string, body: Buffer): Buffer;
}

function contractSigned(headers: WebhookHeaders, signature: string): Signed {
  const timestamp = header(headers, TIMESTAMP_HEADER);
  if (timestamp === undefined)
    throw new WebhookVerificationError('missing_header', 'X-SVC-Timestamp is missing');
  const given = digests(signature, ',', V1, 'hex');
  if (given.length === 0) {
    throw new WebhookVerificationError('malformed_header', 'X-SVC-Signature has no v1= signature');
  }
  const t = timestamp.trim();
  return { timestamp: t, given, expected: (secret, body) => contractDigest(secret, t, body) };
}

function standardSigned(headers: WebhookHeaders, signature: string): Signed {
  const timestamp = header(headers, STANDARD_TIMESTAMP);
  const id = header(headers, STANDARD_ID);
  if (timestamp === undefined)
    throw new WebhookVerificationError('missing_header', 'webhook-timestamp is missing');
  if (id === undefined) throw new WebhookVerificationError('missing_header', 'webhook-id is missing');
  const given = digests(signature, ' ', STANDARD_V1, 'base64');
  if (given.length === 0) {
    throw new WebhookVerificationError('malformed_header', 'webhook-signature has no v1, signature');
  }
  const t = timestamp.trim();
  return { timestamp: t, given, expected: (secret, body) => standardDigest(secret, id, t, body) };
}

function signedBy(headers: WebhookHeaders): Signed {
  const contract = header(headers, SIGNATURE_HEADER);
  if (contract !== undefined) return contractSigned(headers, contract);
  const standard = header(headers, STANDARD_SIGNATURE);
  if (standard !== undefined) return standardSigned(headers, standard);
  throw new WebhookVerificationError('missing_header', 'X-SVC-Signature (or webhook-signature) is missing');
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
  const signed = signedBy(headers);
  const timestampText = signed.timestamp;
  if (!/^\d{1,12}$/.test(timestampText)) {
    throw new WebhookVerificationError('malformed_header', 'The timestamp is not Unix time in seconds');
  }

  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const expected = signed.expected(secret, body);
  // Every value is compared, in constant time, whichever matches.
  let matched = false;
  for (const digest of signed.given) {
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

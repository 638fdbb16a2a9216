// One attempt of a claimed delivery: whether it may be sent at all, the signed request, and the
// outcome the retry policy gives its answer. No database work: the worker writes what this returns.
//
// A fault of the service's own (a secret that will not open, a body that cannot be made) is an
// attempt like any other for the delivery: it counts, is retried on the schedule and ends the
// delivery `dead` after the last one, with a last_error that names the service. It never moves the
// webhook's failure count (the receiver did nothing wrong), and is told to `fault` with every id.
import type { WebhookConfig } from '../config.js';
import { type AttemptResult, judgedStatus, type Sender } from '../outbound/send.js';
import { type SigningKey, signatureHeaders, signingKey } from '../outbound/signing.js';
import { SealedSecretError, type SecretBox } from '../security/secrets.js';
import { deliveryBodies } from './body.js';
import type { AttemptContext, Claimed, Recorded } from './engine.js';
import type { AttemptClass, DeliveryMetrics } from './metrics.js';
import { MAX_ATTEMPTS, outcomeOf } from './policy.js';

const USER_AGENT = 'SVC-Webhooks/1';

/** What the retry policy decides of an attempt. */
type Judged = 'status' | 'maxAttempts' | 'nextRetryInMs';

export interface AttemptDeps {
  config: WebhookConfig;
  secrets: SecretBox;
  sender: Sender;
  metrics?: DeliveryMetrics;
}

export interface Attempted {
  recorded: Recorded;
  class: AttemptClass;
  /** The service's own failure, when `class` is service_fault. */
  fault?: unknown;
}

/** The class of a receiver's answer, or of its absence. */
export function classOf(result: AttemptResult): AttemptClass {
  if (result.refused) return 'refused_target';
  if (result.timedOut) return 'timeout';
  if (result.status === null || result.partial) return 'network';
  if (result.status >= 200 && result.status < 300) return '2xx';
  if (result.status < 400) return '3xx';
  return result.status < 500 ? '4xx' : '5xx';
}

/** Why an attempt is not made at all, or null when it is. */
function notSendable(ctx: AttemptContext): string | null {
  if (!ctx.webhooks_enabled) return 'no enviado: los webhooks no están habilitados para la organización';
  if (!ctx.integration_active) return 'no enviado: la integración está desactivada o revocada';
  // A test is an explicit request: it is delivered to a paused webhook too.
  if (!ctx.webhook_active && ctx.event_type !== 'webhook.test') return 'no enviado: el webhook está inactivo';
  return null;
}

/** Webhooks whose opened secrets a worker remembers; the oldest is forgotten first. */
const REMEMBERED_SECRETS = 1000;

/**
 * SecretBox.open, remembered per webhook as its signing key for as long as its sealed secret stays
 * the same (a rotation seals a new one, so it is opened afresh): a busy webhook's secret is
 * decrypted once, not at every attempt. It stays in this worker's memory only, as it would for the
 * attempt itself.
 */
function openedSecrets(box: SecretBox): (sealed: Buffer, webhookId: string) => SigningKey {
  const opened = new Map<string, { sealed: Buffer; secret: SigningKey }[]>();
  return (sealed, webhookId) => {
    const known = opened.get(webhookId) ?? [];
    // Buffer.compare: the embedded database gives bytea as a plain Uint8Array.
    const hit = known.find((k) => Buffer.compare(k.sealed, sealed) === 0);
    if (hit) return hit.secret;
    const secret = signingKey(box.open(sealed, webhookId));
    // The secret in force and, during a rotation, the previous one: two per webhook at most.
    const kept = [{ sealed, secret }, ...known].slice(0, 2);
    opened.delete(webhookId);
    opened.set(webhookId, kept);
    if (opened.size > REMEMBERED_SECRETS) opened.delete(opened.keys().next().value as string);
    return secret;
  };
}

/** Makes one attempt of a claimed delivery and says what to record of it. */
export function attempter(deps: AttemptDeps): (claimed: Claimed) => Promise<Attempted> {
  const { config, metrics } = deps;
  const bodyOf = deliveryBodies();
  const open = openedSecrets(deps.secrets);

  function send(claimed: Claimed): Promise<AttemptResult> {
    const body = bodyOf(claimed.event_id, claimed);
    const timestamp = Math.floor(Date.now() / 1000);
    const secrets = [open(claimed.secret, claimed.webhook_id)];
    if (claimed.previous_valid && claimed.previous_secret) {
      secrets.push(open(claimed.previous_secret, claimed.webhook_id));
    }
    const signed = signatureHeaders(secrets, { id: claimed.event_id, timestamp, body });
    return deps.sender.send({
      url: claimed.url,
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'x-svc-event': claimed.event_type,
        'x-svc-event-id': claimed.event_id,
        'x-svc-delivery': claimed.id,
        'x-svc-attempt': String(claimed.attempt),
        ...signed.contract,
        ...signed.standard,
      },
    });
  }

  /** What to record of a sent attempt (or one the service failed to prepare), by the retry policy. */
  function recorded(claimed: Claimed, judged: number | null, seen: Omit<Recorded, Judged>): Recorded {
    // The retry schedule counts from the attempt a replay started again from.
    const outcome = outcomeOf(claimed.attempt - claimed.replayed_from, judged, config.retryGapsMs);
    return {
      status: outcome.status,
      maxAttempts: claimed.replayed_from + outcome.maxAttempts,
      nextRetryInMs: outcome.status === 'failed' ? outcome.retryInMs : null,
      ...seen,
    };
  }

  return async (claimed) => {
    const refusal = notSendable(claimed);
    if (refusal) {
      const maxAttempts = claimed.replayed_from + MAX_ATTEMPTS;
      const fields = { httpStatus: null, error: refusal, durationMs: 0, counts: false, blames: false };
      return { recorded: { status: 'dead', maxAttempts, nextRetryInMs: null, ...fields }, class: 'not_sent' };
    }
    const started = performance.now();
    // The lag is to a delivery's first attempt (a replay's count on from where it stopped).
    if (claimed.attempt === 1) metrics?.lag.observe((Date.now() - claimed.event_created_at.getTime()) / 1000);
    let result: AttemptResult;
    try {
      result = await send(claimed);
    } catch (fault) {
      const error = `error interno del servicio (no del destino): ${describeFault(fault)}`;
      const durationMs = Math.round(performance.now() - started);
      const seen = { httpStatus: null, error, durationMs, counts: true, blames: false };
      return { recorded: recorded(claimed, null, seen), class: 'service_fault', fault };
    }
    const { status: httpStatus, error, durationMs } = result;
    const seen = { httpStatus, error, durationMs, counts: true, blames: true };
    return { recorded: recorded(claimed, judgedStatus(result), seen), class: classOf(result) };
  };
}

/**
 * A fault's text for last_error, which the integrator reads: what failed, never a secret or a
 * stack (a secret that will not open says only that).
 */
function describeFault(fault: unknown): string {
  if (fault instanceof SealedSecretError)
    return fault.keyId === null
      ? 'el secreto del webhook no se pudo abrir con ninguna clave maestra configurada'
      : `el secreto del webhook está sellado con la clave maestra ${fault.keyId}, que no está configurada`;
  return 'no se pudo preparar el envío';
}

// Webhook deactivations and warnings announced to the platform (SVC_OPERATOR_NOTIFY_URL), signed
// like a webhook delivery with SVC_OPERATOR_NOTIFY_SECRET. The worker hands a notice over and goes
// on: sending, retrying and giving up happen here, beside its loop, never inside a round. A notice
// is best effort: the webhook's state, its error log line and svc_webhooks_disabled_total are the
// record; one that cannot be delivered after its attempts, or is still pending when the worker
// stops, is logged at warn with the tenant's ids.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { WebhookNotice } from '../delivery/notices.js';
import { type AttemptResult, judgedStatus, type Sender } from '../outbound/send.js';
import { signatureHeaders, signingKey } from '../outbound/signing.js';

/** The gaps between the attempts of a notice: six attempts over about 12 minutes. */
export const NOTICE_RETRY_GAPS_MS = [1000, 5000, 30_000, 120_000, 600_000];
/** Notices waiting or in flight at most; past it a new one is dropped (a receiver down for long). */
export const MAX_PENDING_NOTICES = 1000;

/** Not the deliveries' own: the platform's receiver tells its notices from a tenant's webhooks. */
const USER_AGENT = 'SVC-Operator-Notices/1';

export interface OperatorNotifierOptions {
  url: string;
  secret: string;
  sender: Sender;
  logger: FastifyBaseLogger;
  retryGapsMs?: readonly number[];
  maxPending?: number;
}

export interface OperatorNotifier {
  /** Queues the notice's first attempt; returns at once. */
  notify(notice: WebhookNotice): void;
  /**
   * Waits up to `graceMs` for the attempts in flight; notices still pending after it (in flight or
   * waiting for a retry) are given up, each logged. The sender is the caller's to close.
   */
  close(graceMs: number): Promise<void>;
}

/** The body sent: the notice as an event of its own (docs/operator-api.md, "Webhook notices"). */
export function noticeBody(id: string, notice: WebhookNotice, createdAt: Date): string {
  const { type, ...data } = notice;
  return JSON.stringify({
    id,
    type,
    created_at: createdAt.toISOString(),
    data: {
      organization_id: data.organization_id,
      integration_id: data.integration_id,
      webhook_id: data.webhook_id,
      consecutive_failures: data.consecutive_failures,
      reason: data.reason,
    },
  });
}

interface Pending {
  id: string;
  notice: WebhookNotice;
  body: string;
  attempt: number;
  timer?: NodeJS.Timeout;
  sending?: Promise<void>;
}

export function createOperatorNotifier(options: OperatorNotifierOptions): OperatorNotifier {
  const { url, sender, logger } = options;
  const gaps = options.retryGapsMs ?? NOTICE_RETRY_GAPS_MS;
  const maxPending = options.maxPending ?? MAX_PENDING_NOTICES;
  const key = signingKey(options.secret);
  const pending = new Set<Pending>();
  let closed = false;

  const lost = (p: Pending, why: string, result?: AttemptResult) =>
    logger.warn(
      {
        organization_id: p.notice.organization_id,
        integration_id: p.notice.integration_id,
        webhook_id: p.notice.webhook_id,
        notice_id: p.id,
        notice_type: p.notice.type,
        attempts: p.attempt,
        http_status: result?.status ?? null,
        reason: result?.error ?? null,
      },
      `operator notice not delivered: ${why}`,
    );

  function send(p: Pending): Promise<AttemptResult> {
    p.attempt += 1;
    const timestamp = Math.floor(Date.now() / 1000);
    const signed = signatureHeaders([key], { id: p.id, timestamp, body: p.body });
    return sender.send({
      url,
      body: p.body,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'x-svc-event': p.notice.type,
        'x-svc-event-id': p.id,
        'x-svc-attempt': String(p.attempt),
        ...signed.contract,
        ...signed.standard,
      },
    });
  }

  function attempt(p: Pending): void {
    p.timer = undefined;
    p.sending = send(p).then(
      (result) => settle(p, result),
      (error: unknown) => settle(p, { status: null, error: String(error), durationMs: 0 }),
    );
  }

  function settle(p: Pending, result: AttemptResult): void {
    p.sending = undefined;
    const status = judgedStatus(result);
    if (status !== null && status >= 200 && status < 300) {
      pending.delete(p);
      return;
    }
    if (closed) return;
    const gap = gaps[p.attempt - 1];
    if (gap === undefined) {
      pending.delete(p);
      lost(p, `the receiver failed ${p.attempt} attempts`, result);
      return;
    }
    // Unref'd: a retry waiting never keeps a stopping process alive (close gives it up, logged).
    p.timer = setTimeout(() => attempt(p), gap);
    p.timer.unref();
  }

  return {
    notify(notice) {
      const p: Pending = { id: randomUUID(), notice, body: '', attempt: 0 };
      if (closed || pending.size >= maxPending) {
        lost(p, closed ? 'the worker is stopping' : `${maxPending} notices are already pending`);
        return;
      }
      p.body = noticeBody(p.id, notice, new Date());
      pending.add(p);
      attempt(p);
    },
    async close(graceMs) {
      closed = true;
      for (const p of pending) clearTimeout(p.timer);
      const inFlight = [...pending].flatMap((p) => (p.sending ? [p.sending] : []));
      if (inFlight.length > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.all(inFlight),
          new Promise((resolve) => {
            timer = setTimeout(resolve, graceMs);
          }),
        ]);
        clearTimeout(timer);
      }
      // A notice leaves `pending` once delivered: whatever is still there was not.
      for (const p of pending) lost(p, 'the worker stopped before it was delivered');
      pending.clear();
    },
  };
}

// What a delivery worker keeps per webhook besides its local queue: its attempts under way, the cap
// on them that its latest claim gave (claim_slots, migration 012), and how fast the receiver
// answered its last attempt. The worker's loop (worker.ts) asks it how many attempts of a webhook
// it may still start, and which of the webhooks it works on answer fast.

/**
 * A receiver that answered its last attempt in under this many ms is fast: its worker holds more of
 * its deliveries (FAST_HOLD_PER_WEBHOOK in worker.ts).
 */
export const FAST_ANSWER_MS = 250;
/** Webhooks whose last answer time a worker remembers; the oldest is forgotten first. */
const REMEMBERED_ANSWERS = 1000;

export interface WebhookSlots {
  /** Attempts of the webhook under way. */
  sendingTo(webhook: string): number;
  /** The webhooks with attempts under way. */
  sending(): IterableIterator<string>;
  started(webhook: string): void;
  ended(webhook: string): void;
  /** The cap of the latest claim that gave deliveries of the webhook (each row's `in_flight_cap`). */
  capped(webhook: string, cap: number): void;
  /** Attempts of the webhook that may still start: its bound, or the cap if lower, less those under way. */
  roomAt(webhook: string): number;
  /** The webhook is neither held nor sent to any more: its cap goes (a later claim gives a new one). */
  forget(webhook: string): void;
  /** A receiver's answer time, for counted attempts. */
  answered(webhook: string, ms: number): void;
  /** Of `held` and the webhooks sent to, those whose receivers answered their last attempt fast. */
  fast(held: Iterable<string>): string[];
  /**
   * Some webhook is held or sent to, and the receivers of all of them answered their last attempt
   * in under `ms`.
   */
  allAnsweredWithin(held: Iterable<string>, ms: number): boolean;
}

export function webhookSlots(bound: number): WebhookSlots {
  const sending = new Map<string, number>();
  /**
   * Of a webhook other workers hold deliveries of, the attempts this worker may have in flight: the
   * bound less what the others held at its latest claim that gave it some.
   */
  const caps = new Map<string, number>();
  /** How long each webhook's receiver took over its last attempt, in ms, oldest answer first. */
  const answeredIn = new Map<string, number>();
  const sendingTo = (webhook: string) => sending.get(webhook) ?? 0;
  const within = (ms: number) => (webhook: string) =>
    (answeredIn.get(webhook) ?? Number.POSITIVE_INFINITY) < ms;
  const isFast = within(FAST_ANSWER_MS);
  /** The webhooks held (`held`) or sent to, each once. */
  const workedOn = (held: Iterable<string>) => [...new Set([...held, ...sending.keys()])];
  return {
    sendingTo,
    sending: () => sending.keys(),
    started: (webhook) => void sending.set(webhook, sendingTo(webhook) + 1),
    ended(webhook) {
      const left = sendingTo(webhook) - 1;
      if (left > 0) sending.set(webhook, left);
      else sending.delete(webhook);
    },
    capped: (webhook, cap) => void caps.set(webhook, cap),
    roomAt: (webhook) => Math.max(0, Math.min(bound, caps.get(webhook) ?? bound) - sendingTo(webhook)),
    forget(webhook) {
      if (!sending.has(webhook)) caps.delete(webhook);
    },
    answered(webhook, ms) {
      answeredIn.delete(webhook);
      answeredIn.set(webhook, ms);
      if (answeredIn.size > REMEMBERED_ANSWERS) answeredIn.delete(answeredIn.keys().next().value as string);
    },
    fast: (held) => workedOn(held).filter(isFast),
    allAnsweredWithin(held, ms) {
      const all = workedOn(held);
      return all.length > 0 && all.every(within(ms));
    },
  };
}

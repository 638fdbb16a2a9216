// What follows an attempt: success, another attempt later, or the end of the delivery.
//
// Eight attempts with gaps of 30 s, 1, 2, 4, 8, 16 and 32 minutes (SVC_WEBHOOK_RETRY_SCHEDULE),
// each stretched by up to 10 % so receivers that failed together are not retried together. A 4xx
// that no retry can fix stops after three attempts; 408, 409, 425 and 429 say "later", not "never".

export const MAX_ATTEMPTS = 8;
export const PERMANENT_MAX_ATTEMPTS = 3;
export const CONSECUTIVE_FAILURES_TO_DISABLE = 100;
const RETRYABLE_4XX = new Set([408, 409, 425, 429]);
const JITTER = 0.1;

export const isSuccess = (status: number | null): boolean => status !== null && status >= 200 && status < 300;

export const isPermanent = (status: number | null): boolean =>
  status !== null && status >= 400 && status < 500 && !RETRYABLE_4XX.has(status);

export type Outcome =
  | { status: 'succeeded'; maxAttempts: number }
  | { status: 'failed'; maxAttempts: number; retryInMs: number }
  | { status: 'dead'; maxAttempts: number };

/**
 * `attempt` is the number of the attempt that just ended (from 1). The cap follows the latest
 * answer: three while the receiver answers with a permanent 4xx, eight otherwise.
 */
export function outcomeOf(
  attempt: number,
  httpStatus: number | null,
  gapsMs: readonly number[],
  random: () => number = Math.random,
): Outcome {
  const maxAttempts = isPermanent(httpStatus) ? PERMANENT_MAX_ATTEMPTS : MAX_ATTEMPTS;
  if (isSuccess(httpStatus)) return { status: 'succeeded', maxAttempts };
  if (attempt >= maxAttempts) return { status: 'dead', maxAttempts };
  const gap = gapsMs[Math.min(attempt, gapsMs.length) - 1] ?? 0;
  return { status: 'failed', maxAttempts, retryInMs: Math.round(gap * (1 + JITTER * random())) };
}

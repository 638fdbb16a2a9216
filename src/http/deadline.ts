// The request deadline: every request is answered within SVC_REQUEST_TIMEOUT_MS of its headers
// being read, hooks, body and handler included, so a request waiting on a stalled database answers
// instead of hanging (and a body still trickling in is dropped).
//
// One timer per application checks the requests in flight, the way Node checks its own request
// time-out. Fastify's per-request `handlerTimeout` did the same with an AbortController, a timer
// and a 'close' listener of each request's own: about 6 µs a request, 4 to 5 of them for the
// AbortController alone, where an entry in a Map costs a tenth of a microsecond.
import type { FastifyReply } from 'fastify';

/**
 * The error a request past its deadline is answered with (see the kit's error handler). Named
 * apart from the delivery worker's own attempt time-out (src/outbound/send.ts), which is unrelated.
 */
export class RequestDeadlineExceeded extends Error {
  readonly code = 'SVC_DEADLINE_EXCEEDED';
  constructor(timeoutMs: number) {
    super(`request not answered within ${timeoutMs} ms`);
  }
}

export const isDeadlineExceeded = (error: unknown): error is RequestDeadlineExceeded =>
  error instanceof RequestDeadlineExceeded;

/** How often the requests in flight are checked: each is answered at most this late. */
const deadlineInterval = (timeoutMs: number) => Math.max(25, Math.min(500, Math.floor(timeoutMs / 20)));

export interface Deadlines {
  /** The request of `reply` has arrived: its deadline starts now. */
  start(reply: FastifyReply): void;
  /**
   * Its answer has started on its way out (the first onSend hook): from now on a deadline cuts
   * the connection, because the status and body are already chosen, though not yet written.
   */
  answering(reply: FastifyReply): void;
  /** Its answer is written (or its connection gone): forget it. */
  finish(reply: FastifyReply): void;
  /** Answers every request past its deadline; called by the timer, exposed for tests. */
  check(now?: number): void;
  stop(): void;
}

export function createDeadlines(
  timeoutMs: number,
  clock: () => number = performance.now.bind(performance),
): Deadlines {
  // Insertion order is deadline order (one time-out for all), so a check stops at the first
  // request still within its time.
  const inFlight = new Map<FastifyReply, number>();
  // The requests among them whose answer is past the handler, in its onSend hooks. An async hook
  // (the idempotency record) may still be writing when the deadline passes: answering then with
  // an error would take the status while the hook's payload is sent after it (500 with the
  // success body), and the error's own send would fail on headers already sent.
  const answering = new Set<FastifyReply>();
  const check = (now = clock()) => {
    for (const [reply, deadline] of inFlight) {
      if (deadline > now) return;
      inFlight.delete(reply);
      const started = answering.delete(reply);
      if (reply.sent || reply.raw.destroyed) continue;
      const error = new RequestDeadlineExceeded(timeoutMs);
      // Too late for another status: the answer has started, so the connection is cut.
      if (started || reply.raw.headersSent) reply.raw.destroy(error);
      else reply.send(error);
    }
  };
  const timer = setInterval(check, deadlineInterval(timeoutMs));
  timer.unref();
  return {
    start: (reply) => {
      inFlight.set(reply, clock() + timeoutMs);
    },
    answering: (reply) => {
      if (inFlight.has(reply)) answering.add(reply);
    },
    finish: (reply) => {
      inFlight.delete(reply);
      answering.delete(reply);
    },
    check,
    stop: () => clearInterval(timer),
  };
}

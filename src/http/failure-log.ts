// Unforeseen failures in the log without flooding it: during a database outage every request
// fails the same way, and thousands of identical stack traces hide everything else. The first
// failure of a kind is logged whole; the next ones within `everyMs` are only counted, and the
// count rides on the next failure of that kind logged after the interval.
import type { FastifyBaseLogger } from 'fastify';

const EVERY_MS = 30_000;
const MAX_KINDS = 200;

/** What makes two failures "the same": code, name and message with ids and numbers blurred. */
export function failureKind(error: unknown): string {
  const e = (error ?? {}) as { code?: unknown; name?: unknown; message?: unknown };
  const message = String(e.message ?? error)
    .slice(0, 200)
    .replace(/[0-9a-f-]{36}|\d+/gi, '#');
  return `${String(e.code ?? '')}|${String(e.name ?? '')}|${message}`;
}

export type FailureLog = (logger: FastifyBaseLogger, error: unknown, message: string) => void;

export function createFailureLog(everyMs = EVERY_MS, now: () => number = Date.now): FailureLog {
  const kinds = new Map<string, { loggedAt: number; unlogged: number }>();
  return (logger, error, message) => {
    const kind = failureKind(error);
    const seen = kinds.get(kind);
    if (seen && now() - seen.loggedAt < everyMs) {
      seen.unlogged += 1;
      return;
    }
    if (!seen && kinds.size >= MAX_KINDS) kinds.clear();
    kinds.set(kind, { loggedAt: now(), unlogged: 0 });
    const repeated = seen?.unlogged ? { repeated_unlogged: seen.unlogged } : {};
    logger.error({ err: error, ...repeated }, message);
  };
}

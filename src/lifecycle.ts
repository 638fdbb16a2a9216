// Graceful shutdown, one sequence for everything that holds work in hand (the two HTTP servers
// today, the webhook worker later): stop taking new work, let the work in hand finish for up to a
// grace period, then abandon what is left, so a stuck client or job can never keep the process
// alive.
import type { FastifyBaseLogger } from 'fastify';
import type { App } from './http/kit.js';

export interface Stoppable {
  name: string;
  /** Stops taking new work; resolves once the work in hand is done. */
  stop(): Promise<void>;
  /** Abandons the work still in hand; `stop()` then resolves promptly. */
  abort(): void;
}

/**
 * An HTTP application: closing stops the listener and closes idle keep-alive connections at once;
 * the kit then answers every request in flight with `Connection: close` and any request that still
 * arrives with 503. Aborting destroys the connections that remain (a client trickling its headers,
 * a request past the grace period).
 */
export function httpStoppable(name: string, app: App): Stoppable {
  return {
    name,
    stop: () => app.close(),
    abort: () => app.server.closeAllConnections(),
  };
}

export interface ShutdownReport {
  /** The parts whose work was abandoned when the grace period ran out. */
  forced: string[];
  ms: number;
}

export async function shutdown(
  parts: readonly Stoppable[],
  graceMs: number,
  logger?: FastifyBaseLogger,
): Promise<ShutdownReport> {
  const started = Date.now();
  const pending = new Set(parts);
  const forced: string[] = [];
  const deadline = setTimeout(() => {
    for (const part of pending) {
      forced.push(part.name);
      part.abort();
    }
  }, graceMs);
  try {
    await Promise.allSettled(
      parts.map((part) =>
        part.stop().then(
          () => pending.delete(part),
          (error: unknown) => {
            pending.delete(part);
            logger?.error({ err: error, part: part.name }, 'stopping failed');
          },
        ),
      ),
    );
  } finally {
    clearTimeout(deadline);
  }
  const report = { forced, ms: Date.now() - started };
  if (forced.length > 0) {
    logger?.warn(
      { ...report, grace_ms: graceMs },
      'shutdown: work still in hand after the grace period was abandoned',
    );
  } else {
    logger?.info(report, 'shutdown: all work in hand finished');
  }
  return report;
}

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

/** A stop signal arrived while the process was starting: what started is stopped, the exit is 0. */
export class StartInterrupted extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`${signal} during start-up`);
  }
}

/**
 * The start-up of a long-running command: each part that starts says how it stops, and after each
 * one a stop signal received meanwhile ends the start-up (StartInterrupted). `unwind` then stops
 * what started, newest first, so a signal at any point leaves nothing running.
 */
export class Startup {
  private readonly stops: { name: string; stop: () => unknown }[] = [];
  /** The process's log, once the command has made it: each step is logged at debug. */
  logger: FastifyBaseLogger | undefined;

  constructor(private readonly signals: { received(): NodeJS.Signals | null }) {}

  /** The configuration is read and the log made: the first step. */
  begin(logger: FastifyBaseLogger): void {
    this.logger = logger;
    logger.debug({ step: 'configuration' }, 'start-up');
    this.checkpoint();
  }

  /** Waits for a part, remembers how to stop it, then ends the start-up if a signal came. */
  async step<T>(name: string, starting: Promise<T>, stop?: (part: T) => unknown): Promise<T> {
    const part = await starting;
    if (stop) this.stops.push({ name, stop: () => stop(part) });
    this.logger?.debug({ step: name }, 'start-up');
    this.checkpoint();
    return part;
  }

  /** Remembers how to stop a part started without waiting. */
  started(name: string, stop: () => unknown): void {
    this.stops.push({ name, stop });
  }

  /** The start-up is over: from now on the command stops its parts itself. */
  finish(): void {
    this.checkpoint();
    this.stops.length = 0;
  }

  checkpoint(): void {
    const signal = this.signals.received();
    if (signal) throw new StartInterrupted(signal);
  }

  /** Stops what started, newest first; a part that fails to stop does not keep the others up. */
  async unwind(): Promise<void> {
    for (const { name, stop } of this.stops.splice(0).reverse()) {
      try {
        await stop();
      } catch (error) {
        this.logger?.error({ err: error, part: name }, 'stopping failed');
      }
    }
  }
}

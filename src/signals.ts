// SIGTERM and SIGINT, caught from the first line of a process that runs until stopped. Without a
// handler node dies at once on either: as PID 1 in a container a SIGTERM during start-up would be
// lost (no handler: the runtime waits out its grace period and kills) or would kill a process
// half way through a migration. bin/svc.js calls this before loading anything else; this module
// imports nothing, so loading it costs nothing.

export interface StopSignals {
  /** The first signal received, or null. */
  received(): NodeJS.Signals | null;
  /** Resolves with the first signal. */
  readonly next: Promise<NodeJS.Signals>;
}

/** The commands that run until stopped; the others (admin, migrate) keep node's default. */
const LONG_RUNNING = new Set(['serve', 'worker', 'demo']);

/**
 * Handles each signal once: a second SIGINT or SIGTERM of the same kind gets node's default and
 * ends the process at once, the usual way out of a shutdown that hangs.
 */
export function catchStopSignals(): StopSignals {
  let received: NodeJS.Signals | null = null;
  const next = new Promise<NodeJS.Signals>((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      received ??= signal;
      resolve(signal);
    };
    process.once('SIGINT', on);
    process.once('SIGTERM', on);
  });
  return { received: () => received, next };
}

/** Signals caught now when `command` runs until stopped, else null. */
export function catchStopSignalsFor(command: string | undefined): StopSignals | null {
  return command !== undefined && LONG_RUNNING.has(command) ? catchStopSignals() : null;
}

// Periodic housekeeping run by `svc serve`: each task deletes what the contract no longer needs
// to keep. Tasks are idempotent, so several processes may run them at once.
import type { FastifyBaseLogger } from 'fastify';
import { pruneEvents } from './api/events/retention.js';
import type { Config } from './config.js';
import type { Queryable } from './db/db.js';
import { pruneIdempotencyKeys } from './http/idempotency.js';
import { pruneSessions } from './portal/sessions.js';

export interface MaintenanceDeps {
  db: Queryable;
  config: Pick<Config, 'eventRetentionDays' | 'idempotencyRetentionHours'>;
  now: () => number;
}

export interface MaintenanceTask {
  name: string;
  /** Returns how many rows it removed. */
  run(deps: MaintenanceDeps): Promise<number>;
}

export const eventRetentionTask: MaintenanceTask = {
  name: 'event-retention',
  run: ({ db, config, now }) => pruneEvents({ db, retentionDays: config.eventRetentionDays, now }),
};

export const MAINTENANCE_TASKS: MaintenanceTask[] = [
  eventRetentionTask,
  {
    name: 'idempotency-keys',
    run: ({ db, config }) => pruneIdempotencyKeys(db, config.idempotencyRetentionHours),
  },
  { name: 'portal-sessions', run: ({ db, now }) => pruneSessions(db, new Date(now())) },
];

export async function runMaintenance(deps: MaintenanceDeps & { logger: FastifyBaseLogger }): Promise<void> {
  for (const task of MAINTENANCE_TASKS) {
    try {
      const removed = await task.run(deps);
      if (removed > 0) deps.logger.info({ task: task.name, removed }, 'maintenance');
    } catch (error) {
      deps.logger.error({ err: error, task: task.name }, 'maintenance task failed');
    }
  }
}

export function startMaintenance(
  deps: MaintenanceDeps & { logger: FastifyBaseLogger },
  everyMs = 10 * 60_000,
) {
  const timer = setInterval(() => void runMaintenance(deps), everyMs);
  timer.unref();
  void runMaintenance(deps);
  return { stop: () => clearInterval(timer) };
}

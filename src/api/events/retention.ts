// Event retention: the contract keeps events at least 30 days; SVC_EVENT_RETENTION_DAYS (never
// less than 30) says how long. Deleted in small batches through events_retention so that a large
// backlog never holds long locks or one huge transaction. An event whose delivery is not final yet
// stays until it is; its delivery history goes with it.
import type { Queryable } from '../../db/db.js';

const DAY_MS = 24 * 60 * 60 * 1000;
export const EVENT_RETENTION_BATCH = 1000;

export interface EventRetentionDeps {
  db: Queryable;
  retentionDays: number;
  now: () => number;
}

/** Deletes the events older than the retention; returns how many. */
export async function pruneEvents({ db, retentionDays, now }: EventRetentionDeps): Promise<number> {
  const cutoff = new Date(now() - retentionDays * DAY_MS);
  let removed = 0;
  for (;;) {
    const rows = await db.query<{ n: number }>(
      `WITH old AS (
         SELECT id FROM events e WHERE created_at < $1
           -- Never what an unfinished delivery still needs.
           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                           WHERE d.event_id = e.id AND d.status IN ('pending', 'delivering', 'failed'))
         ORDER BY created_at LIMIT $2
       ), gone AS (
         DELETE FROM events e USING old WHERE e.id = old.id RETURNING 1
       )
       SELECT count(*)::int AS n FROM gone`,
      [cutoff, EVENT_RETENTION_BATCH],
    );
    const n = rows[0]?.n ?? 0;
    removed += n;
    if (n < EVENT_RETENTION_BATCH) return removed;
  }
}

// An operator's replay of dead deliveries after a long outage: the only statement of the engine
// that an operator, not a worker, runs. The queued deliveries are then claimed like any other.
import type { Queryable } from '../db/db.js';
import { MAX_ATTEMPTS } from '../delivery/policy.js';

export interface ReplayFilter {
  webhookId: string;
  since: Date;
  until: Date | null;
  limit: number;
}

/**
 * An operator's replay: dead deliveries of one webhook, created in [since, until), queued again
 * under their own ids, due now, in event order (event ids sort like the events). Each counts its
 * attempts on from where it ended: `attempt` keeps growing, `max_attempts` becomes that plus the
 * eight of the schedule, which starts over. The booking a body carries is the booking as it is at
 * the replay (the snapshot taken with the change was dropped when the delivery ended); a booking
 * deleted since is sent as `data: null`. Returns how many were queued.
 */
export async function replayDeadDeliveries(q: Queryable, f: ReplayFilter): Promise<number> {
  const [row] = await q.query<{ n: number }>(
    `WITH picked AS (
       SELECT d.id, d.event_id FROM webhook_deliveries d
       WHERE d.webhook_id = $1 AND d.status = 'dead'
         AND d.created_at >= $2 AND ($3::timestamptz IS NULL OR d.created_at < $3)
       ORDER BY d.event_id LIMIT $4
     ), payloads AS (
       INSERT INTO event_payloads (event_id, booking)
       SELECT DISTINCT ON (e.id) e.id, booking_snapshot(b)
       FROM picked p JOIN events e ON e.id = p.event_id JOIN bookings b ON b.id = e.resource_id
       WHERE e.resource_type = 'booking'
       ON CONFLICT (event_id) DO NOTHING
     ), replayed AS (
       UPDATE webhook_deliveries d SET
         status = 'pending', next_retry_at = now(), replayed_from = d.attempt, max_attempts = d.attempt + $5
       FROM picked p WHERE d.id = p.id
       RETURNING d.id, d.webhook_id, d.event_id, d.next_retry_at
     ), queued AS (
       INSERT INTO delivery_queue (id, webhook_id, event_id, next_retry_at)
       SELECT id, webhook_id, event_id, next_retry_at FROM replayed
     )
     SELECT count(*)::int AS n FROM replayed`,
    [f.webhookId, f.since, f.until, f.limit, MAX_ATTEMPTS],
  );
  // Wakes the worker that owns the webhook's partition.
  if ((row?.n ?? 0) > 0)
    await q.query("SELECT pg_notify('svc_deliveries', current_schema() || ' ' || webhook_partition($1))", [
      f.webhookId,
    ]);
  return row?.n ?? 0;
}

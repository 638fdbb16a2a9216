// The publisher: moves committed events from the outbox into the event log and fans each one out
// to the webhooks subscribed to it, in one short transaction under one advisory lock.
//
// Why a publisher at all: the booking trigger runs inside the platform's transaction, and a
// transaction that started early may commit late. Had the trigger stamped the log directly, that
// event would appear *behind* events a reader has already walked past, and a reconciliation that
// stops at "the last event I processed" would never see it. Here an event enters the log only when
// it is published, every batch is stamped later than everything published before (the lock makes
// publishers take turns, and each reads the newest stamp after taking it), so the log only ever
// grows at its head. The same transaction creates the deliveries, so an event is fanned out exactly
// once, by whichever worker publishes it.
import { randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../db/db.js';

const PUBLISH_LOCK = 734_110_902;
export const PUBLISH_BATCH = 500;

/**
 * Ids that sort like the events they name: the stamp's milliseconds, then the position in the
 * batch, then randomness (the layout of a version-7 UUID). Events of one batch share a stamp, so
 * the log's tie-break by id keeps them in the order they happened.
 */
export function orderedEventId(stampMs: number, position: number): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(stampMs, 0, 6);
  bytes[6] = 0x70 | ((position >> 8) & 0x0f);
  bytes[7] = position & 0xff;
  bytes[8] = 0x80 | ((bytes[8] as number) & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

interface Pending {
  id: string;
}

/**
 * Publishes one batch; returns how many events it published and how many deliveries it queued, or
 * null when `wait` is false and another publisher holds the lock.
 */
async function publishBatch(
  q: Queryable,
  wait: boolean,
): Promise<{ events: number; deliveries: number } | null> {
  if (wait) {
    await q.query('SELECT pg_advisory_xact_lock($1)', [PUBLISH_LOCK]);
  } else {
    const [got] = await q.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [
      PUBLISH_LOCK,
    ]);
    if (!got?.ok) return null;
  }
  const pending = await q.query<Pending>('SELECT id FROM event_outbox ORDER BY seq LIMIT $1', [
    PUBLISH_BATCH,
  ]);
  if (pending.length === 0) return { events: 0, deliveries: 0 };

  // Later than the database's clock and than every stamp already in the log.
  const [clock] = await q.query<{ now_ms: number; last_ms: number | null }>(
    `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8 AS now_ms,
            (SELECT (extract(epoch FROM max(created_at)) * 1000)::int8 FROM events) AS last_ms`,
  );
  const stampMs = Math.max(Number(clock?.now_ms), Number(clock?.last_ms ?? 0) + 1);
  const outboxIds = pending.map((p) => p.id);
  const eventIds = pending.map((_, i) => orderedEventId(stampMs, i));

  await q.query(
    `INSERT INTO events (id, organization_id, type, resource_type, resource_id, changes, previous_status,
                         reference, created_at)
     SELECT m.event_id, o.organization_id, o.type, 'booking', o.resource_id, o.changes, o.previous_status,
            o.reference, to_timestamp($3::int8 / 1000.0)
     FROM unnest($1::uuid[], $2::uuid[]) AS m(outbox_id, event_id)
     JOIN event_outbox o ON o.id = m.outbox_id`,
    [outboxIds, eventIds, stampMs],
  );
  // Active webhooks of active integrations, in organizations with webhooks on, subscribed to the
  // type. A booking event also needs the integration to read bookings: the body is a booking.
  const fanned = await q.query<{ event_id: string }>(
    `INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, next_retry_at)
     SELECT w.id, e.id, e.type, now()
     FROM events e
     JOIN organizations org ON org.id = e.organization_id AND org.webhooks_enabled AND org.api_enabled
     JOIN webhooks w ON w.organization_id = e.organization_id AND w.active
       AND (w.events @> ARRAY[e.type] OR w.events @> ARRAY['*'])
     JOIN integrations i ON i.id = w.integration_id AND i.status = 'active'
       AND 'bookings:read' = ANY (i.scopes)
     WHERE e.id = ANY ($1::uuid[])
     ON CONFLICT ON CONSTRAINT webhook_deliveries_once DO NOTHING
     RETURNING event_id`,
    [eventIds],
  );
  if (fanned.length > 0) {
    // Personal data is kept only for the events a delivery will need it for.
    await q.query(
      `INSERT INTO event_payloads (event_id, booking)
       SELECT m.event_id, o.booking
       FROM unnest($1::uuid[], $2::uuid[]) AS m(outbox_id, event_id)
       JOIN event_outbox o ON o.id = m.outbox_id
       WHERE o.booking IS NOT NULL AND m.event_id = ANY ($3::uuid[])`,
      [outboxIds, eventIds, [...new Set(fanned.map((f) => f.event_id))]],
    );
    await q.query("SELECT pg_notify('svc_deliveries', current_schema())");
  }
  await q.query('DELETE FROM event_outbox WHERE id = ANY ($1::uuid[])', [outboxIds]);
  return { events: pending.length, deliveries: fanned.length };
}

export interface PublishResult {
  events: number;
  deliveries: number;
  /** Another publisher held the lock (only without `wait`). */
  busy: boolean;
}

/**
 * Publishes everything committed in the outbox, batch by batch. Cheap when it is empty. With
 * `wait: false` (workers) it leaves the work to a publisher already running instead of queueing
 * behind it: `busy` then says so, and the caller looks again shortly.
 */
export async function publishEvents(db: Db, options: { wait?: boolean } = {}): Promise<PublishResult> {
  const wait = options.wait ?? true;
  const total: PublishResult = { events: 0, deliveries: 0, busy: false };
  for (;;) {
    const [any] = await db.query('SELECT 1 FROM event_outbox LIMIT 1');
    if (!any) return total;
    const batch = await db.tx((q) => publishBatch(q, wait));
    if (batch === null) return { ...total, busy: true };
    total.events += batch.events;
    total.deliveries += batch.deliveries;
    if (batch.events < PUBLISH_BATCH) return total;
  }
}

interface Shared {
  /** The publish under way, if any. */
  running: Promise<void> | null;
  /** The publish that will start when it ends, shared by every writer that committed meanwhile. */
  next: Promise<void> | null;
  lastCall: number;
}
const shared = new WeakMap<Db, Shared>();

/**
 * Publishes what a writer has just committed, off its transaction and shared with every other
 * writer of this process: one publish runs at a time, and the writers that commit while it runs
 * all wait for the next one, which covers them together. It resolves once a publish that started
 * after the caller's commit has ended, so an answer given after it still implies that the write's
 * events are in the log (a publisher of another process may have published them first: the log
 * is the same). Under load, one publish serves a whole batch of writes instead of each write
 * queueing on the publisher's lock in turn.
 */
export function publishCommitted(db: Db): Promise<void> {
  let s = shared.get(db);
  if (!s) {
    s = { running: null, next: null, lastCall: 0 };
    shared.set(db, s);
  }
  s.lastCall = Date.now();
  if (s.next) return s.next;
  const state = s;
  const next: Promise<void> = (state.running ?? Promise.resolve())
    .catch(() => {})
    .then(async () => {
      state.next = null;
      state.running = next;
      try {
        await publishEvents(db);
      } finally {
        if (state.running === next) state.running = null;
      }
    });
  state.next = next;
  return next;
}

/**
 * Whether this process's writers publish their own events (they did within the last second): the
 * worker beside them then leaves the outbox to them, and only polls it.
 */
export function publishingForWriters(db: Db): boolean {
  const s = shared.get(db);
  return s !== undefined && Date.now() - s.lastCall < 1000;
}

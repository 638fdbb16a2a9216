// The publisher: moves committed events from the outbox into the event log and fans each one out
// to the webhooks subscribed to it, in one statement under one advisory lock (the SQL function
// publish_outbox).
//
// Why a publisher at all: the booking trigger runs inside the platform's transaction, and a
// transaction that started early may commit late. Had the trigger stamped the log directly, that
// event would appear *behind* events a reader has already walked past, and a reconciliation that
// stops at "the last event I processed" would never see it. Here an event enters the log only when
// it is published, every batch is stamped later than everything published before (the lock makes
// publishers take turns, and each reads the newest stamp after taking it), so the log only ever
// grows at its head. The same transaction creates the deliveries, so an event is fanned out exactly
// once, by whichever worker publishes it.
import type { Db } from '../db/db.js';

export const PUBLISH_BATCH = 500;

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
export async function publishEvents(
  db: Db,
  options: { wait?: boolean; committed?: boolean; olderThanMs?: number } = {},
): Promise<PublishResult> {
  const wait = options.wait ?? true;
  const total: PublishResult = { events: 0, deliveries: 0, busy: false };
  // A poller looks first, without the lock, whether there is anything to publish (with
  // `olderThanMs`: anything written that long ago, which its writer has left behind); a writer that
  // has just committed knows there is, and after a full batch there likely is more.
  let look = !options.committed;
  for (;;) {
    if (look) {
      const [any] = await db.query(
        'SELECT 1 FROM event_outbox WHERE occurred_at <= clock_timestamp() - make_interval(secs => $1::float8 / 1000) LIMIT 1',
        [options.olderThanMs ?? 0],
      );
      if (!any) return total;
    }
    look = false;
    // One statement, its own transaction: the lock is held for one round trip
    // (publish_outbox in src/db/engine.sql).
    const [batch] = await db.query<{ events: number; deliveries: number; busy: boolean }>(
      'SELECT events, deliveries, busy FROM publish_outbox($1, $2)',
      [PUBLISH_BATCH, wait],
    );
    if (!batch || batch.busy) return { ...total, busy: true };
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
    s = { running: null, next: null };
    shared.set(db, s);
  }
  if (s.next) return s.next;
  const state = s;
  const next: Promise<void> = (state.running ?? Promise.resolve())
    .catch(() => {})
    .then(async () => {
      state.next = null;
      state.running = next;
      try {
        await publishEvents(db, { committed: true });
      } finally {
        if (state.running === next) state.running = null;
      }
    });
  state.next = next;
  return next;
}

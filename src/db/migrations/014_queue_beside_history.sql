-- The queue beside the history: a delivery's place in the queue and its lease live in a small
-- table of their own, and webhook_deliveries keeps what the deliveries' list shows.
--
-- A delivery's row was written twice while it was delivered (claimed, then its outcome), and
-- neither write could be heap-only: `status` was in the predicates of the queue's partial indexes,
-- so each write put a new entry in every index of the table (seven per delivery: the key, the
-- list, the uniqueness, the queue, the attempts in flight). pg_stat_statements over a drain: the
-- engine's record-and-claim statement cost PostgreSQL 57 buffers and 11.5 WAL records per
-- delivery, a batched job queue's fetch and delete 33 and 6.6; the plan of one round put four
-- fifths of its buffers in those two updates.
--
-- Now a row of delivery_queue exists while its delivery is unfinished (pending, delivering,
-- failed): inserted with the delivery, leased by the claim, freed again by a retry or a lease given
-- back, deleted with the outcome that ends it. Its two indexes hold only what the claim reads: the
-- due deliveries of each webhook, in order, and the held ones by worker. webhook_deliveries keeps
-- its key, the list and the uniqueness, none of which a delivery's state changes, so both writes of
-- a delivery's row can be heap-only (room is left on each page for them: fillfactor 70).
--
-- Every statement that changes a delivery's state writes both tables (src/delivery/store.ts,
-- replay.ts, the test endpoint, the publisher below). A delivery deleted takes its queue row with
-- it.
CREATE TABLE delivery_queue (
  id uuid PRIMARY KEY REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  webhook_id uuid NOT NULL,
  event_id uuid NOT NULL,
  next_retry_at timestamptz(3) NOT NULL,
  -- A worker's claim: the delivery is due again when the lease ends unrecorded.
  lease_owner uuid,
  lease_token uuid,
  lease_until timestamptz(3)
) WITH (
  -- Every row is written two or three times and deleted within seconds: vacuumed as it churns.
  autovacuum_vacuum_scale_factor = 0,
  autovacuum_vacuum_threshold = 2000,
  autovacuum_analyze_scale_factor = 0.05
);
CREATE INDEX delivery_queue_due ON delivery_queue (webhook_id, next_retry_at, event_id)
  WHERE lease_owner IS NULL;
CREATE INDEX delivery_queue_held ON delivery_queue (webhook_id, lease_owner)
  WHERE lease_owner IS NOT NULL;

INSERT INTO delivery_queue (id, webhook_id, event_id, next_retry_at, lease_owner, lease_token, lease_until)
SELECT id, webhook_id, event_id, coalesce(next_retry_at, now()),
       CASE WHEN status = 'delivering' THEN coalesce(lease_owner, gen_random_uuid()) END,
       CASE WHEN status = 'delivering' THEN lease_token END,
       CASE WHEN status = 'delivering' THEN coalesce(lease_until, now()) END
FROM webhook_deliveries WHERE status IN ('pending', 'delivering', 'failed');

DROP INDEX webhook_deliveries_queue;
DROP INDEX webhook_deliveries_in_flight;
ALTER TABLE webhook_deliveries DROP COLUMN lease_owner, DROP COLUMN lease_token, DROP COLUMN lease_until;
ALTER TABLE webhook_deliveries SET (fillfactor = 70);

-- The publisher queues each delivery it fans out. Otherwise as in migration 004.
CREATE OR REPLACE FUNCTION publish_outbox(batch integer, wait boolean)
RETURNS TABLE (events integer, deliveries integer, busy boolean)
LANGUAGE plpgsql AS $$
DECLARE
  stamp_ms bigint;
  n_events integer;
  n_deliveries integer;
BEGIN
  IF wait THEN
    PERFORM pg_advisory_xact_lock(734110902);
  ELSIF NOT pg_try_advisory_xact_lock(734110902) THEN
    RETURN QUERY SELECT 0, 0, true;
    RETURN;
  END IF;
  SELECT greatest((extract(epoch FROM clock_timestamp()) * 1000)::int8,
                  coalesce((SELECT (extract(epoch FROM max(e.created_at)) * 1000)::int8 FROM events e), 0) + 1)
  INTO stamp_ms;
  WITH pending AS (
    SELECT o.*, (row_number() OVER (ORDER BY o.seq) - 1)::int AS pos
    FROM (SELECT * FROM event_outbox ORDER BY seq LIMIT batch) o
  ), stamped AS (
    SELECT p.*, ordered_event_id(stamp_ms, p.pos) AS event_id FROM pending p
  ), logged AS (
    INSERT INTO events (id, organization_id, type, resource_type, resource_id, changes, previous_status,
                        reference, created_at)
    SELECT s.event_id, s.organization_id, s.type, 'booking', s.resource_id, s.changes, s.previous_status,
           s.reference, to_timestamp(stamp_ms / 1000.0)
    FROM stamped s
    RETURNING id, organization_id, type
  ), fanned AS (
    -- Active webhooks of active integrations, in organizations with webhooks on, subscribed to the
    -- type. A booking event also needs the integration to read bookings: the body is a booking.
    INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, next_retry_at)
    SELECT w.id, e.id, e.type, now()
    FROM logged e
    JOIN organizations org ON org.id = e.organization_id AND org.webhooks_enabled AND org.api_enabled
    JOIN webhooks w ON w.organization_id = e.organization_id AND w.active
      AND (w.events @> ARRAY[e.type] OR w.events @> ARRAY['*'])
    JOIN integrations i ON i.id = w.integration_id AND i.status = 'active'
      AND 'bookings:read' = ANY (i.scopes)
    ON CONFLICT ON CONSTRAINT webhook_deliveries_once DO NOTHING
    RETURNING id, webhook_id, event_id, next_retry_at
  ), queued AS (
    INSERT INTO delivery_queue (id, webhook_id, event_id, next_retry_at)
    SELECT f.id, f.webhook_id, f.event_id, f.next_retry_at FROM fanned f
  ), kept AS (
    -- Personal data is kept only for the events a delivery will need it for.
    INSERT INTO event_payloads (event_id, booking)
    SELECT s.event_id, s.booking FROM stamped s
    WHERE s.booking IS NOT NULL AND s.event_id IN (SELECT f.event_id FROM fanned f)
  ), emptied AS (
    DELETE FROM event_outbox o WHERE o.id IN (SELECT s.id FROM stamped s)
  )
  SELECT (SELECT count(*) FROM stamped), (SELECT count(*) FROM fanned) INTO n_events, n_deliveries;
  IF n_deliveries > 0 THEN
    PERFORM pg_notify('svc_deliveries', current_schema());
  END IF;
  RETURN QUERY SELECT n_events, n_deliveries, false;
END
$$;

ALTER FUNCTION publish_outbox(integer, boolean) SET enable_seqscan = off;

-- What a worker may take of a webhook, counted from the queue. Otherwise as in migration 012.
CREATE OR REPLACE FUNCTION claim_slots(
  hook uuid, worker uuid, ending uuid[], hold integer, bound integer, share_after_ms integer,
  OUT room integer, OUT cap integer
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  mine integer;
  others integer;
  oldest timestamptz;
BEGIN
  room := 0;
  cap := 0;
  IF NOT pg_try_advisory_xact_lock(734110903, hashtext(hook::text)) THEN
    PERFORM set_config('svc.claim_skipped', 'on', true);
    RETURN;
  END IF;
  SELECT count(*) FILTER (WHERE q.lease_owner = worker),
         count(*) FILTER (WHERE q.lease_owner <> worker)
  INTO mine, others
  FROM delivery_queue q
  WHERE q.webhook_id = hook AND q.lease_owner IS NOT NULL AND q.id <> ALL (ending);
  cap := greatest(bound - others, 0);
  IF others = 0 OR (hold > bound AND mine >= others AND others < bound) THEN
    room := greatest(hold - mine, 0);
    RETURN;
  END IF;
  SELECT q.next_retry_at INTO oldest
  FROM delivery_queue q
  WHERE q.webhook_id = hook AND q.lease_owner IS NULL
  ORDER BY q.next_retry_at, q.event_id
  LIMIT 1;
  IF oldest IS NULL OR oldest > now() - make_interval(secs => share_after_ms / 1000.0) THEN
    RETURN;
  END IF;
  room := greatest(bound - mine - others, 0);
END
$$;

-- The delivery engine at platform scale.
--
-- Event order: the outbox is read in the order its rows were written. A millisecond stamp with a
-- random id as tie-break put changes made in one round trip out of order; an identity column is
-- assigned at each insert, so the changes of one transaction keep their order, and the publisher
-- stamps events in that order.
ALTER TABLE event_outbox ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
DROP INDEX event_outbox_order;
CREATE INDEX event_outbox_order ON event_outbox (seq);

-- The queue, per webhook: the claim walks the webhooks that have waiting deliveries and takes
-- each one's oldest due rows from this index, so one webhook's backlog never hides another's.
-- Events ids sort like the events, so ties of one due time come out in event order.
CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (webhook_id, next_retry_at, event_id)
  WHERE status IN ('pending', 'failed');
-- What each webhook has in flight, for the per-webhook bound, and which worker holds it: a worker
-- claims ahead (a local queue behind the attempts it is making) only for webhooks no other worker
-- holds, so the bound on attempts in flight stays global.
ALTER TABLE webhook_deliveries ADD COLUMN lease_owner uuid;
CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (webhook_id, lease_owner)
  WHERE status = 'delivering';

-- How many deliveries of a webhook a worker's claim may take: none while another worker holds some
-- (that worker bounds the webhook's attempts in flight), else up to `per_webhook` counting what it
-- holds already, less the deliveries whose outcome it is writing at the same moment (`ending`).
-- Claims take turns under an advisory lock taken here, held until the claim commits; a volatile
-- function counts with a snapshot taken after the lock, so a claim sees every claim that committed
-- before it, even those after its own statement began: two workers never both find a webhook free.
CREATE FUNCTION claim_room(hook uuid, worker uuid, ending uuid[], per_webhook integer) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  mine integer;
  others integer;
BEGIN
  PERFORM pg_advisory_xact_lock(734110903);
  SELECT count(*) FILTER (WHERE d.lease_owner = worker),
         count(*) FILTER (WHERE d.lease_owner IS DISTINCT FROM worker)
  INTO mine, others
  FROM webhook_deliveries d
  WHERE d.webhook_id = hook AND d.status = 'delivering' AND d.id <> ALL (ending);
  IF others > 0 THEN
    RETURN 0;
  END IF;
  RETURN greatest(per_webhook - mine, 0);
END
$$;

-- An operator's replay puts a dead delivery back under its id; its attempts then count again from
-- the attempt it had reached (the retry schedule starts over, attempt keeps growing).
ALTER TABLE webhook_deliveries ADD COLUMN replayed_from integer NOT NULL DEFAULT 0;

-- A failure is now a delivery that ended dead, no longer an attempt: counts kept under the old rule
-- start again from 0.
UPDATE webhooks SET consecutive_failures = 0 WHERE active;

-- A booking as webhook bodies carry it: the row without its stored-only columns, with the names of
-- what it links to taken now, so a body shows the driver the change assigned even if the driver is
-- renamed later. One definition for the trigger and for an operator's replay.
CREATE FUNCTION booking_snapshot(r bookings) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT (to_jsonb(r) - 'internal' - 'updated_at') || jsonb_build_object(
    'customer_name', (SELECT c.name FROM customers c WHERE c.id = r.customer_id),
    'driver_name', (SELECT d.name FROM drivers d WHERE d.id = r.driver_id),
    'driver_nickname', (SELECT d.nickname FROM drivers d WHERE d.id = r.driver_id),
    'vehicle_plate', (SELECT v.plate FROM vehicles v WHERE v.id = r.vehicle_id),
    'vehicle_model', (SELECT v.model FROM vehicles v WHERE v.id = r.vehicle_id))
$$;

-- The trigger of 003, taking its snapshot from booking_snapshot().
CREATE OR REPLACE FUNCTION bookings_emit_events() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  kind text;
  changed text[] := '{}';
  prev_status text;
  r bookings;
  orgs uuid[];
  snapshot jsonb;
BEGIN
  IF TG_OP = 'INSERT' THEN
    kind := 'booking.created';
    r := NEW;
    orgs := ARRAY[NEW.originator_organization_id, NEW.executor_organization_id];
  ELSIF TG_OP = 'DELETE' THEN
    kind := 'booking.deleted';
    prev_status := OLD.status;
    r := OLD;
    orgs := ARRAY[OLD.originator_organization_id, OLD.executor_organization_id];
  ELSE
    SELECT coalesce(array_agg(n.key ORDER BY n.key), '{}') INTO changed
    FROM jsonb_each(to_jsonb(NEW)) AS n
    WHERE n.key NOT IN ('internal', 'updated_at')
      AND n.value IS DISTINCT FROM (to_jsonb(OLD) -> n.key);
    IF cardinality(changed) = 0 THEN
      RETURN NULL;
    END IF;
    kind := booking_event_type(OLD, NEW, changed);
    prev_status := OLD.status;
    r := NEW;
    -- An executor that loses the booking is told too (its next read is a 404).
    orgs := ARRAY[NEW.originator_organization_id, NEW.executor_organization_id, OLD.executor_organization_id];
  END IF;

  IF NOT EXISTS (SELECT 1 FROM organizations o WHERE o.id = ANY (orgs) AND o.outbox_enabled) THEN
    RETURN NULL;
  END IF;

  snapshot := booking_snapshot(r);

  INSERT INTO event_outbox (organization_id, type, resource_id, changes, previous_status, reference, booking)
  SELECT o.id, kind, r.id, changed, prev_status, r.reference, snapshot
  FROM organizations o
  WHERE o.id = ANY (orgs) AND o.outbox_enabled;
  -- Wakes the publishers; notifications of one transaction are delivered once, at commit.
  PERFORM pg_notify('svc_outbox', current_schema());
  RETURN NULL;
END
$$;

-- An event id that sorts like the event: the stamp's milliseconds, then the position in its batch,
-- then randomness (the layout of a version-7 UUID; the variant bits are gen_random_uuid()'s). Events
-- of one batch share a stamp, so the log's tie-break by id keeps them in the order they happened.
CREATE FUNCTION ordered_event_id(stamp_ms bigint, pos integer) RETURNS uuid
LANGUAGE sql VOLATILE AS $$
  SELECT encode(
    set_byte(set_byte(
      overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send(stamp_ms) FROM 3 FOR 6) FROM 1 FOR 6),
      6, 112 | ((pos >> 8) & 15)),
      7, pos & 255),
    'hex')::uuid
$$;

-- The publisher (src/delivery/publish.ts): moves up to `batch` committed events from the outbox
-- into the log and fans each out to the webhooks subscribed to it, under one advisory lock, in one
-- call: the lock is held for one round trip, not ten. Without `wait` it returns busy at once when
-- another publisher holds the lock. Every batch is stamped later than the database's clock and than
-- everything already in the log, so the log only grows at its head.
CREATE FUNCTION publish_outbox(batch integer, wait boolean)
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
    RETURNING event_id
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

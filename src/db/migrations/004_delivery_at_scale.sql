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

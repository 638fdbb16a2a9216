-- Webhooks and their deliveries, and an event log that a late commit cannot slip behind.
--
-- Events are no longer written to `events` by the booking trigger. The trigger writes them to
-- `event_outbox`, in the transaction of the change, together with the booking as it stood right
-- after the change (before it, for a deletion). A publisher (src/delivery/publish.ts) moves
-- committed outbox rows into `events` under one advisory lock, stamping each batch later than
-- everything published before. A transaction that commits late therefore lands on top of the log,
-- never behind an event a reader has already seen, and the same step fans the event out to the
-- webhooks subscribed to it, exactly once per (webhook, event).

CREATE TABLE event_outbox (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  type text NOT NULL,
  resource_id uuid NOT NULL,
  changes text[] NOT NULL DEFAULT '{}',
  previous_status text,
  reference text,
  -- The booking for webhook bodies: personal data, kept only until its deliveries are final.
  booking jsonb,
  occurred_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX event_outbox_order ON event_outbox (occurred_at, id);

-- The booking an event's webhook bodies are built from, while a delivery may still need it.
CREATE TABLE event_payloads (
  event_id uuid PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
  booking jsonb NOT NULL
);

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

  -- The stored-only column never leaves the table; names of what it links to are taken now, so a
  -- body shows the driver the change assigned even if the driver is renamed later.
  snapshot := (to_jsonb(r) - 'internal' - 'updated_at') || jsonb_build_object(
    'customer_name', (SELECT c.name FROM customers c WHERE c.id = r.customer_id),
    'driver_name', (SELECT d.name FROM drivers d WHERE d.id = r.driver_id),
    'driver_nickname', (SELECT d.nickname FROM drivers d WHERE d.id = r.driver_id),
    'vehicle_plate', (SELECT v.plate FROM vehicles v WHERE v.id = r.vehicle_id),
    'vehicle_model', (SELECT v.model FROM vehicles v WHERE v.id = r.vehicle_id));

  INSERT INTO event_outbox (organization_id, type, resource_id, changes, previous_status, reference, booking)
  SELECT o.id, kind, r.id, changed, prev_status, r.reference, snapshot
  FROM organizations o
  WHERE o.id = ANY (orgs) AND o.outbox_enabled;
  -- Wakes the publishers; notifications of one transaction are delivered once, at commit.
  PERFORM pg_notify('svc_outbox', '');
  RETURN NULL;
END
$$;

CREATE TABLE webhooks (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  integration_id uuid NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  url text NOT NULL CHECK (length(url) BETWEEN 1 AND 500),
  events text[] NOT NULL CHECK (cardinality(events) > 0),
  description text CHECK (description IS NULL OR length(description) <= 200),
  active boolean NOT NULL DEFAULT true,
  consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
  disabled_at timestamptz(3),
  disabled_reason text,
  -- AES-256-GCM under a key derived from the master key: nonce (12) | tag (16) | ciphertext.
  secret bytea NOT NULL,
  previous_secret bytea,
  previous_secret_until timestamptz(3),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_integration ON webhooks (integration_id, created_at DESC, id DESC);
CREATE INDEX webhooks_fanout ON webhooks (organization_id) WHERE active;

CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  webhook_id uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  event_type text NOT NULL,
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'delivering', 'succeeded', 'failed', 'dead')),
  attempt integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL DEFAULT 8,
  -- When the next attempt is due (pending, failed); null once final.
  next_retry_at timestamptz(3),
  -- A worker's claim: the delivery returns to the queue when the lease ends unrecorded.
  lease_until timestamptz(3),
  lease_token uuid,
  last_status integer,
  last_error text,
  last_duration_ms integer NOT NULL DEFAULT 0,
  delivered_at timestamptz(3),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT webhook_deliveries_once UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_retry_at) WHERE status IN ('pending', 'failed');
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (lease_until) WHERE status = 'delivering';
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

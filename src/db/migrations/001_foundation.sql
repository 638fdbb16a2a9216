-- The foundation: tenants, integrations and their keys, the catalogue, bookings, the event log
-- (also the outbox that webhook delivery will read), external-id links, idempotency records and
-- cursor signing keys.
--
-- Timestamps are timestamptz(3): millisecond precision, so a value read into a JavaScript Date and
-- written back into a cursor compares equal to the stored one.

CREATE TABLE organizations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  code text NOT NULL UNIQUE CHECK (code ~ '^[1-9][0-9]{1,5}$'),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  api_enabled boolean NOT NULL DEFAULT true,
  webhooks_enabled boolean NOT NULL DEFAULT false,
  -- The contract's flag `integraciones_outbox`: the event log is written only while it is on.
  outbox_enabled boolean NOT NULL DEFAULT false,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE TABLE integrations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  kind text NOT NULL CHECK (kind IN ('erp', 'pms', 'crm', 'billing', 'fleet', 'bi', 'automation', 'custom')),
  scopes text[] NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled', 'revoked')),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX integrations_organization ON integrations (organization_id, created_at DESC, id DESC);

-- Only the SHA-256 of a key is stored; `prefix` is the part shown again after creation.
CREATE TABLE api_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  integration_id uuid NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
  name text CHECK (name IS NULL OR length(name) BETWEEN 1 AND 200),
  prefix text NOT NULL,
  secret_hash bytea NOT NULL UNIQUE,
  scopes text[] NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  expires_at timestamptz(3),
  revoked_at timestamptz(3),
  created_at timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_integration ON api_keys (integration_id, created_at DESC);

CREATE TABLE customer_groups (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name text NOT NULL
);

CREATE TABLE customers (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  external_id text,
  name text,
  type text NOT NULL CHECK (type IN ('account', 'public_engine')),
  active boolean NOT NULL DEFAULT true,
  group_id uuid REFERENCES customer_groups (id) ON DELETE SET NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  deleted_at timestamptz(3)
);
CREATE INDEX customers_list ON customers (organization_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX customers_list_active ON customers (organization_id, active, created_at DESC, id DESC)
  WHERE deleted_at IS NULL;

CREATE TABLE drivers (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  external_id text,
  name text,
  nickname text,
  phone text,
  active boolean NOT NULL DEFAULT true,
  status text,
  has_app_access boolean NOT NULL DEFAULT false,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX drivers_list ON drivers (organization_id, created_at DESC, id DESC);
CREATE INDEX drivers_list_active ON drivers (organization_id, active, created_at DESC, id DESC);

CREATE TABLE vehicles (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  external_id text,
  plate text,
  model text,
  nickname text,
  category text CHECK (category IN ('sedan', 'van', 'sedan_vip', 'van_vip')),
  seats integer CHECK (seats >= 0),
  luggage integer CHECK (luggage >= 0),
  wheelchair_adapted boolean NOT NULL DEFAULT false,
  eco_label text,
  propulsion text,
  active boolean NOT NULL DEFAULT true,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX vehicles_list ON vehicles (organization_id, created_at DESC, id DESC);
CREATE INDEX vehicles_list_active ON vehicles (organization_id, active, created_at DESC, id DESC);

-- A booking belongs to the organization that originated it and, when another company executes it,
-- also to that executor (the exchange). executor_organization_id is null when the originator
-- executes it itself. The `internal` column holds what is stored but never exposed (notes,
-- observations, chat, pick-up sign, GPS position).
CREATE TABLE bookings (
  id uuid PRIMARY KEY,
  originator_organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  executor_organization_id uuid REFERENCES organizations (id) ON DELETE SET NULL,
  reference text NOT NULL UNIQUE CHECK (reference ~ '^[0-9]{1,32}$'),
  status text NOT NULL CHECK (status IN ('solicitada', 'no_segura', 'confirmada', 'en_camino', 'en_curso',
    'completada', 'cancelada', 'no_show', 'rechazada')),
  service_type text NOT NULL CHECK (service_type IN ('transfer', 'hourly')),
  hours numeric(6, 2) CHECK (hours IS NULL OR hours > 0),
  pickup_at timestamptz(3) NOT NULL,
  end_at timestamptz(3),
  pickup jsonb,
  destination jsonb,
  distance_km numeric(10, 2) CHECK (distance_km IS NULL OR distance_km >= 0),
  flight jsonb,
  passengers jsonb NOT NULL,
  vehicle_category text CHECK (vehicle_category IN ('sedan', 'van', 'sedan_vip', 'van_vip')),
  customer_id uuid REFERENCES customers (id),
  driver_id uuid REFERENCES drivers (id) ON DELETE SET NULL,
  vehicle_id uuid REFERENCES vehicles (id) ON DELETE SET NULL,
  channel text CHECK (channel IN ('customer_engine', 'public_engine', 'manual', 'bulk_upload', 'recurring', 'api')),
  confirmation_mode text,
  confirmed_at timestamptz(3),
  event_reference text,
  passenger jsonb,
  pricing jsonb,
  internal jsonb,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  CHECK (executor_organization_id IS DISTINCT FROM originator_organization_id)
);
-- Keyset lists: one index per side of the exchange; the list query merges both.
CREATE INDEX bookings_originator ON bookings (originator_organization_id, created_at DESC, id DESC);
CREATE INDEX bookings_executor ON bookings (executor_organization_id, created_at DESC, id DESC)
  WHERE executor_organization_id IS NOT NULL;
CREATE INDEX bookings_customer ON bookings (customer_id, created_at DESC, id DESC) WHERE customer_id IS NOT NULL;
CREATE INDEX bookings_originator_pickup ON bookings (originator_organization_id, pickup_at);
CREATE INDEX bookings_executor_pickup ON bookings (executor_organization_id, pickup_at)
  WHERE executor_organization_id IS NOT NULL;
CREATE INDEX bookings_driver ON bookings (driver_id) WHERE driver_id IS NOT NULL;
CREATE INDEX bookings_vehicle ON bookings (vehicle_id) WHERE vehicle_id IS NOT NULL;

-- One external id per integration per booking; an external id names one booking per integration.
-- The unique index, not a read before the write, decides a 409.
CREATE TABLE booking_external_ids (
  integration_id uuid NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
  booking_id uuid NOT NULL REFERENCES bookings (id) ON DELETE CASCADE,
  external_id text NOT NULL CHECK (external_id ~ '^[ -~]{1,200}$'),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (integration_id, booking_id),
  CONSTRAINT booking_external_ids_value UNIQUE (integration_id, external_id)
);
CREATE INDEX booking_external_ids_booking ON booking_external_ids (booking_id);

-- The event log, one row per involved organization. It is written by the trigger below in the
-- same transaction as the booking change, and is the outbox webhook delivery reads.
CREATE TABLE events (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  type text NOT NULL,
  version integer NOT NULL DEFAULT 1,
  resource_type text NOT NULL DEFAULT 'booking',
  resource_id uuid NOT NULL,
  changes text[] NOT NULL DEFAULT '{}',
  previous_status text,
  reference text,
  created_at timestamptz(3) NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX events_list ON events (organization_id, created_at DESC, id DESC);
CREATE INDEX events_list_type ON events (organization_id, type, created_at DESC, id DESC);
CREATE INDEX events_list_resource ON events (organization_id, resource_id, created_at DESC, id DESC);
CREATE INDEX events_retention ON events (created_at);

-- Columns whose change is never announced: stored-only data and bookkeeping.
CREATE FUNCTION booking_event_type(old_row bookings, new_row bookings, changed text[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN 'status' = ANY (changed) AND new_row.status = 'completada' THEN 'booking.completed'
    WHEN 'status' = ANY (changed) AND new_row.status = 'cancelada' THEN 'booking.cancelled'
    WHEN 'status' = ANY (changed) AND new_row.status = 'no_show' THEN 'booking.no_show'
    WHEN 'status' = ANY (changed) AND new_row.status IN ('en_camino', 'en_curso')
      AND old_row.status NOT IN ('en_camino', 'en_curso') THEN 'booking.started'
    WHEN changed && ARRAY['driver_id', 'vehicle_id', 'executor_organization_id'] THEN 'booking.assigned'
    ELSE 'booking.updated'
  END
$$;

CREATE FUNCTION bookings_emit_events() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  kind text;
  changed text[] := '{}';
  prev_status text;
  ref text;
  booking_id uuid;
  orgs uuid[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    kind := 'booking.created';
    ref := NEW.reference;
    booking_id := NEW.id;
    orgs := ARRAY[NEW.originator_organization_id, NEW.executor_organization_id];
  ELSIF TG_OP = 'DELETE' THEN
    kind := 'booking.deleted';
    prev_status := OLD.status;
    ref := OLD.reference;
    booking_id := OLD.id;
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
    ref := NEW.reference;
    booking_id := NEW.id;
    -- An executor that loses the booking is told too (its next read is a 404).
    orgs := ARRAY[NEW.originator_organization_id, NEW.executor_organization_id, OLD.executor_organization_id];
  END IF;

  INSERT INTO events (organization_id, type, resource_id, changes, previous_status, reference)
  SELECT o.id, kind, booking_id, changed, prev_status, ref
  FROM organizations o
  WHERE o.id = ANY (orgs) AND o.outbox_enabled;
  RETURN NULL;
END
$$;

CREATE TRIGGER bookings_events
AFTER INSERT OR UPDATE OR DELETE ON bookings
FOR EACH ROW EXECUTE FUNCTION bookings_emit_events();

-- Idempotency-Key records, scoped to integration + method + route template.
CREATE TABLE idempotency_keys (
  integration_id uuid NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
  method text NOT NULL,
  route text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  claimed_at timestamptz(3) NOT NULL DEFAULT now(),
  completed_at timestamptz(3),
  response_status integer,
  response_headers jsonb,
  response_body text,
  PRIMARY KEY (integration_id, method, route, key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (claimed_at);

-- Cursor signing keys. Only the id is stored: the signing secret is derived from the master key
-- and the id, so the database never holds it. Rotation retires every older key at once.
CREATE TABLE cursor_keys (
  id serial PRIMARY KEY,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  retired_at timestamptz(3)
);
INSERT INTO cursor_keys DEFAULT VALUES;

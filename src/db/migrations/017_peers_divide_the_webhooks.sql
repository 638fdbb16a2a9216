-- svc-migrate: stop-the-fleet
-- Delivery workers are peers that divide the webhooks among them: the webhooks are hashed into 64
-- partitions, and each partition has at most one owner, a live worker. A worker beats every few
-- seconds (delivery_worker_beat, src/db/engine.sql); one whose beat stops for its lease is dead,
-- its partitions are free and its leases go back to the queue. Functions live in src/db/engine.sql,
-- applied by every `svc migrate`; this file holds the schema only.
--
-- Processes of the previous build claim through claim_slots, dropped here: `svc migrate` refuses
-- to apply this file while any of them runs (the marker on the first line).

CREATE TABLE delivery_workers (
  id uuid PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  -- The last migration the worker's code knows: `svc migrate` names it when it refuses.
  build text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  seen_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE delivery_partitions (
  partition smallint PRIMARY KEY,
  owner uuid REFERENCES delivery_workers (id) ON DELETE SET NULL
);
INSERT INTO delivery_partitions (partition) SELECT generate_series(0, 63);
CREATE INDEX delivery_partitions_owner ON delivery_partitions (owner);

-- A webhook's partition: the last byte of its id (random in every uuid the service makes), modulo
-- 64. Part of the queue's schema (a stored column), so it never changes.
CREATE FUNCTION webhook_partition(webhook uuid) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT (get_byte(uuid_send(webhook), 15) % 64)::smallint $$;
ALTER TABLE delivery_queue ADD COLUMN partition smallint GENERATED ALWAYS AS (webhook_partition(webhook_id)) STORED;

-- The claim walks the webhooks with waiting deliveries of each partition it owns, in order.
DROP INDEX delivery_queue_due;
CREATE INDEX delivery_queue_due ON delivery_queue (partition, webhook_id, next_retry_at, event_id)
  WHERE lease_owner IS NULL;
-- Leases by worker: a dead worker's are given back, and the on-call views count what is held.
DROP INDEX delivery_queue_held;
CREATE INDEX delivery_queue_held ON delivery_queue (webhook_id) WHERE lease_owner IS NOT NULL;
CREATE INDEX delivery_queue_owner ON delivery_queue (lease_owner) WHERE lease_owner IS NOT NULL;

-- Functions no longer called (the claim of the leader and standby engine, and its older forms).
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure FROM pg_proc p
    WHERE p.proname IN ('claim_room', 'claim_slots') AND p.pronamespace = current_schema()::regnamespace
  LOOP
    EXECUTE 'DROP FUNCTION ' || f;
  END LOOP;
END
$$;

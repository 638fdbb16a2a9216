-- The publisher and the claim's share check read by key, whatever the tables held when their plans
-- were made.
--
-- PL/pgSQL plans a function's statements and the connection keeps the plans. A plan made while the
-- outbox was nearly empty read it whole, and the outbox is where every write leaves a row that the
-- next publish deletes: between two vacuums it is mostly dead rows, which a whole read visits at
-- every publish (`auto_explain` at 200 feed writes a second: the outbox read whole in the publishes
-- that took longest). The engine's own connections plan the same way (enable_seqscan off,
-- src/db/db.ts); the publisher runs on the API's connections, so the setting goes with it.
ALTER FUNCTION publish_outbox(integer, boolean) SET enable_seqscan = off;

-- claim_room's share check asked whether any due delivery of the webhook had waited share_after_ms,
-- which the index of every webhook's due times (webhook_deliveries_due) answers as well as the
-- queue's, as far as a plan made on small tables can tell; the plan read the due times of every
-- webhook, 5 ms a claim at 200 events/s, while the claim held the webhook's lock, and the claims of
-- the worker holding that webhook skipped it meanwhile (serve + 1 svc worker: p99 commit to arrival
-- 78 to 107 ms against 16). The oldest due delivery of the webhook, in the queue index's own order,
-- has one plan only: one step down webhook_deliveries_queue. Otherwise as in migration 007.
CREATE OR REPLACE FUNCTION claim_room(
  hook uuid, worker uuid, ending uuid[], hold integer, bound integer, share_after_ms integer
) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  mine integer;
  others integer;
  oldest timestamptz;
BEGIN
  IF NOT pg_try_advisory_xact_lock(734110903, hashtext(hook::text)) THEN
    PERFORM set_config('svc.claim_skipped', 'on', true);
    RETURN 0;
  END IF;
  SELECT count(*) FILTER (WHERE d.lease_owner = worker),
         count(*) FILTER (WHERE d.lease_owner IS DISTINCT FROM worker)
  INTO mine, others
  FROM webhook_deliveries d
  WHERE d.webhook_id = hook AND d.status = 'delivering' AND d.id <> ALL (ending);
  IF others = 0 THEN
    RETURN greatest(hold - mine, 0);
  END IF;
  SELECT d.next_retry_at INTO oldest
  FROM webhook_deliveries d
  WHERE d.webhook_id = hook AND d.status IN ('pending', 'failed')
  ORDER BY d.next_retry_at, d.event_id
  LIMIT 1;
  IF oldest IS NULL OR oldest > now() - make_interval(secs => share_after_ms / 1000.0) THEN
    RETURN 0;
  END IF;
  RETURN greatest(bound - mine - others, 0);
END
$$;

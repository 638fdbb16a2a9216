-- A worker standing by takes a webhook no one holds once its deliveries wait.
--
-- A worker standing by (the embedded worker of `svc serve` while a `svc worker` is at work, or a
-- `svc worker` while another one leads: src/delivery/standby.ts) claims with `hold` = 0. Under 012
-- that gave it only shares of webhooks other workers held, once their holder fell behind; a
-- webhook no one held gave it nothing (`hold` - `mine`), whatever its deliveries had waited. With
-- one worker leading, that left every webhook the leader could not hold (its hold is bounded, a
-- backlog across many webhooks is not) to the leader alone, however many workers stood by.
--
-- Now a webhook no one holds gives a worker standing by what a sharer gets once its oldest due
-- delivery has waited `share_after_ms`: up to `bound` in flight, none queued ahead. A worker
-- that claims ahead (`hold` > 0) is unchanged.
CREATE OR REPLACE FUNCTION claim_slots(
  hook uuid, worker uuid, ending uuid[], hold integer, bound integer, share_after_ms integer,
  OUT room integer, OUT cap integer
)
LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off AS $$
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
  IF hold > 0 AND (others = 0 OR (hold > bound AND mine >= others AND others < bound)) THEN
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

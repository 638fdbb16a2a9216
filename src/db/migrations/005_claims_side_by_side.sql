-- Claims of different webhooks no longer take turns. 004's claim_room took one advisory lock for
-- every claim, so a worker whose claim found nothing (every webhook held by another worker) still
-- made the holder's next claim wait for its commit. Now the lock is the webhook's own, and only
-- tried: a webhook whose lock another claim holds is being claimed right now by that claim, which
-- counts and takes for it, so this claim leaves it alone (0) instead of waiting, and says so in the
-- transaction's setting svc.claim_skipped: the other claim may leave that webhook too (it found
-- this worker's deliveries there, whose outcomes this worker is writing), so the skipping worker
-- claims again shortly instead of waiting for the next notification. Two workers still never both
-- find a webhook free: whoever holds its lock counts with a snapshot taken after taking it, and
-- keeps it until its claim commits.
CREATE OR REPLACE FUNCTION claim_room(hook uuid, worker uuid, ending uuid[], per_webhook integer) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  mine integer;
  others integer;
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
  IF others > 0 THEN
    RETURN 0;
  END IF;
  RETURN greatest(per_webhook - mine, 0);
END
$$;

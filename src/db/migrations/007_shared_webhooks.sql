-- Workers share a webhook instead of leaving it to the one that holds some of its deliveries.
--
-- Under 005 a webhook with deliveries held by one worker gave every other worker nothing. A claim
-- takes each webhook's oldest deliveries in turns, a few from every webhook with work, so one
-- worker's claim came to hold a few deliveries of every webhook, and a second worker found none
-- free: with 24 webhooks whose receivers answer in 100 ms, one worker delivered 315/s and two or
-- three workers delivered the same (bench/webhooks.ts, slow drain). A worker added nothing.
--
-- Now a webhook held by this worker alone gives it up to `hold` (its attempts in flight and a local
-- queue behind them, as before). A webhook that another worker holds deliveries of is shared once
-- that worker is not keeping up, that is once its oldest due delivery has waited `share_after_ms`:
-- it then gives up to `bound` held in all, by every worker together, and no queue ahead, so the
-- attempts in flight of a webhook never exceed `bound` however many workers share it. A worker that
-- holds `bound` or more alone keeps the webhook to itself. A holder that keeps up keeps its webhook
-- too: sharing a webhook whose deliveries are taken as they come would only make every worker claim
-- at every event (measured: two workers beside serve at 200 events/s went from 9 to 342 ms at the
-- median). Counting still happens under the webhook's tried lock with a snapshot taken after it, so
-- two claims never both count the same room.
--
-- The four-argument claim_room of 005 stays for the workers of the previous release during a
-- rolling start; it is the same rule without sharing, and the two together keep the bound.
CREATE FUNCTION claim_room(
  hook uuid, worker uuid, ending uuid[], hold integer, bound integer, share_after_ms integer
) RETURNS integer
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
  IF others = 0 THEN
    RETURN greatest(hold - mine, 0);
  END IF;
  IF NOT EXISTS (
    SELECT 1 FROM webhook_deliveries d
    WHERE d.webhook_id = hook AND d.status IN ('pending', 'failed')
      AND d.next_retry_at <= now() - make_interval(secs => share_after_ms / 1000.0)
  ) THEN
    RETURN 0;
  END IF;
  RETURN greatest(bound - mine - others, 0);
END
$$;

-- The worker that holds most of a webhook keeps a queue of it once another worker shares it.
--
-- Under 007 a webhook that two workers hold deliveries of gives each only a share of its bound
-- (`bound` held in all, none queued ahead). On a fast receiver's backlog, a second worker that took
-- a share while the first one's queue ran low turned the first into a sharer as well: from then on
-- neither held a delivery ahead, and each attempt of that webhook waited for a claim's round trip
-- (serve and two svc workers, 2 cores: 3,007 deliveries/s against 3,662 with one svc worker).
--
-- Now a worker that claims ahead (`hold` above `bound`) and holds at least as many of the webhook
-- as all other workers together, while they hold fewer than `bound`, keeps claiming ahead (up to
-- `hold`), and `cap` says how many of its attempts may be in flight at once: `bound` less what the
-- others hold. A sole holder gets `cap` = `bound`; a sharer, what it may hold in all. A worker
-- starts an attempt of the webhook only while its attempts in flight are below the `cap` of its
-- latest claim that gave it deliveries of the webhook. A worker whose slots are all busy asks
-- with `hold` = `bound` (it claims only for the slots that free up): sharing among such workers is
-- as under 007.
--
-- Why the bound still holds for all workers together: a worker's attempts in flight are never
-- more than it holds, nor more than the cap of its latest claim that gave it deliveries of the
-- webhook; claims of one webhook never run at once (its tried lock), and each counts everything
-- the other workers hold, their attempts in flight among it. A holder's cap leaves the others what
-- they hold; a sharer takes no more than what the others' holdings leave; and a worker whose cap
-- was set before another's claim took deliveries can start attempts only from what it held then,
-- which that claim counted. `webhooks/claim-ahead` checks the sum after every step of three
-- workers claiming, starting and ending attempts in a seeded random order.
CREATE FUNCTION claim_slots(
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
  SELECT count(*) FILTER (WHERE d.lease_owner = worker),
         count(*) FILTER (WHERE d.lease_owner IS DISTINCT FROM worker)
  INTO mine, others
  FROM webhook_deliveries d
  WHERE d.webhook_id = hook AND d.status = 'delivering' AND d.id <> ALL (ending);
  cap := greatest(bound - others, 0);
  IF others = 0 OR (hold > bound AND mine >= others AND others < bound) THEN
    room := greatest(hold - mine, 0);
    RETURN;
  END IF;
  SELECT d.next_retry_at INTO oldest
  FROM webhook_deliveries d
  WHERE d.webhook_id = hook AND d.status IN ('pending', 'failed')
  ORDER BY d.next_retry_at, d.event_id
  LIMIT 1;
  IF oldest IS NULL OR oldest > now() - make_interval(secs => share_after_ms / 1000.0) THEN
    RETURN;
  END IF;
  room := greatest(bound - mine - others, 0);
END
$$;

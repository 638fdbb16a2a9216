-- The delivery engine's functions, whole. `svc migrate` (and `svc serve` as it starts) applies this
-- file after the migrations, every time it changed: the definitions here are the ones in force.
-- The tables are the migrations' (003, 014, 015, 017, 020, 021).
--
-- The engine in four steps:
--   1. A writer commits a booking change: a trigger puts its event in event_outbox. The writer (or a
--      worker, for what a writer left behind) runs publish_outbox: events enter the log and are fanned
--      out to the subscribed webhooks as deliveries, each with a row in delivery_queue.
--   2. Every worker beats (delivery_worker_beat): the 64 partitions of the webhooks are divided among
--      the live workers by the webhooks in each, each partition owned by one at a time.
--   3. A worker exchanges (delivery_exchange): writes which of its leases it sent and the outcomes of
--      its attempts that ended, then leases due deliveries of the webhooks it owns, fairly, ahead of
--      its attempts.
--   4. Leases whose worker died, hung or stopped go back to the queue (delivery_give_back), the
--      attempt counted when it was sent: the receiver may have had it.

-- An event id that sorts like the event: the stamp's milliseconds, then the position in its batch,
-- then randomness (the layout of a version-7 UUID; the variant bits are gen_random_uuid()'s). Events
-- of one batch share a stamp, so the log's tie-break by id keeps them in the order they happened.
CREATE OR REPLACE FUNCTION ordered_event_id(stamp_ms bigint, pos integer) RETURNS uuid
LANGUAGE sql VOLATILE AS $$
  SELECT encode(
    set_byte(set_byte(
      overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send(stamp_ms) FROM 3 FOR 6) FROM 1 FOR 6),
      6, 112 | ((pos >> 8) & 15)),
      7, pos & 255),
    'hex')::uuid
$$;

-- 1. The publisher (src/delivery/publish.ts): moves up to `batch` committed events from the outbox
-- into the log and fans each out to the webhooks subscribed to it, under one advisory lock of this
-- schema's (the log is the schema's; another schema's publishers do not wait for it), in one call. Without `wait` it returns busy at once when another publisher holds the lock. Every batch is
-- stamped later than the database's clock and than everything already in the log, so the log only
-- grows at its head (a reader that stops at the last event it saw never misses one).
CREATE OR REPLACE FUNCTION publish_outbox(batch integer, wait boolean)
RETURNS TABLE (events integer, deliveries integer, busy boolean)
LANGUAGE plpgsql AS $$
DECLARE
  stamp_ms bigint;
  n_events integer;
  n_deliveries integer;
  parts text;
BEGIN
  IF wait THEN
    PERFORM pg_advisory_xact_lock(734110902, hashtext(current_schema()));
  ELSIF NOT pg_try_advisory_xact_lock(734110902, hashtext(current_schema())) THEN
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
    RETURNING id, webhook_id, event_id, next_retry_at
  ), queued AS (
    INSERT INTO delivery_queue (id, webhook_id, event_id, next_retry_at)
    SELECT f.id, f.webhook_id, f.event_id, f.next_retry_at FROM fanned f
  ), kept AS (
    -- Personal data is kept only for the events a delivery will need it for.
    INSERT INTO event_payloads (event_id, booking)
    SELECT s.event_id, s.booking FROM stamped s
    WHERE s.booking IS NOT NULL AND s.event_id IN (SELECT f.event_id FROM fanned f)
  ), emptied AS (
    DELETE FROM event_outbox o WHERE o.id IN (SELECT s.id FROM stamped s)
  )
  SELECT (SELECT count(*) FROM stamped), (SELECT count(*) FROM fanned),
         (SELECT string_agg(DISTINCT webhook_partition(f.webhook_id)::text, ',') FROM fanned f)
  INTO n_events, n_deliveries, parts;
  IF n_deliveries > 0 THEN
    -- The partitions with new deliveries: a worker wakes only for its own.
    PERFORM pg_notify('svc_deliveries', current_schema() || ' ' || parts);
  END IF;
  RETURN QUERY SELECT n_events, n_deliveries, false;
END
$$;

ALTER FUNCTION publish_outbox(integer, boolean) SET enable_seqscan = off;

-- 2. A worker's beat: it says it lives, workers whose beat stopped for `lease_ms` are dead (their
-- partitions free, their leases given back), and the partitions go to their assignees. The
-- assignment is made again whenever a worker joined or left (delivery_divide); a worker lets go of
-- partitions assigned to another at once and takes those assigned to it once free, so each webhook
-- has one owner at a time; the attempts a previous owner still has in flight at a webhook count
-- against its bound for the next (delivery_exchange), so the bound holds across the handover. Beats
-- take turns under a lock of this schema's: an assignment is read and written whole. Each worker
-- has a lock of its own, which its exchanges hold shared: a beat lets a worker's partitions go (its
-- own beat, or another's that found it dead) only under that lock, between two of its exchanges,
-- never during one. Only a beat that moves partitions waits for it.
CREATE OR REPLACE FUNCTION delivery_worker_beat(worker uuid, host text, pid integer, build text, lease_ms integer)
RETURNS smallint[]
LANGUAGE plpgsql AS $$
DECLARE
  dead uuid[];
  divided boolean := false;
  freed integer := 0;
BEGIN
  -- A beat lost with a crash of the database is made again by the next: it need not wait for its
  -- commit to reach the disk (one fsync per worker and second, in the way of everything else).
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM pg_advisory_xact_lock(734110905, hashtext(current_schema()));
  INSERT INTO delivery_workers AS w (id, host, pid, build) VALUES (worker, host, pid, build)
  ON CONFLICT (id) DO UPDATE SET seen_at = now();
  dead := ARRAY(SELECT w.id FROM delivery_workers w WHERE w.seen_at < now() - make_interval(secs => lease_ms / 1000.0));
  IF cardinality(dead) > 0 THEN
    -- One taken for dead may only be late: an exchange of its under way ends first.
    PERFORM pg_advisory_xact_lock(734110906, hashtext(d.id::text)) FROM unnest(dead) AS d(id);
    DELETE FROM delivery_workers w WHERE w.id = ANY (dead);
    PERFORM delivery_give_back(ARRAY(SELECT q.id FROM delivery_queue q WHERE q.lease_owner = ANY (dead)),
                               'el proceso que lo hacía dejó de dar señales de vida');
  END IF;
  -- A worker left (its assignments went with it) or joined (it has none): assigned anew.
  IF EXISTS (SELECT 1 FROM delivery_partitions p WHERE p.assigned IS NULL)
     OR EXISTS (SELECT 1 FROM delivery_workers w
                WHERE NOT EXISTS (SELECT 1 FROM delivery_partitions p WHERE p.assigned = w.id))
        AND (SELECT count(*) FROM delivery_workers) <= 64 THEN
    PERFORM delivery_divide();
    divided := true;
  END IF;
  IF EXISTS (SELECT 1 FROM delivery_partitions p WHERE p.owner = worker AND p.assigned IS DISTINCT FROM worker) THEN
    PERFORM pg_advisory_xact_lock(734110906, hashtext(worker::text));
    UPDATE delivery_partitions p SET owner = NULL WHERE p.owner = worker AND p.assigned IS DISTINCT FROM worker;
    GET DIAGNOSTICS freed = ROW_COUNT;
  END IF;
  UPDATE delivery_partitions p SET owner = worker WHERE p.assigned = worker AND p.owner IS NULL;
  IF cardinality(dead) > 0 OR divided OR freed > 0 THEN
    -- The others look at the assignment again now, not at their next beat.
    PERFORM pg_notify('svc_workers', current_schema());
  END IF;
  RETURN ARRAY(SELECT p.partition FROM delivery_partitions p WHERE p.owner = worker ORDER BY p.partition);
END
$$;

-- The assignment of the partitions to the live workers, balanced by the active webhooks in each.
-- First, the largest first, a partition stays with the live worker it was assigned to while that
-- one stays within its share (the webhooks divided by the workers); then the rest, the largest
-- first, go each to the worker with the fewest webhooks so far (then the fewest partitions). Few
-- partitions move when a worker joins or leaves, and no worker holds more than its share and one
-- partition's webhooks (200 webhooks on four workers: 50 or 51 each, where four blocks of 16
-- partitions held 57 on average at the busiest, up to 69).
CREATE OR REPLACE FUNCTION delivery_divide() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  workers uuid[] := ARRAY(SELECT w.id FROM delivery_workers w ORDER BY w.id);
  n integer := cardinality(workers);
  -- A worker's load: its webhooks times 64 plus its partitions, so empty partitions spread too.
  loads bigint[] := array_fill(0::bigint, ARRAY[greatest(n, 1)]);
  share bigint;
  -- The partitions, the largest first: each one's assignee and load.
  parts smallint[];
  was uuid[];
  load bigint[];
  assignees uuid[] := '{}';
  keep integer;
  lightest integer;
BEGIN
  SELECT array_agg(x.partition ORDER BY x.load DESC, x.partition), array_agg(x.assigned ORDER BY x.load DESC, x.partition),
         array_agg(x.load ORDER BY x.load DESC, x.partition), floor(sum(x.load) / greatest(n, 1))
  INTO parts, was, load, share
  FROM (SELECT d.partition, d.assigned, count(w.id) * 64 + 1 AS load FROM delivery_partitions d
        LEFT JOIN webhooks w ON w.active AND webhook_partition(w.id) = d.partition
        GROUP BY d.partition, d.assigned) x;
  FOR i IN 1..cardinality(parts) LOOP
    keep := array_position(workers, was[i]);
    IF keep IS NOT NULL AND loads[keep] + load[i] <= share THEN
      loads[keep] := loads[keep] + load[i];
      assignees[i] := was[i];
    END IF;
  END LOOP;
  FOR i IN 1..cardinality(parts) LOOP
    CONTINUE WHEN assignees[i] IS NOT NULL OR n = 0;
    lightest := 1;
    FOR k IN 2..n LOOP
      IF loads[k] < loads[lightest] THEN lightest := k; END IF;
    END LOOP;
    loads[lightest] := loads[lightest] + load[i];
    assignees[i] := workers[lightest];
  END LOOP;
  UPDATE delivery_partitions d SET assigned = x.assignee FROM unnest(parts, assignees) AS x(partition, assignee)
  WHERE x.partition = d.partition AND d.assigned IS DISTINCT FROM x.assignee;
END
$$;

-- Every worker's housekeeping, every few seconds (outside the beat, which takes turns under a lock):
-- leases past their end (a worker that hung with its beat still going) go back to the queue, and
-- booking snapshots no unfinished delivery needs are dropped (a webhook deleted with deliveries
-- pending leaves them; an outcome that ends an event's last delivery drops its own at once).
-- Answers the leases given back.
CREATE OR REPLACE FUNCTION delivery_housekeeping() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  given integer;
BEGIN
  -- Made again by the next run if a crash of the database loses it, as the beat.
  PERFORM set_config('synchronous_commit', 'off', true);
  given := delivery_give_back(ARRAY(SELECT q.id FROM delivery_queue q
                                    WHERE q.lease_owner IS NOT NULL AND q.lease_until < now()),
                              'el proceso que lo hacía no registró el resultado');
  DELETE FROM event_payloads p
  WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                    WHERE d.event_id = p.event_id AND d.status IN ('pending', 'delivering', 'failed'));
  RETURN given;
END
$$;

-- A worker stopping: its partitions are free at once, for the others (woken) to take (under its own
-- lock, between two of its exchanges).
CREATE OR REPLACE FUNCTION delivery_worker_leave(worker uuid) RETURNS void
LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(734110906, hashtext(worker::text));
  DELETE FROM delivery_workers WHERE id = worker;
  SELECT pg_notify('svc_workers', current_schema());
$$;

-- 3. What the caller sent, gave up and finished written, then deliveries claimed, in one transaction.
--
-- A beat lets the caller's partitions go only under the caller's own lock, which an exchange holds
-- shared: the partitions it reads as the caller's stay the caller's until it commits, and a
-- partition the caller has lost is lost here even before the caller's own beat has told it. A caller neither
-- arms nor claims anything of a partition it does not own: a new owner's claim, which counts the
-- attempts in flight at a webhook, never misses one that a previous owner sends afterwards.
--
-- `sent_leases`: leases the caller sends next (it starts none before the database has heard so): a
-- lease given back by anyone else counts as an attempt only when it was. Those not armed (the lease
-- or its partition no longer the caller's) are named in the answer, and the caller lets them go.
-- `released_leases`: leases it claimed ahead and did not send (it lost the webhook's partition, the
-- webhook went inactive, the lease came too near its end, it is stopping): due again as they were,
-- uncounted.
--
-- `outcomes`: a JSON array of {id, token, status, max_attempts, retry_ms, http_status, error,
-- duration_ms, counts, blames, ord}, in the order the attempts ended. An outcome is written only
-- while the lease it was claimed with holds (token). `counts`: the attempt counts as one (false
-- only when nothing was sent: the webhook or integration inactive). `blames`: the receiver
-- answered it, so it moves the webhook's failure count (false for a fault of the service's own).
-- The failure count is the number of deliveries in a row that ended dead: a success resets it, a
-- retry in between changes nothing, and the `disable_at`-th deactivates the webhook. Tests never
-- move it. The last final delivery of an event drops the booking kept for its bodies: personal data
-- is not kept longer than a delivery needs it.
--
-- Then the claim, ahead of the caller's attempts (it queues what it claims per webhook and starts
-- each within the webhook's bound): of the partitions `parts` it owns (all of them or those where it
-- knows of work), the webhooks with waiting deliveries (one index probe each, however deep a
-- backlog), of each its oldest due deliveries up to `hold` leases (any worker's), each with the
-- attempts in flight of other workers at its webhook (a previous owner's, while a partition changes
-- hands: the caller starts no more than the bound leaves), armed (sent next): all of them for the
-- webhooks `answering` (their attempts turn over within an exchange), for the others as many as
-- their free slots (`bound` less their armed leases); then taken in turns that even out what is
-- held: within an organization the webhooks holding the fewest leases first, across organizations
-- those holding the fewest (`busy_counts`) first, and among equals by lot (drawn per webhook and
-- organization at each claim), not by age, so that a webhook whose deliveries are newer than the
-- rest (one just taken over from a worker that died or stopped) does not wait for the others to
-- catch up (docs/decisions.md, "The claim"); a webhook's own are taken oldest first; no organization above
-- its fair share of the caller's `budget` (the budget divided among the organizations it holds
-- leases of, `busy_orgs`/`busy_counts`, or with deliveries due, and never above seven eighths of it,
-- so a newcomer finds room beside a tenant whose receivers hang), `take` in all. Each candidate is
-- locked as its index is read (SKIP LOCKED).
--
-- Rows answered: a row for each delivery claimed, in the order of its attempts, with all its attempt
-- needs; then one row whose `summary` alone is set: the outcomes `written` (their leases still
-- held), the `tallies` of the webhooks whose failure count they changed (before and after, whether
-- still active), the attempts other workers have in flight at each webhook `shared` (a previous
-- owner's), the `backlog` (the partitions walked where deliveries are still due after the claim:
-- they wait for room, and the caller looks there again when room frees) and the leases `unarmed`.
CREATE OR REPLACE FUNCTION delivery_exchange(
  worker uuid, token uuid, lease_ms integer, sent_leases uuid[], released_leases uuid[], outcomes jsonb, disable_at integer,
  parts smallint[], take integer, hold integer, bound integer, answering uuid[], shared uuid[],
  budget integer, busy_orgs uuid[], busy_counts integer[]
) RETURNS TABLE (
  id uuid, webhook_id uuid, event_id uuid, attempt integer, replayed_from integer,
  organization_id uuid, integration_id uuid, webhook_active boolean, url text, secret bytea,
  previous_secret bytea, previous_valid boolean, integration_active boolean, scopes text[],
  webhooks_enabled boolean, event_type text, event_created_at timestamptz, resource_type text,
  resource_id uuid, changes text[], previous_status text, booking jsonb, link_external_id text,
  armed boolean, others_sent integer, summary jsonb
)
LANGUAGE plpgsql AS $$
DECLARE
  -- The webhooks with waiting deliveries in the caller's partitions, and each one's partition.
  hooks uuid[];
  hook_parts smallint[];
  written_ids uuid[];
  tally_rows jsonb;
  unarmed_ids uuid[] := '{}';
  backlog_parts smallint[];
BEGIN
  PERFORM pg_advisory_xact_lock_shared(734110906, hashtext(worker::text));
  IF cardinality(sent_leases) > 0 THEN
    WITH armed_now AS (
      UPDATE delivery_queue q SET sent = true
      WHERE q.id = ANY (sent_leases) AND q.lease_owner = worker
        AND EXISTS (SELECT 1 FROM delivery_partitions p WHERE p.partition = q.partition AND p.owner = worker)
      RETURNING q.id
    )
    SELECT ARRAY(SELECT s.x FROM unnest(sent_leases) AS s(x) EXCEPT SELECT a.id FROM armed_now a) INTO unarmed_ids;
  END IF;
  IF cardinality(released_leases) > 0 THEN
    UPDATE delivery_queue q SET lease_owner = NULL, lease_token = NULL, lease_until = NULL, sent = false
    WHERE q.id = ANY (released_leases) AND q.lease_owner = worker;
  END IF;
  IF jsonb_array_length(outcomes) > 0 THEN
    WITH r AS (
      SELECT * FROM jsonb_to_recordset(outcomes) AS r(
        id uuid, token uuid, status text, max_attempts integer, retry_ms float8, http_status integer,
        error text, duration_ms integer, counts boolean, blames boolean, ord integer)
    ), requeued AS (
      UPDATE delivery_queue q SET lease_owner = NULL, lease_token = NULL, lease_until = NULL, sent = false,
        next_retry_at = now() + make_interval(secs => coalesce(r.retry_ms, 0) / 1000)
      FROM r WHERE q.id = r.id AND q.lease_token = r.token AND r.status = 'failed'
      RETURNING q.id
    ), ended AS (
      DELETE FROM delivery_queue q USING r
      WHERE q.id = r.id AND q.lease_token = r.token AND r.status <> 'failed'
      RETURNING q.id
    ), d AS (
      UPDATE webhook_deliveries w SET
        status = r.status, max_attempts = r.max_attempts,
        next_retry_at = CASE WHEN r.retry_ms IS NULL THEN NULL
                             ELSE now() + make_interval(secs => r.retry_ms / 1000) END,
        last_status = r.http_status, last_error = r.error, last_duration_ms = r.duration_ms,
        delivered_at = CASE WHEN r.status = 'succeeded' THEN now() ELSE w.delivered_at END,
        attempt = w.attempt + CASE WHEN r.counts THEN 1 ELSE 0 END
      FROM r JOIN (SELECT x.id FROM requeued x UNION ALL SELECT y.id FROM ended y) held ON held.id = r.id
      WHERE w.id = r.id
      RETURNING w.id, w.webhook_id, w.event_id, w.event_type, r.status, r.blames, r.ord
    ), purged AS (
      DELETE FROM event_payloads ep
      WHERE ep.event_id IN (SELECT d.event_id FROM d WHERE d.status <> 'failed')
        AND NOT EXISTS (SELECT 1 FROM d WHERE d.event_id = ep.event_id AND d.status = 'failed')
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries o
                        WHERE o.event_id = ep.event_id AND o.status IN ('pending', 'delivering', 'failed')
                          AND o.id NOT IN (SELECT d.id FROM d))
    ), marked AS (
      SELECT d.webhook_id, d.status, d.ord,
             max(d.ord) FILTER (WHERE d.status = 'succeeded') OVER (PARTITION BY d.webhook_id) AS last_ok
      FROM d WHERE d.blames AND d.status <> 'failed' AND d.event_type <> 'webhook.test'
    ), tally AS (
      SELECT m.webhook_id, wh.consecutive_failures AS before,
             CASE WHEN bool_or(m.last_ok IS NOT NULL) THEN 0 ELSE wh.consecutive_failures END
               + (count(*) FILTER (WHERE m.status = 'dead' AND m.ord > coalesce(m.last_ok, 0)))::int AS after
      FROM marked m JOIN webhooks wh ON wh.id = m.webhook_id AND wh.active
      GROUP BY m.webhook_id, wh.consecutive_failures
    ), h AS (
      UPDATE webhooks w SET
        consecutive_failures = t.after,
        active = t.after < disable_at,
        disabled_at = CASE WHEN t.after >= disable_at THEN now() ELSE w.disabled_at END,
        disabled_reason = CASE WHEN t.after >= disable_at THEN 'consecutive_failures' ELSE w.disabled_reason END
      FROM tally t
      -- A count that does not change leaves the row alone: one webhook's deliveries do not queue on
      -- its row lock.
      WHERE w.id = t.webhook_id AND t.after <> t.before
      RETURNING w.id, w.organization_id, w.integration_id, w.active, t.after, t.before
    )
    SELECT ARRAY(SELECT d.id FROM d),
           (SELECT jsonb_agg(jsonb_build_object('webhookId', h.id, 'organizationId', h.organization_id,
                                                'integrationId', h.integration_id, 'active', h.active,
                                                'failures', h.after, 'failuresBefore', h.before)) FROM h)
    INTO written_ids, tally_rows;
  END IF;

  IF take > 0 THEN
    parts := ARRAY(SELECT p.partition FROM delivery_partitions p WHERE p.owner = worker AND p.partition = ANY (parts));
    -- A skip scan of the queue's index: one probe per partition and per webhook with waiting
    -- deliveries, however deep any backlog.
    WITH RECURSIVE walk AS (
      SELECT p.part, (SELECT q.webhook_id FROM delivery_queue q
                      WHERE q.partition = p.part AND q.lease_owner IS NULL
                      ORDER BY q.webhook_id LIMIT 1) AS hook
      FROM unnest(parts) AS p(part)
      UNION ALL
      SELECT w.part, (SELECT q.webhook_id FROM delivery_queue q
                      WHERE q.partition = w.part AND q.lease_owner IS NULL AND q.webhook_id > w.hook
                      ORDER BY q.webhook_id LIMIT 1)
      FROM walk w WHERE w.hook IS NOT NULL
    )
    SELECT array_agg(w.hook), array_agg(w.part) INTO hooks, hook_parts FROM walk w WHERE w.hook IS NOT NULL;
  END IF;
  IF hooks IS NOT NULL THEN
    RETURN QUERY
    WITH rooms AS (
      SELECT h.part, h.hook, w.organization_id AS org, l.n AS held, l.others,
             CASE WHEN h.hook = ANY (answering) THEN hold ELSE bound - l.sent END AS slots,
             random() AS lot
      FROM unnest(hooks, hook_parts) AS h(hook, part) JOIN webhooks w ON w.id = h.hook
      CROSS JOIN LATERAL (SELECT count(*)::integer AS n, count(*) FILTER (WHERE x.sent)::integer AS sent,
                                 count(*) FILTER (WHERE x.sent AND x.lease_owner <> worker)::integer AS others
                          FROM delivery_queue x WHERE x.webhook_id = h.hook AND x.lease_owner IS NOT NULL) l
    ), candidates AS (
      SELECT x.id AS delivery, x.next_retry_at AS due, x.event_id AS ev, r.org, r.slots, r.others,
             r.held, r.lot, row_number() OVER (PARTITION BY r.hook ORDER BY x.next_retry_at, x.event_id) AS k
      FROM rooms r CROSS JOIN LATERAL (
        SELECT q.id, q.next_retry_at, q.event_id FROM delivery_queue q
        WHERE q.partition = r.part AND q.webhook_id = r.hook AND q.lease_owner IS NULL AND q.next_retry_at <= now()
        ORDER BY q.next_retry_at, q.event_id
        LIMIT greatest(hold - r.held, 0)
        FOR UPDATE OF q SKIP LOCKED
      ) x
    ), busy AS (
      SELECT b.org, b.n FROM unnest(busy_orgs, busy_counts) AS b(org, n)
    ), share AS (
      SELECT greatest(1, least(ceil(budget::numeric / greatest(count(*), 1))::integer,
                               budget - ceil(budget / 8.0)::integer)) AS fair
      FROM (SELECT c.org FROM candidates c UNION SELECT b.org FROM busy b) o
    ), picked AS (
      SELECT t.delivery, t.k <= t.slots AS armed, t.others,
             row_number() OVER (ORDER BY t.turn + coalesce(b.n, 0), t.org_lot, t.due, t.ev) AS pos
      FROM (SELECT c.*, row_number() OVER (PARTITION BY c.org ORDER BY c.k + c.held, c.lot, c.due, c.ev) AS turn,
                   min(c.lot) OVER (PARTITION BY c.org) AS org_lot
            FROM candidates c) t
      LEFT JOIN busy b ON b.org = t.org
      WHERE t.turn <= (SELECT s.fair FROM share s) - coalesce(b.n, 0)
      ORDER BY pos LIMIT take
    ), leased AS (
      UPDATE delivery_queue q
      SET lease_owner = worker, lease_token = token, lease_until = now() + make_interval(secs => lease_ms / 1000.0),
          sent = p.armed
      FROM picked p WHERE q.id = p.delivery
      RETURNING q.id
    )
    SELECT d.id, d.webhook_id, d.event_id, d.attempt + 1, d.replayed_from,
           w.organization_id, w.integration_id, w.active, w.url, w.secret,
           w.previous_secret, coalesce(w.previous_secret_until > now(), false), i.status = 'active', i.scopes,
           o.webhooks_enabled AND o.api_enabled, e.type, e.created_at, e.resource_type,
           e.resource_id, e.changes, e.previous_status, ep.booking, x.external_id,
           p.armed, p.others, NULL::jsonb
    FROM picked p
    JOIN webhook_deliveries d ON d.id = p.delivery
    JOIN webhooks w ON w.id = d.webhook_id
    JOIN integrations i ON i.id = w.integration_id
    JOIN events e ON e.id = d.event_id
    JOIN organizations o ON o.id = e.organization_id
    LEFT JOIN event_payloads ep ON ep.event_id = e.id
    LEFT JOIN booking_external_ids x ON x.integration_id = w.integration_id AND x.booking_id = e.resource_id
    WHERE EXISTS (SELECT 1 FROM leased l WHERE l.id = p.delivery)
    ORDER BY p.pos;
    SELECT array_agg(DISTINCT h.part) INTO backlog_parts
    FROM unnest(hooks, hook_parts) AS h(hook, part)
    -- One index probe per webhook (a semi-join would read every due delivery of the queue).
    CROSS JOIN LATERAL (SELECT 1 FROM delivery_queue q
                        WHERE q.partition = h.part AND q.webhook_id = h.hook AND q.lease_owner IS NULL
                          AND q.next_retry_at <= now()
                        LIMIT 1) due;
  END IF;

  summary := jsonb_build_object(
    'written', coalesce(written_ids, '{}'),
    'tallies', coalesce(tally_rows, '[]'),
    -- Counted after the claim, which saw the same attempts in flight.
    'shared', (SELECT coalesce(jsonb_object_agg(s.hook, c.n), '{}')
               FROM unnest(shared) AS s(hook)
               CROSS JOIN LATERAL (SELECT count(*) AS n FROM delivery_queue x
                                   WHERE x.webhook_id = s.hook AND x.lease_owner IS NOT NULL
                                     AND x.lease_owner <> worker AND x.sent) c),
    'backlog', coalesce(backlog_parts, '{}'),
    'unarmed', unarmed_ids);
  RETURN NEXT;
END
$$;

-- The claim reads by key however small the queue was when its plan was made.
ALTER FUNCTION delivery_exchange(uuid, uuid, integer, uuid[], uuid[], jsonb, integer, smallint[], integer, integer, integer, uuid[], uuid[], integer, uuid[], integer[])
  SET enable_seqscan = off;
-- Its statements run one plan, made once per connection: a custom plan made again at every call
-- was about two thirds of an empty claim's time (226 against 73 to 92 µs per call).
ALTER FUNCTION delivery_exchange(uuid, uuid, integer, uuid[], uuid[], jsonb, integer, smallint[], integer, integer, integer, uuid[], uuid[], integer, uuid[], integer[])
  SET plan_cache_mode = force_generic_plan;
-- A webhook's leases are counted by a plain index scan, which marks the dead entries of ended
-- leases as it meets them; a bitmap scan would read them all again at every claim.
ALTER FUNCTION delivery_exchange(uuid, uuid, integer, uuid[], uuid[], jsonb, integer, smallint[], integer, integer, integer, uuid[], uuid[], integer, uuid[], integer[])
  SET enable_bitmapscan = off;

-- 4. Leases given back: due again at once. A lease whose attempt was sent (the worker said so in an
-- exchange) counts as an attempt, the receiver may have had it, and is dead if that was the
-- delivery's last; one never sent is as it was before its claim. `why` goes in last_error. A lease
-- whose outcome is being written at that moment is the writer's (SKIP LOCKED).
CREATE OR REPLACE FUNCTION delivery_give_back(ids uuid[], why text) RETURNS integer
LANGUAGE sql AS $$
  WITH leases AS (
    SELECT q.id, q.sent FROM delivery_queue q
    WHERE q.id = ANY (ids) AND q.lease_owner IS NOT NULL
    FOR UPDATE SKIP LOCKED
  ), given AS (
    UPDATE webhook_deliveries d SET
      status = CASE WHEN d.attempt + 1 >= d.max_attempts THEN 'dead' ELSE 'failed' END,
      next_retry_at = CASE WHEN d.attempt + 1 >= d.max_attempts THEN NULL ELSE now() END,
      attempt = d.attempt + 1, last_status = NULL, last_error = 'intento interrumpido: ' || why
    FROM leases l WHERE d.id = l.id AND l.sent
    RETURNING d.id, d.status
  ), requeued AS (
    UPDATE delivery_queue q SET lease_owner = NULL, lease_token = NULL, lease_until = NULL, sent = false,
      next_retry_at = CASE WHEN l.sent THEN now() ELSE q.next_retry_at END
    FROM leases l
    WHERE q.id = l.id AND NOT EXISTS (SELECT 1 FROM given g WHERE g.id = l.id AND g.status = 'dead')
  ), ended AS (
    DELETE FROM delivery_queue q USING given g WHERE q.id = g.id AND g.status = 'dead'
  )
  SELECT count(*)::integer FROM leases
$$;

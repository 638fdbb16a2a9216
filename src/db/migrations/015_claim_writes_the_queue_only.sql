-- The claim writes the queue only: a delivery's history row is written once per attempt, by its
-- outcome, not also when it is claimed.
--
-- Since migration 014 a claim leased the queue row and set the history row to `delivering` with
-- its attempt counted; the outcome then wrote the history row again. The lease alone says that an
-- attempt is under way, so the history row now keeps the state it had before the claim (pending
-- or failed, the attempts already made) until the attempt's outcome, or the lease ending or given
-- back, counts the attempt and writes the new state. With one write per attempt instead of two, a
-- page's free room holds every version a delivery's row goes through, and every write of it stays
-- heap-only.
--
-- What a delivery shows (the deliveries' list, the metrics) is read through delivery_states:
-- `delivering`, with the attempt under way counted, while its queue row is leased; the history
-- row otherwise.

-- Deliveries leased by the earlier build: the history row as it was before their claim (their
-- attempt is counted again when the lease ends or its outcome is written).
UPDATE webhook_deliveries d
SET status = CASE WHEN d.attempt - 1 <= 0 THEN 'pending' ELSE 'failed' END,
    attempt = greatest(d.attempt - 1, 0)
FROM delivery_queue q
WHERE q.id = d.id AND q.lease_owner IS NOT NULL AND d.status = 'delivering';

CREATE VIEW delivery_states AS
SELECT d.id, d.webhook_id, d.event_id, d.event_type,
       CASE WHEN q.lease_owner IS NOT NULL THEN 'delivering' ELSE d.status END AS status,
       d.attempt + CASE WHEN q.lease_owner IS NOT NULL THEN 1 ELSE 0 END AS attempt,
       d.max_attempts, d.next_retry_at, d.last_status, d.last_error, d.last_duration_ms,
       d.delivered_at, d.created_at, d.replayed_from
FROM webhook_deliveries d LEFT JOIN delivery_queue q ON q.id = d.id;

-- claim_slots counts a webhook's held deliveries with a plain index scan, never a bitmap scan.
-- Every lease leaves an entry in delivery_queue_held that is dead once the delivery's outcome is
-- written, until a vacuum. A plain index scan marks the dead entries it meets (they are skipped by
-- every scan after it); a bitmap scan leaves them unmarked, and each count went to the table for
-- every one of them. In a drain of 32,000 deliveries (autovacuum off, as in the benchmark) the
-- counts took a quarter of PostgreSQL's CPU (perf, 24% of its samples in claim_slots; 2.7% after).
ALTER FUNCTION claim_slots(uuid, uuid, uuid[], integer, integer, integer) SET enable_bitmapscan = off;

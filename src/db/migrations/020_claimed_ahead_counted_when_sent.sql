-- svc-migrate: stop-the-fleet
-- A worker claims ahead of its attempts (a local queue per webhook it owns) and sends a lease only
-- once the database has heard that it will (`sent`, written by an exchange before the attempt
-- starts): a lease given back after its worker died or hung counts as an attempt only when it was. Processes of the previous build
-- call delivery_exchange with the signature dropped here: `svc migrate` refuses to apply this file
-- while any of them runs (the marker on the first line). The new definition is in src/db/engine.sql.

ALTER TABLE delivery_queue ADD COLUMN sent boolean NOT NULL DEFAULT false;
-- The previous build sent every delivery it leased at once.
UPDATE delivery_queue SET sent = true WHERE lease_owner IS NOT NULL;

DROP FUNCTION IF EXISTS delivery_exchange(uuid, uuid, integer, jsonb, integer, smallint[], integer, integer, integer, uuid[], integer[]);

-- A delivery shows `delivering`, with the attempt under way counted, once its attempt was sent;
-- claimed ahead and not yet sent, it shows as it was before its claim.
CREATE OR REPLACE VIEW delivery_states AS
SELECT d.id, d.webhook_id, d.event_id, d.event_type,
       CASE WHEN q.sent THEN 'delivering' ELSE d.status END AS status,
       d.attempt + CASE WHEN q.sent THEN 1 ELSE 0 END AS attempt,
       d.max_attempts, d.next_retry_at, d.last_status, d.last_error, d.last_duration_ms,
       d.delivered_at, d.created_at, d.replayed_from
FROM webhook_deliveries d LEFT JOIN delivery_queue q ON q.id = d.id;

-- Fewer indexes on the queue. A delivery's row is written three times (queued, claimed, its outcome),
-- and none of those updates can be a heap-only one: the status is in the predicates of the partial
-- indexes. So every index takes an entry at each write, and 8 indexes made most of the database's
-- work per delivery. Two of them served nothing another index does not:
--
-- * webhook_deliveries_event (event_id): the uniqueness of (webhook_id, event_id) now leads with the
--   event, so one index both refuses a second delivery of an event to a webhook and finds an
--   event's deliveries (retention's cascade, dropping the kept payload of a finished event);
-- * webhook_deliveries_leased (lease_until) WHERE status = 'delivering': the deliveries in flight are
--   few (at most what the workers hold), and webhook_deliveries_in_flight holds exactly those rows,
--   so expired leases are found by reading it whole.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_once;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_once UNIQUE (event_id, webhook_id);
DROP INDEX webhook_deliveries_event;
DROP INDEX webhook_deliveries_leased;

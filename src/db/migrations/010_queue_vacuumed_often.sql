-- The queue's table is vacuumed as often as it churns.
--
-- A delivery's row is written three times (queued, claimed, its outcome), and none of those updates
-- is a heap-only one (the status is in the partial indexes' predicates), so each leaves a dead
-- entry in the queue's indexes until a vacuum removes it. The claims walk those indexes from their
-- head, where the dead entries of the deliveries just made gather. The table also keeps every
-- finished delivery (the deliveries' list, for the retention period), so autovacuum's default
-- threshold, a fifth of the table dead, grows with the history: on a table of ten million
-- deliveries, two million dead versions before a vacuum. With no vacuum, four drains of 12,000
-- deliveries one after the other on the same database gave 4,082 / 3,310 / 3,299 / 2,714
-- deliveries/s, PostgreSQL's CPU per delivery up 2.4 times from the first configuration of a run to
-- its third.
--
-- Here a vacuum is due once 1% of the table or 1,000 rows are dead, whichever is more, and
-- statistics are refreshed once 2% changed. A vacuum skips the pages the visibility map marks all
-- visible, so the finished history costs it little beyond reading the indexes.
ALTER TABLE webhook_deliveries SET (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02
);

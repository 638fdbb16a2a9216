-- svc-migrate: stop-the-fleet
-- An exchange arms and claims only in the partitions its worker owns, holding that worker's lock
-- shared, and answers what it wrote, what it found and the leases it did not arm in one summary row
-- after the deliveries claimed. A worker of the previous build would start leases this exchange
-- refused to arm and read the summary as a delivery: `svc migrate` refuses to apply this file while
-- any of them runs (the marker on the first line). The new definition is in src/db/engine.sql.
DROP FUNCTION IF EXISTS delivery_exchange(uuid, uuid, integer, uuid[], uuid[], jsonb, integer, smallint[], integer, integer, integer, uuid[], uuid[], integer, uuid[], integer[]);

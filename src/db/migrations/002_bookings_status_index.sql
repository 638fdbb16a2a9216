-- GET /bookings?status=: without these, a rare status in a large organization walks the whole
-- (organization, created_at, id) index before it finds a page. One per side of the exchange.
CREATE INDEX bookings_originator_status
  ON bookings (originator_organization_id, status, created_at DESC, id DESC);
CREATE INDEX bookings_executor_status
  ON bookings (executor_organization_id, status, created_at DESC, id DESC)
  WHERE executor_organization_id IS NOT NULL;

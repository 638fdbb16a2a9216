-- The operator's list of webhooks (GET /operator/v1/webhooks), across organizations or for one,
-- newest first, read page by page in that order rather than sorted whole. Neither index holds a
-- column the delivery engine writes (consecutive_failures, active, updated_at), so the engine's
-- updates of a webhook's row stay heap-only.
CREATE INDEX webhooks_list ON webhooks (created_at DESC, id DESC);
CREATE INDEX webhooks_organization_list ON webhooks (organization_id, created_at DESC, id DESC);

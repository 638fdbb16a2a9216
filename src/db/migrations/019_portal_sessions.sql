-- Delivery portal sessions. The operator API issues one for an integration: a one-time link token,
-- exchanged on first open for a session cookie. Only the SHA-256 of each is kept. The scopes are
-- the portal's (read and webhooks:write), fixed when the session is issued.
CREATE TABLE portal_sessions (
  id uuid PRIMARY KEY,
  integration_id uuid NOT NULL REFERENCES integrations (id) ON DELETE CASCADE,
  link_hash bytea NOT NULL UNIQUE,
  cookie_hash bytea UNIQUE,
  scopes text[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  opened_at timestamptz,
  expires_at timestamptz NOT NULL,
  CHECK ((opened_at IS NULL) = (cookie_hash IS NULL))
);

-- Housekeeping deletes sessions that expired.
CREATE INDEX portal_sessions_expires ON portal_sessions (expires_at);

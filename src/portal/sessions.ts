// Delivery portal sessions: issued by the operator API for one integration, opened once with the
// link's token, then carried by a cookie. Both secrets are 256 random bits kept only as SHA-256
// digests, like API keys. A session's identity is an API key's, narrowed to the portal's scopes,
// so the public routes the portal mounts run unchanged behind it (src/http/guard.ts).
import { hash, randomBytes, randomUUID } from 'node:crypto';
import type { Environment } from '../config.js';
import type { Queryable } from '../db/db.js';
import { type Identity, INTEGRATION_COLUMNS, type IntegrationRow, integrationOf } from '../http/auth.js';
import { effectiveScopes, type Scope } from '../http/scopes.js';

/** What a portal may do: read its webhooks, their deliveries and the event log; manage its webhooks. */
export const PORTAL_SCOPES = ['webhooks:read', 'webhooks:write', 'events:read'] as const;
export const MAX_SESSION_MINUTES = 60;
export const COOKIE_NAME = 'svc_portal';

const digest = (secret: string) => hash('sha256', secret, 'buffer');
const newSecret = () => randomBytes(32).toString('base64url');

export interface IssuedSession {
  id: string;
  integration_id: string;
  scopes: Scope[];
  expires_at: Date;
  /** The one-time link token: in this answer only. */
  token: string;
}

/** A session for an integration, or null when there is no such integration. */
export async function issueSession(
  q: Queryable,
  integrationId: string,
  expiresAt: Date,
): Promise<IssuedSession | null> {
  const token = newSecret();
  const [row] = await q.query<Omit<IssuedSession, 'token'>>(
    `INSERT INTO portal_sessions (id, integration_id, link_hash, scopes, expires_at)
     SELECT $1, i.id, $3, ARRAY(SELECT unnest(i.scopes) INTERSECT SELECT unnest($4::text[])), $5
     FROM integrations i WHERE i.id = $2
     RETURNING id, integration_id, scopes, expires_at`,
    [randomUUID(), integrationId, digest(token), PORTAL_SCOPES, expiresAt],
  );
  if (!row) return null;
  return { ...row, scopes: effectiveScopes(row.scopes, PORTAL_SCOPES), token };
}

/**
 * Opens a session with its link token, once and before it expires: the answer is the cookie's
 * value, or null for a token that is unknown, used or expired (one answer for all three).
 */
export async function openSession(
  q: Queryable,
  token: string,
  now: Date,
): Promise<{ cookie: string; expiresAt: Date } | null> {
  const cookie = newSecret();
  const [row] = await q.query<{ expires_at: Date }>(
    `UPDATE portal_sessions SET opened_at = $3, cookie_hash = $2
     WHERE link_hash = $1 AND opened_at IS NULL AND expires_at > $3
     RETURNING expires_at`,
    [digest(token), digest(cookie), now],
  );
  return row ? { cookie, expiresAt: row.expires_at } : null;
}

interface SessionRow extends IntegrationRow {
  id: string;
  expires_at: Date;
  scopes: string[];
}

const SESSION_SQL = `
  SELECT s.id, s.expires_at, s.scopes, ${INTEGRATION_COLUMNS}
  FROM portal_sessions s
  JOIN integrations i ON i.id = s.integration_id
  JOIN organizations o ON o.id = i.organization_id
  WHERE s.cookie_hash = $1`;

/**
 * The identity behind a session cookie, expired or not (the guard tells the two apart), or null.
 * Its scopes are the session's that the integration still has: an operator who narrows the
 * integration narrows its open portals at once.
 */
export async function sessionIdentity(
  q: Queryable,
  cookie: string,
  environment: Environment,
): Promise<Identity | null> {
  const [r] = await q.query<SessionRow>(SESSION_SQL, [digest(cookie)]);
  if (!r) return null;
  return {
    key: {
      id: r.id,
      name: 'portal',
      prefix: 'portal',
      environment,
      expiresAt: r.expires_at,
      revokedAt: null,
    },
    ...integrationOf(r),
    scopes: effectiveScopes(r.scopes, r.integration_scopes),
  };
}

/** Housekeeping: sessions expired for a day are deleted. */
export async function pruneSessions(q: Queryable, now: Date): Promise<number> {
  const rows = await q.query<{ id: string }>(
    `DELETE FROM portal_sessions WHERE expires_at < $1::timestamptz - interval '1 day' RETURNING id`,
    [now],
  );
  return rows.length;
}

/** The value of one cookie in a Cookie header (RFC 6265 syntax: `a=1; b=2`). */
export function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** Ends a session now (signing out of the portal). */
export async function closeSession(q: Queryable, id: string, now: Date): Promise<void> {
  await q.query('UPDATE portal_sessions SET expires_at = least(expires_at, $2) WHERE id = $1', [id, now]);
}

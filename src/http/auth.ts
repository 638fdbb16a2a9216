// Who is calling: the API key, its integration and its organization, read through a short-lived
// cache so a request normally costs no database round trip to authenticate. Writes made through
// the operator API clear the cache of their process at once; other processes see them within the
// cache TTL (SVC_AUTH_CACHE_TTL_MS, 5 s by default).
import type { Environment } from '../config.js';
import type { Queryable } from '../db/db.js';
import { apiKeyDigest } from '../security/secrets.js';
import { effectiveScopes, type IntegrationKind, type Scope } from './scopes.js';

export interface Identity {
  key: {
    id: string;
    name: string | null;
    prefix: string;
    environment: Environment;
    expiresAt: Date | null;
    revokedAt: Date | null;
  };
  integration: { id: string; name: string; kind: IntegrationKind; status: 'active' | 'disabled' | 'revoked' };
  organization: {
    id: string;
    code: string;
    name: string;
    apiEnabled: boolean;
    webhooksEnabled: boolean;
    outboxEnabled: boolean;
  };
  scopes: Scope[];
}

/** The integration and organization an identity belongs to, as the identity statements read them. */
export interface IntegrationRow {
  integration_id: string;
  integration_name: string;
  kind: IntegrationKind;
  status: 'active' | 'disabled' | 'revoked';
  integration_scopes: string[];
  organization_id: string;
  code: string;
  organization_name: string;
  api_enabled: boolean;
  webhooks_enabled: boolean;
  outbox_enabled: boolean;
}

interface IdentityRow extends IntegrationRow {
  key_id: string;
  key_name: string | null;
  prefix: string;
  environment: Environment;
  expires_at: Date | null;
  revoked_at: Date | null;
  key_scopes: string[];
}

/** The columns of IntegrationRow, from `integrations i` and `organizations o`. */
export const INTEGRATION_COLUMNS = `
  i.id AS integration_id, i.name AS integration_name, i.kind, i.status, i.scopes AS integration_scopes,
  o.id AS organization_id, o.code, o.name AS organization_name,
  o.api_enabled, o.webhooks_enabled, o.outbox_enabled`;

/** The integration and organization of an identity, from its row. */
export function integrationOf(r: IntegrationRow): Pick<Identity, 'integration' | 'organization'> {
  return {
    integration: { id: r.integration_id, name: r.integration_name, kind: r.kind, status: r.status },
    organization: {
      id: r.organization_id,
      code: r.code,
      name: r.organization_name,
      apiEnabled: r.api_enabled,
      webhooksEnabled: r.webhooks_enabled,
      outboxEnabled: r.outbox_enabled,
    },
  };
}

const IDENTITY_SQL = `
  SELECT k.id AS key_id, k.name AS key_name, k.prefix, k.environment, k.expires_at, k.revoked_at,
         k.scopes AS key_scopes, ${INTEGRATION_COLUMNS}
  FROM api_keys k
  JOIN integrations i ON i.id = k.integration_id
  JOIN organizations o ON o.id = i.organization_id
  WHERE k.secret_hash = $1`;

function toIdentity(r: IdentityRow): Identity {
  return {
    key: {
      id: r.key_id,
      name: r.key_name,
      prefix: r.prefix,
      environment: r.environment,
      expiresAt: r.expires_at,
      revokedAt: r.revoked_at,
    },
    ...integrationOf(r),
    scopes: effectiveScopes(r.key_scopes, r.integration_scopes),
  };
}

export interface IdentityCache {
  /** The identity behind a well-formed key, or null when no such key exists. */
  lookup(key: string): Promise<Identity | null>;
  /** Forget everything cached: called after any operator write that touches identities. */
  clear(): void;
}

export function createIdentityCache(
  db: Queryable,
  ttlMs: number,
  now: () => number = Date.now,
): IdentityCache {
  const entries = new Map<string, { identity: Identity; until: number }>();
  return {
    async lookup(key) {
      const id = apiKeyDigest(key);
      const cached = entries.get(id);
      const t = now();
      if (cached && cached.until > t) return cached.identity;
      const [row] = await db.query<IdentityRow>(IDENTITY_SQL, [Buffer.from(id, 'base64')]);
      if (!row) {
        entries.delete(id);
        return null;
      }
      const identity = toIdentity(row);
      // Unknown keys are never cached: a key created a moment ago must work at once.
      if (ttlMs > 0) entries.set(id, { identity, until: t + ttlMs });
      return identity;
    },
    clear() {
      entries.clear();
    },
  };
}

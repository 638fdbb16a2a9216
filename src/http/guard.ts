// What every public route runs before its handler, in the contract's order:
// IP failure limit -> API key (401s) -> rate limits (429, headers) -> integration and
// organization state (403) -> scopes (403, counted against the limits like a served request).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Environment, RateLimitConfig } from '../config.js';
import type { Bucket, RateLimitStore } from '../ratelimit/store.js';
import { keyEnvironment } from '../security/secrets.js';
import type { Identity, IdentityCache } from './auth.js';
import { AppError, type ErrorCode } from './errors.js';
import { type App, allowedMethods } from './kit.js';
import type { Metrics } from './metrics.js';
import { addLogFields } from './request-logger.js';
import type { Scope } from './scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    identity: Identity | null;
  }
  interface FastifyContextConfig {
    /** Every scope the route needs. */
    scopes?: readonly Scope[];
    /** A part of the API the organization must have enabled besides the API itself. */
    feature?: 'webhooks';
    /** Served to anyone, without a key: the published contract and its reference page. */
    public?: boolean;
    /** Authenticated by a delivery portal session's cookie instead of an API key (src/portal/). */
    session?: boolean;
  }
}

export interface GuardDeps {
  identities: IdentityCache;
  limiter: RateLimitStore;
  limits: RateLimitConfig;
  environment: Environment;
  now?: () => number;
  /** Counts refusals by authentication (and by the IP failure limit) by code. */
  metrics?: Pick<Metrics, 'authFailures'>;
  /** Who holds a portal session: needed by the routes with `config.session`. */
  sessions?: SessionAuthenticator;
}

/** How a route with `config.session` finds its caller: a cookie, looked up like a key. */
export interface SessionAuthenticator {
  cookie(request: FastifyRequest): string | null;
  lookup(cookie: string): Promise<Identity | null>;
}

const SESSION_REFUSED = 'La sesión del portal no es válida; abra el portal con un enlace nuevo.';
const SESSION_EXPIRED = 'La sesión del portal ha caducado; abra el portal con un enlace nuevo.';

const BEARER = /^Bearer[ ]+(\S+)[ ]*$/i;

function rateLimited(retryAfterMs: number): AppError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new AppError('rate_limited', { retry_after: seconds });
}

/** The identity of a route that went through the guard. */
export function identityOf(request: FastifyRequest): Identity {
  if (!request.identity) throw new AppError('internal');
  return request.identity;
}

export function installGuard(app: App, deps: GuardDeps): void {
  const now = deps.now ?? Date.now;
  const { limits, limiter } = deps;
  app.decorateRequest('identity', null);

  const endpointBuckets = (identity: Identity, endpoint: string, organizationCounts: boolean): Bucket[] => [
    { key: `key:${identity.key.id}`, limit: limits.perKey },
    ...(organizationCounts
      ? [{ key: `org:${identity.organization.id}`, limit: limits.perOrganization }]
      : []),
    { key: `endpoint:${identity.key.id}:${endpoint}`, limit: limits.perEndpoint },
  ];
  // The buckets of an admitted key's requests to one endpoint, made once per identity the cache
  // hands out (one object per key for the cache's lifetime), not per request.
  const bucketsByIdentity = new WeakMap<Identity, Map<string, Bucket[]>>();
  const bucketsOf = (identity: Identity, endpoint: string): Bucket[] => {
    let byEndpoint = bucketsByIdentity.get(identity);
    if (!byEndpoint) {
      byEndpoint = new Map();
      bucketsByIdentity.set(identity, byEndpoint);
    }
    let buckets = byEndpoint.get(endpoint);
    if (!buckets) {
      buckets = endpointBuckets(identity, endpoint, true);
      byEndpoint.set(endpoint, buckets);
    }
    return buckets;
  };

  async function refuse(code: ErrorCode, ipBucket: Bucket[], message?: string): Promise<never> {
    deps.metrics?.authFailures.inc({ code });
    await limiter.hit(ipBucket, limits.windowMs, 'record');
    throw new AppError(code, undefined, message);
  }

  const ipBucketOf = (request: FastifyRequest) => [
    { key: `ip:${request.ip}`, limit: limits.authFailuresPerIp },
  ];

  async function ipAllowed(ipBucket: Bucket[]): Promise<void> {
    const ip = await limiter.hit(ipBucket, limits.windowMs, 'peek');
    if (!ip.allowed) {
      deps.metrics?.authFailures.inc({ code: 'rate_limited' });
      throw rateLimited(ip.retryAfterMs);
    }
  }

  /** The tenant on the request's log lines, once its key or session is authenticated. */
  const authenticated = (request: FastifyRequest, identity: Identity): Identity => {
    addLogFields(request.log, {
      organization_id: identity.organization.id,
      integration_id: identity.integration.id,
    });
    return identity;
  };

  /** A portal session counts its failures against the same IP limit as keys. */
  async function authenticateSession(request: FastifyRequest): Promise<Identity> {
    const ipBucket = ipBucketOf(request);
    await ipAllowed(ipBucket);
    const cookie = deps.sessions?.cookie(request) ?? null;
    const identity = cookie === null ? null : await deps.sessions?.lookup(cookie);
    if (!identity) return refuse('unauthorized', ipBucket, SESSION_REFUSED);
    if (identity.key.expiresAt && identity.key.expiresAt.getTime() <= now())
      return refuse('unauthorized', ipBucket, SESSION_EXPIRED);
    return authenticated(request, identity);
  }

  async function authenticate(request: FastifyRequest): Promise<Identity> {
    const ipBucket = ipBucketOf(request);
    await ipAllowed(ipBucket);

    const header = request.headers.authorization;
    const match = header ? BEARER.exec(header) : null;
    if (!match) return refuse('unauthorized', ipBucket);
    const key = match[1] as string;
    const environment = keyEnvironment(key);
    if (environment === null) return refuse('invalid_key', ipBucket);
    if (environment !== deps.environment) return refuse('wrong_environment', ipBucket);
    const identity = await deps.identities.lookup(key);
    if (!identity) return refuse('invalid_key', ipBucket);
    if (identity.key.revokedAt) return refuse('revoked_key', ipBucket);
    if (identity.key.expiresAt && identity.key.expiresAt.getTime() <= now())
      return refuse('expired_key', ipBucket);
    return authenticated(request, identity);
  }

  /**
   * A key that the organization's state refuses (integration disabled or revoked, API disabled)
   * counts against its own key and endpoint buckets only: a runaway integration the operator
   * revoked must not keep refusing its sibling integrations through the organization's cap.
   */
  async function admit(
    reply: FastifyReply,
    identity: Identity,
    endpoint: string,
    organizationCounts = true,
  ): Promise<void> {
    const decision = await limiter.hit(
      organizationCounts ? bucketsOf(identity, endpoint) : endpointBuckets(identity, endpoint, false),
      limits.windowMs,
      'take',
    );
    if (!decision.allowed) throw rateLimited(decision.retryAfterMs);
    reply.header('x-ratelimit-limit', String(limits.perKey));
    reply.header('x-ratelimit-remaining', String(decision.remaining));
  }

  app.addHook('onRequest', async (request, reply) => {
    const route = request.routeOptions;
    if (route.config.public) return;
    if (request.is404) {
      // A wrong method is the server's 405, before the API. An unknown path answers 404, but a key
      // sent with it is checked and counted like any other, so a valid key's answer carries the
      // rate-limit headers and a bad one cannot probe paths for free.
      if (!request.headers.authorization || allowedMethods(app, request.url).size > 0) return;
      await admit(reply, await authenticate(request), 'unknown path');
      return;
    }
    const identity = route.config.session ? await authenticateSession(request) : await authenticate(request);
    const refused: ErrorCode | null =
      identity.integration.status !== 'active'
        ? 'integration_disabled'
        : !identity.organization.apiEnabled
          ? 'api_disabled'
          : null;
    await admit(reply, identity, `${request.method} ${route.url}`, refused === null);
    if (refused) throw new AppError(refused);
    const config = route.config;
    if (config.feature === 'webhooks' && !identity.organization.webhooksEnabled) {
      throw new AppError(
        'api_disabled',
        undefined,
        'Los webhooks no están habilitados para esta organización.',
      );
    }
    const missing = (config.scopes ?? []).find((s) => !identity.scopes.includes(s));
    if (missing) {
      throw new AppError('insufficient_scope', { required_scope: missing }, `Falta el permiso ${missing}.`);
    }
    request.identity = identity;
  });
}

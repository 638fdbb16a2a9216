// The public Integration API v1: the kit, the guard and the resources. Builds; never listens.
import { bookingRoutes } from '../api/bookings/routes.js';
import { catalogueRoutes } from '../api/catalogue/routes.js';
import { eventRoutes } from '../api/events/routes.js';
import { externalIdRoutes } from '../api/external-ids/routes.js';
import { integrationRoutes } from '../api/integrations/routes.js';
import { webhookRoutes } from '../api/webhooks/routes.js';
import { type GuardDeps, installGuard } from '../http/guard.js';
import { installIdempotency } from '../http/idempotency.js';
import { type App, createHttpApp } from '../http/kit.js';
import { collectRoutes } from '../openapi/collect.js';
import { referenceRoutes } from '../openapi/reference.js';
import { openapiRoutes } from '../openapi/routes.js';
import { portalAuthenticator, portalRoutes } from '../portal/routes.js';
import { targetPolicy } from '../security/url-guard.js';
import type { Deps } from './deps.js';

export const PUBLIC_PREFIX = '/api/v1';

/** What the guard needs, taken from the application's dependencies. */
export function guardDeps(deps: Deps): GuardDeps {
  return {
    identities: deps.identities,
    limiter: deps.limiter,
    limits: deps.config.rateLimits,
    environment: deps.config.environment,
    now: deps.now,
    metrics: deps.metrics,
    sessions: portalAuthenticator(deps.db, deps.config.environment),
  };
}

export async function buildPublicApp(deps: Deps): Promise<App> {
  const app = createHttpApp({
    name: 'public',
    logger: deps.logger,
    requestTimeoutMs: deps.config.requestTimeoutMs,
    trustProxy: deps.config.trustProxy,
    metrics: deps.metrics,
  });
  // Every route registered from here on is published in the OpenAPI document.
  const routes = collectRoutes(app);
  installGuard(app, guardDeps(deps));
  installIdempotency(app, {
    db: deps.db,
    claimTimeoutMs: deps.config.idempotencyClaimTimeoutMs,
    retentionHours: deps.config.idempotencyRetentionHours,
  });
  const webhookDeps = {
    db: deps.db,
    limiter: deps.limiter,
    secrets: deps.secrets,
    targets: { policy: targetPolicy(deps.config.webhooks), resolve: deps.resolve },
  };
  const eventDeps = { db: deps.db, cursors: deps.cursors };
  await app.register(
    async (api) => {
      integrationRoutes(api as App, deps.config.rateLimits);
      bookingRoutes(api as App, { db: deps.db, cursors: deps.cursors });
      catalogueRoutes(api as App, { db: deps.db, cursors: deps.cursors });
      eventRoutes(api as App, eventDeps);
      externalIdRoutes(api as App, deps);
      webhookRoutes(api as App, webhookDeps);
      openapiRoutes(api as App, routes, PUBLIC_PREFIX);
    },
    { prefix: PUBLIC_PREFIX },
  );
  referenceRoutes(app, `${PUBLIC_PREFIX}/openapi.json`);
  // The delivery portal: the same webhook and event routes, reached with a portal session.
  await portalRoutes(app, { db: deps.db, now: deps.now, webhooks: webhookDeps, events: eventDeps });
  return app;
}

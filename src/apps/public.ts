// The public Integration API v1: the kit, the guard and the resources. Builds; never listens.
import { integrationRoutes } from '../api/integrations/routes.js';
import { installGuard } from '../http/guard.js';
import { type App, createHttpApp } from '../http/kit.js';
import type { Deps } from './deps.js';

export const PUBLIC_PREFIX = '/api/v1';

export async function buildPublicApp(deps: Deps): Promise<App> {
  const app = createHttpApp({
    name: 'public',
    logger: deps.logger,
    trustProxy: deps.config.trustProxy,
    metrics: deps.metrics,
  });
  installGuard(app, {
    identities: deps.identities,
    limiter: deps.limiter,
    limits: deps.config.rateLimits,
    environment: deps.config.environment,
    now: deps.now,
  });
  await app.register(
    async (api) => {
      integrationRoutes(api as App, deps.config.rateLimits);
    },
    { prefix: PUBLIC_PREFIX },
  );
  return app;
}

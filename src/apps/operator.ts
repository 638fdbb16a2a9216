// The operator API: the platform's side. Its own listener (127.0.0.1 by default), one bearer token.
import { AppError } from '../http/errors.js';
import { type App, createHttpApp } from '../http/kit.js';
import { deliveryRoutes } from '../operator/deliveries.js';
import { feedRoutes } from '../operator/feed/routes.js';
import { integrationRoutes } from '../operator/integrations.js';
import { masterKeyRoutes } from '../operator/master-key.js';
import { organizationRoutes } from '../operator/organizations.js';
import { portalSessionRoutes } from '../operator/portal-sessions.js';
import { systemRoutes } from '../operator/system.js';
import { webhookReadRoutes } from '../operator/webhooks.js';
import { safeEqual } from '../security/secrets.js';
import type { Deps } from './deps.js';

export const OPERATOR_PREFIX = '/operator/v1';

export async function buildOperatorApp(deps: Deps, token: string): Promise<App> {
  if (token.length < 32) throw new Error('the operator API needs a token of at least 32 characters');
  const expected = `Bearer ${token}`;
  const app = createHttpApp({
    name: 'operator',
    logger: deps.logger,
    requestTimeoutMs: deps.config.requestTimeoutMs,
    metrics: deps.metrics,
  });
  app.addHook('onRequest', async (request) => {
    if (request.is404) return;
    const given = request.headers.authorization ?? '';
    if (!safeEqual(given, expected)) throw new AppError('unauthorized');
  });
  await app.register(
    async (api) => {
      const scoped = api as App;
      systemRoutes(scoped, deps);
      organizationRoutes(scoped, deps);
      integrationRoutes(scoped, deps);
      feedRoutes(scoped, deps);
      deliveryRoutes(scoped, deps);
      masterKeyRoutes(scoped, deps);
      webhookReadRoutes(scoped, deps);
      portalSessionRoutes(scoped, deps);
    },
    { prefix: OPERATOR_PREFIX },
  );
  return app;
}

import type { RateLimitConfig } from '../../config.js';
import { identityOf } from '../../http/guard.js';
import type { App } from '../../http/kit.js';
import { IntegrationIdentity } from './schemas.js';

export function integrationRoutes(app: App, limits: RateLimitConfig): void {
  app.get(
    '/integrations/me',
    { schema: { response: { 200: IntegrationIdentity } }, config: { scopes: [] } },
    async (request) => {
      const { integration, organization, key, scopes } = identityOf(request);
      return {
        integration: { id: integration.id, name: integration.name, kind: integration.kind },
        organization: { id: organization.id, code: organization.code, name: organization.name },
        key: { prefix: key.prefix, name: key.name },
        environment: key.environment,
        scopes,
        rate_limits: {
          per_minute: {
            key: limits.perKey,
            organization: limits.perOrganization,
            endpoint: limits.perEndpoint,
          },
        },
        api_version: 'v1' as const,
      };
    },
  );
}

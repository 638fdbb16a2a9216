// Health, readiness, metrics and cursor-key rotation.
import { Type } from 'typebox';
import { defaultReadinessChecks, readiness } from '../health.js';
import type { App } from '../http/kit.js';
import { metricsText } from '../http/metrics.js';
import type { OperatorDeps } from './deps.js';

export function systemRoutes(app: App, deps: OperatorDeps): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  // The same verdict as the unauthenticated probe (src/health.ts); behind the token it also says
  // which checks failed and why.
  app.get('/readyz', async (request, reply) => {
    const { ready, failed } = await readiness(deps.readinessChecks ?? defaultReadinessChecks(deps.db));
    if (ready) return { status: 'ready' };
    request.log.warn({ failed }, 'not ready');
    return reply.code(503).send({ status: 'unavailable', failed });
  });

  app.get('/metrics', async (_request, reply) => {
    const text = await metricsText(deps.metrics);
    return reply.type(deps.metrics.registry.contentType).send(text);
  });

  app.post(
    '/cursor-keys/rotate',
    { schema: { response: { 200: Type.Object({ key_id: Type.Integer(), rotated_at: Type.String() }) } } },
    async () => {
      const keyId = await deps.cursors.rotate();
      return { key_id: keyId, rotated_at: new Date().toISOString() };
    },
  );
}

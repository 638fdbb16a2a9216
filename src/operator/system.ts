// Health, readiness, metrics and cursor-key rotation.
import { Type } from 'typebox';
import type { App } from '../http/kit.js';
import type { OperatorDeps } from './deps.js';

export function systemRoutes(app: App, deps: OperatorDeps): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (request, reply) => {
    try {
      await deps.db.query('SELECT 1');
      return { status: 'ready' };
    } catch (error) {
      request.log.warn({ err: error }, 'database not reachable');
      return reply.code(503).send({ status: 'unavailable' });
    }
  });

  app.get('/metrics', async (_request, reply) => {
    const text = await deps.metrics.registry.metrics();
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

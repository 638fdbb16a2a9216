// Health, readiness, metrics and cursor-key rotation.
import { Type } from 'typebox';
import type { App } from '../http/kit.js';
import { metricsText } from '../http/metrics.js';
import type { OperatorDeps } from './deps.js';

// Below the smallest SVC_REQUEST_TIMEOUT_MS (1 s), so the probe always answers itself.
const READY_TIMEOUT_MS = 500;

export function systemRoutes(app: App, deps: OperatorDeps): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  // Ready means the database answers now: a probe that waits behind a stalled pool would tell a
  // balancer "ready" long after the requests it sends have started failing.
  app.get('/readyz', async (request, reply) => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${READY_TIMEOUT_MS} ms`)),
        READY_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([deps.db.query('SELECT 1'), late]);
      return { status: 'ready' };
    } catch (error) {
      request.log.warn({ err: error }, 'database not reachable');
      return reply.code(503).send({ status: 'unavailable' });
    } finally {
      clearTimeout(timer);
    }
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

// Recovery after a long outage: an operator puts a webhook's dead deliveries back in the queue.
// Integrators themselves reconcile through GET /events (the contract's way); this is the
// platform's tool for when a receiver was down longer than the whole retry span.
import { Type } from 'typebox';
import { AppError, notFound } from '../http/errors.js';
import type { App } from '../http/kit.js';
import { DateTimeInput, IdParams, StringEnum, Uuid } from '../http/schemas.js';
import type { OperatorDeps } from './deps.js';
import { replayDeadDeliveries } from './replay.js';

export const REPLAY_LIMIT = 10_000;

const ReplayBody = Type.Object(
  {
    since: DateTimeInput,
    until: Type.Optional(DateTimeInput),
    /** Only dead deliveries are replayed; the field says so explicitly. */
    status: Type.Optional(StringEnum(['dead'])),
    /** When given, the webhook must belong to it: a guard against a mistyped webhook id. */
    organization_id: Type.Optional(Uuid),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: REPLAY_LIMIT })),
  },
  { additionalProperties: false },
);

const ReplayResult = Type.Object({
  webhook_id: Uuid,
  organization_id: Uuid,
  replayed: Type.Integer(),
});

export function deliveryRoutes(app: App, deps: OperatorDeps): void {
  app.post(
    '/webhooks/:id/deliveries/replay',
    { schema: { params: IdParams, body: ReplayBody, response: { 200: ReplayResult } } },
    async (request) => {
      const { id } = request.params;
      const body = request.body;
      const since = new Date(body.since);
      const until = body.until === undefined ? null : new Date(body.until);
      if (until !== null && until <= since) {
        throw new AppError('validation_error', { field: 'until' }, 'until debe ser posterior a since.');
      }
      return deps.db.tx(async (q) => {
        const [webhook] = await q.query<{ organization_id: string; active: boolean }>(
          'SELECT organization_id, active FROM webhooks WHERE id = $1 FOR UPDATE',
          [id],
        );
        if (!webhook || (body.organization_id && body.organization_id !== webhook.organization_id)) {
          throw notFound();
        }
        if (!webhook.active) {
          throw new AppError(
            'conflict',
            { field: 'active' },
            'El webhook está inactivo: reactívelo antes de reenviar sus entregas.',
          );
        }
        const replayed = await replayDeadDeliveries(q, {
          webhookId: id,
          since,
          until,
          limit: body.limit ?? REPLAY_LIMIT,
        });
        request.log.info(
          {
            audit: 'webhook_deliveries.replay',
            webhook: id,
            organization: webhook.organization_id,
            since: since.toISOString(),
            until: until?.toISOString() ?? null,
            replayed,
          },
          'dead deliveries replayed by the operator',
        );
        return { webhook_id: id, organization_id: webhook.organization_id, replayed };
      });
    },
  );
}

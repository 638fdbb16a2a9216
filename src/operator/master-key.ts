// The master key seen from the operator API: which keys sealed the stored secrets, and the online
// re-seal under the current key after which an older key can be removed (docs/operations.md).
import { Type } from 'typebox';
import type { App } from '../http/kit.js';
import { Nullable, Uuid } from '../http/schemas.js';
import { masterKeyCheck, resealBatch, sealedCounts } from '../security/master-key.js';
import type { OperatorDeps } from './deps.js';

export const RESEAL_BATCH = 200;
const RESEAL_MAX = 1000;

const KeyId = Type.String({
  pattern: '^[0-9a-f]{8}$',
  description: 'First 8 hex characters of SHA-256 of the key.',
});

const Unopened = Type.Object({ webhook_id: Uuid, key_id: Nullable(KeyId) });

const Status = Type.Object({
  key_id: KeyId,
  fallback_key_ids: Type.Array(KeyId),
  sealed: Type.Array(Type.Object({ key_id: Nullable(KeyId), secrets: Type.Integer() })),
  awaiting_reseal: Type.Integer({ description: 'Stored secrets not sealed under key_id.' }),
  opens_sample: Type.Boolean({
    description: 'Whether the ring opens the secrets the start-up check samples.',
  }),
});

const RotateBody = Type.Object(
  {
    after: Type.Optional(Uuid),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: RESEAL_MAX })),
  },
  { additionalProperties: false },
);

const RotateResult = Type.Object({
  key_id: KeyId,
  resealed: Type.Integer(),
  unopened: Type.Array(Unopened),
  next_after: Nullable(Uuid),
});

export function masterKeyRoutes(app: App, deps: OperatorDeps): void {
  app.get('/master-key', { schema: { response: { 200: Status } } }, async () => {
    const box = deps.secrets;
    const [sealed, check] = await Promise.all([sealedCounts(deps.db), masterKeyCheck(deps.db, box)]);
    return {
      key_id: box.keyId,
      fallback_key_ids: [...box.fallbackKeyIds],
      sealed,
      awaiting_reseal: sealed.filter((s) => s.key_id !== box.keyId).reduce((n, s) => n + s.secrets, 0),
      opens_sample: check.ok,
    };
  });

  // One batch per request, so no request runs long; `svc admin master-key rotate` walks them all.
  app.post(
    '/master-key/rotate',
    { schema: { body: Type.Optional(RotateBody), response: { 200: RotateResult } } },
    async (request) => {
      const body = request.body ?? {};
      const batch = await resealBatch(deps.db, deps.secrets, {
        after: body.after ?? null,
        limit: body.limit ?? RESEAL_BATCH,
      });
      request.log.info(
        {
          audit: 'master_key.rotate',
          key_id: deps.secrets.keyId,
          resealed: batch.resealed,
          unopened: batch.unopened.length,
        },
        'webhook secrets re-sealed under the current master key',
      );
      return { key_id: deps.secrets.keyId, ...batch };
    },
  );
}

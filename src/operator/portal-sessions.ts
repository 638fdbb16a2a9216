// POST /integrations/{id}/portal-sessions: the platform opens the delivery portal for one
// integration, as it would embed a hosted webhook portal. The answer's url carries a one-time
// token (in the fragment, so no server or proxy log sees it); opened once, it becomes a session
// cookie for this integration, with the portal's scopes only, until expires_at.
import { Type } from 'typebox';
import { notFound } from '../http/errors.js';
import type { App } from '../http/kit.js';
import { DateTime, IdParams, Uuid } from '../http/schemas.js';
import { PORTAL_PATH } from '../portal/routes.js';
import { issueSession, MAX_SESSION_MINUTES } from '../portal/sessions.js';
import type { OperatorDeps } from './deps.js';

const CreateSession = Type.Object(
  {
    ttl_minutes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_SESSION_MINUTES,
        description: `How long the link and the session last, at most ${MAX_SESSION_MINUTES} (the default).`,
      }),
    ),
  },
  { additionalProperties: false },
);

const PortalSession = Type.Object({
  id: Uuid,
  integration_id: Uuid,
  scopes: Type.Array(Type.String()),
  expires_at: DateTime,
  url: Type.String(),
});

export function portalSessionRoutes(app: App, deps: OperatorDeps): void {
  const now = deps.now ?? Date.now;
  app.post(
    '/integrations/:id/portal-sessions',
    { schema: { params: IdParams, body: CreateSession, response: { 201: PortalSession } } },
    async (request, reply) => {
      const minutes = request.body.ttl_minutes ?? MAX_SESSION_MINUTES;
      const session = await issueSession(deps.db, request.params.id, new Date(now() + minutes * 60_000));
      if (!session) throw notFound();
      return reply.code(201).send({
        id: session.id,
        integration_id: session.integration_id,
        scopes: session.scopes,
        expires_at: session.expires_at.toISOString(),
        url: `${deps.config.publicUrl}${PORTAL_PATH}#token=${session.token}`,
      });
    },
  );
}

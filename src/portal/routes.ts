// The delivery portal on the public listener: a page (/portal) and its data under /portal/api.
// The data routes are the public API's own webhook and event routes, mounted a second time with
// `config.session`, so the guard authenticates them by the portal's cookie instead of a key; the
// handlers, queries, views, limits and error envelope are the same ones. The portal never sees a key.
import { readFileSync } from 'node:fs';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { Type } from 'typebox';
import { type EventRouteDeps, eventRoutes } from '../api/events/routes.js';
import { type WebhookRouteDeps, webhookRoutes } from '../api/webhooks/routes.js';
import type { Environment } from '../config.js';
import type { Db } from '../db/db.js';
import { AppError, notFound } from '../http/errors.js';
import { identityOf, type SessionAuthenticator } from '../http/guard.js';
import type { App } from '../http/kit.js';
import { DateTime, Uuid } from '../http/schemas.js';
import { COOKIE_NAME, closeSession, cookieValue, openSession, sessionIdentity } from './sessions.js';

export const PORTAL_PATH = '/portal';
const API_PATH = `${PORTAL_PATH}/api`;

export interface PortalDeps {
  db: Db;
  now: () => number;
  webhooks: WebhookRouteDeps;
  events: EventRouteDeps;
}

const ASSETS: Record<string, string> = {
  'portal.js': 'text/javascript; charset=utf-8',
  'portal.css': 'text/css; charset=utf-8',
};

// Only this origin, no inline script or style: the page cannot load or run anything else.
const CSP = [
  "default-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const OpenBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

const Session = Type.Object({
  integration: Type.Object({ id: Uuid, name: Type.String() }),
  organization: Type.Object({ name: Type.String() }),
  scopes: Type.Array(Type.String()),
  expires_at: DateTime,
});

/** The guard's way to a portal session: the cookie, looked up in the database. */
export function portalAuthenticator(db: Db, environment: Environment): SessionAuthenticator {
  return {
    cookie: (request) => cookieValue(request.headers.cookie, COOKIE_NAME),
    lookup: (cookie) => sessionIdentity(db, cookie, environment),
  };
}

function setCookie(request: FastifyRequest, reply: FastifyReply, value: string, maxAgeSeconds: number) {
  // Strict: a page of another site can never make the browser send it. Secure when served over
  // https (a local http://localhost portal works without it).
  const secure = request.protocol === 'https' ? '; Secure' : '';
  reply.header(
    'set-cookie',
    `${COOKIE_NAME}=${value}; Path=${PORTAL_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`,
  );
}

function pageRoutes(app: App): void {
  const dir = new URL('./assets/', import.meta.url);
  const html = readFileSync(new URL('index.html', dir));
  const files = new Map(Object.keys(ASSETS).map((name) => [name, readFileSync(new URL(name, dir))]));
  const config = { public: true };

  app.get(PORTAL_PATH, { config }, async (_request, reply) =>
    reply
      .header('content-security-policy', CSP)
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-store')
      .type('text/html; charset=utf-8')
      .send(html),
  );
  app.get<{ Params: { file: string } }>(`${PORTAL_PATH}/assets/:file`, { config }, async (request, reply) => {
    const body = files.get(request.params.file);
    const type = ASSETS[request.params.file];
    if (!body || !type) throw notFound();
    return reply.header('cache-control', 'no-cache').type(type).send(body);
  });
}

/** A write from a page of another origin is refused even if a browser sent the cookie with it. */
async function sameOrigin(request: FastifyRequest): Promise<void> {
  const origin = request.headers.origin;
  if (request.method === 'GET' || origin === undefined) return;
  let host: string | null = null;
  try {
    host = new URL(origin).host;
  } catch {
    host = null;
  }
  if (host !== request.host) throw new AppError('forbidden', undefined, 'Origen no permitido.');
}

export async function portalRoutes(app: App, deps: PortalDeps): Promise<void> {
  pageRoutes(app);

  // The link's one-time token travels in the url's fragment, which browsers never send to a
  // server or put in a Referer: the page posts it here, once, and gets the session cookie.
  app.post(
    `${API_PATH}/session`,
    { schema: { body: OpenBody }, config: { public: true } },
    async (request, reply) => {
      const now = deps.now();
      const opened = await openSession(deps.db, request.body.token, new Date(now));
      if (!opened) {
        throw new AppError(
          'unauthorized',
          undefined,
          'El enlace del portal no es válido, ya se usó o ha caducado; pida uno nuevo.',
        );
      }
      setCookie(request, reply, opened.cookie, Math.ceil((opened.expiresAt.getTime() - now) / 1000));
      return reply.code(204).send();
    },
  );

  await app.register(
    async (api) => {
      // Every route of this scope is reached with the portal's cookie and answers no-store.
      api.addHook('onRoute', (route: RouteOptions) => {
        route.config = { ...route.config, session: true };
      });
      api.addHook('onRequest', sameOrigin);
      api.addHook('onSend', async (_request, reply) => {
        reply.header('cache-control', 'no-store');
      });
      const scoped = api as App;
      scoped.get('/session', { schema: { response: { 200: Session } } }, async (request) => {
        const { integration, organization, scopes, key } = identityOf(request);
        return {
          integration: { id: integration.id, name: integration.name },
          organization: { name: organization.name },
          scopes,
          expires_at: (key.expiresAt as Date).toISOString(),
        };
      });
      scoped.delete('/session', {}, async (request, reply) => {
        await closeSession(deps.db, identityOf(request).key.id, new Date(deps.now()));
        setCookie(request, reply, '', 0);
        return reply.code(204).send();
      });
      webhookRoutes(scoped, deps.webhooks);
      eventRoutes(scoped, deps.events);
    },
    { prefix: API_PATH },
  );
}

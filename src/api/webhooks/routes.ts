// The webhook management API: a webhook belongs to the integration whose key created it.
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Db } from '../../db/db.js';
import { isUuid } from '../../domain/ids.js';
import { AppError, invalidField, notFound } from '../../http/errors.js';
import { identityOf } from '../../http/guard.js';
import { completeWithin } from '../../http/idempotency.js';
import type { App } from '../../http/kit.js';
import type { RateLimitStore } from '../../ratelimit/store.js';
import { generateWebhookSecret, type SecretBox } from '../../security/secrets.js';
import {
  type Resolver,
  type TargetPolicy,
  type TargetRefusal,
  TargetRefused,
  vetTarget,
} from '../../security/url-guard.js';
import { Deleted } from '../external-ids/schemas.js';
import { pageSize } from '../pagination.js';
import {
  countWebhooksLocked,
  deleteWebhook,
  findWebhook,
  insertWebhook,
  listDeliveries,
  listWebhooks,
  queueTest,
  rotateSecret,
  updateWebhook,
  type WebhookRow,
} from './queries.js';
import {
  DeliveryList,
  DeliveryListQuery,
  MAX_URL_LENGTH,
  MAX_WEBHOOKS_PER_INTEGRATION,
  RotateBody,
  RotatedSecret,
  SUBSCRIBABLE,
  TestQueued,
  Webhook,
  WebhookCreateBody,
  WebhookCreated,
  WebhookList,
  WebhookPatchBody,
  WebhookPath,
} from './schemas.js';
import { deliveryView, webhookView } from './view.js';

export interface WebhookRouteDeps {
  db: Db;
  limiter: RateLimitStore;
  secrets: SecretBox;
  targets: { policy: TargetPolicy; resolve?: Resolver };
}

/** The test endpoint's limits: per destination host (within the organization) and per organization. */
export const TEST_LIMITS = {
  perHost: { limit: 5, windowMs: 60_000 },
  perOrganization: { limit: 60, windowMs: 60 * 60_000 },
} as const;

function webhookId(raw: string): string {
  if (!isUuid(raw)) throw notFound();
  return raw.toLowerCase();
}

/** Known types, `*` only alone, each once; a subscription delivers bookings, so it needs to read them. */
function subscription(request: FastifyRequest, events: string[]): string[] {
  const unknown = events.find((e) => !(SUBSCRIBABLE as readonly string[]).includes(e));
  if (unknown !== undefined) {
    throw invalidField('events', `El tipo de evento ${unknown} no existe.`, SUBSCRIBABLE);
  }
  if (events.includes('*') && events.length > 1) {
    throw invalidField('events', 'El comodín "*" debe ir solo: ["*"].', SUBSCRIBABLE);
  }
  if (!identityOf(request).scopes.includes('bookings:read')) {
    throw new AppError(
      'insufficient_scope',
      { required_scope: 'bookings:read' },
      'Suscribirse a eventos de reservas requiere el permiso bookings:read.',
    );
  }
  return [...new Set(events)];
}

const urlRefused = (reason: TargetRefusal, message: string) =>
  new AppError('validation_error', { field: 'url', reason }, message);

/** The url as it will be stored and called; the 500-character cap holds for that form too. */
async function target(deps: WebhookRouteDeps, url: string): Promise<string> {
  let href: string;
  try {
    href = (await vetTarget(url, deps.targets.policy, deps.targets.resolve)).url.href;
  } catch (error) {
    // details.reason names the rule (docs/webhooks.md), e.g. dns_timeout for a name whose DNS is silent.
    if (error instanceof TargetRefused) throw urlRefused(error.reason, error.message);
    throw error;
  }
  // Normalising percent-encodes non-ASCII paths and punycodes names, so a url of 500 characters
  // or fewer may grow past the cap (and the column's CHECK would answer 500).
  if (href.length > MAX_URL_LENGTH) {
    throw urlRefused('too_long', `La url, normalizada, no puede superar ${MAX_URL_LENGTH} caracteres.`);
  }
  return href;
}

function ownerOf(request: FastifyRequest) {
  const { integration, organization } = identityOf(request);
  return { integrationId: integration.id, organizationId: organization.id };
}

const read = { scopes: ['webhooks:read'] as const, feature: 'webhooks' as const };
const write = { scopes: ['webhooks:write'] as const, feature: 'webhooks' as const };

export function webhookRoutes(app: App, deps: WebhookRouteDeps): void {
  const { db } = deps;

  async function owned(request: FastifyRequest<{ Params: { id: string } }>): Promise<WebhookRow> {
    const row = await findWebhook(db, ownerOf(request).integrationId, webhookId(request.params.id));
    if (!row) throw notFound();
    return row;
  }

  app.get('/webhooks', { schema: { response: { 200: WebhookList } }, config: read }, async (request) => ({
    data: (await listWebhooks(db, ownerOf(request).integrationId)).map(webhookView),
  }));

  app.post(
    '/webhooks',
    {
      schema: { body: WebhookCreateBody, response: { 201: WebhookCreated } },
      config: {
        ...write,
        // The secret is shown once: a replay says so instead of showing it again.
        idempotency: {
          replayBody: (body) => ({ ...(body as object), secret: null, secret_shown_once: true }),
        },
      },
    },
    async (request, reply) => {
      const { integrationId, organizationId } = ownerOf(request);
      const events = subscription(request, request.body.events);
      const url = await target(deps, request.body.url);
      const id = randomUUID();
      const secret = generateWebhookSecret();
      reply.code(201);
      return db.tx(async (q) => {
        if ((await countWebhooksLocked(q, integrationId)) >= MAX_WEBHOOKS_PER_INTEGRATION) {
          throw invalidField(
            'url',
            `Una integración puede tener como máximo ${MAX_WEBHOOKS_PER_INTEGRATION} webhooks.`,
          );
        }
        const row = await insertWebhook(q, {
          id,
          integrationId,
          organizationId,
          url,
          events,
          description: request.body.description ?? null,
          secret: deps.secrets.seal(secret, id),
        });
        const answer = { ...webhookView(row), secret };
        await completeWithin(q, request, reply, answer);
        return answer;
      });
    },
  );

  app.get(
    '/webhooks/:id',
    { schema: { params: WebhookPath, response: { 200: Webhook } }, config: read },
    async (request) => webhookView(await owned(request)),
  );

  app.patch(
    '/webhooks/:id',
    { schema: { params: WebhookPath, body: WebhookPatchBody, response: { 200: Webhook } }, config: write },
    async (request) => {
      const id = webhookId(request.params.id);
      const { url, events, description, active } = request.body;
      const row = await updateWebhook(db, ownerOf(request).integrationId, id, {
        url: url === undefined ? undefined : await target(deps, url),
        events: events === undefined ? undefined : subscription(request, events),
        description,
        active,
      });
      if (!row) throw notFound();
      return webhookView(row);
    },
  );

  app.delete(
    '/webhooks/:id',
    { schema: { params: WebhookPath, response: { 200: Deleted } }, config: write },
    async (request) => {
      const removed = await deleteWebhook(db, ownerOf(request).integrationId, webhookId(request.params.id));
      if (!removed) throw notFound();
      return { deleted: true as const };
    },
  );

  app.post(
    '/webhooks/:id/rotate-secret',
    { schema: { params: WebhookPath, body: RotateBody, response: { 200: RotatedSecret } }, config: write },
    async (request) => {
      const id = webhookId(request.params.id);
      const secret = generateWebhookSecret();
      const until = await rotateSecret(
        db,
        ownerOf(request).integrationId,
        id,
        (webhook) => deps.secrets.seal(secret, webhook),
        request.body.overlap_minutes,
      );
      if (!until) throw notFound();
      return { id, secret, previous_secret_valid_until: until };
    },
  );

  app.post(
    '/webhooks/:id/test',
    { schema: { params: WebhookPath, response: { 202: TestQueued } }, config: write },
    async (request, reply) => {
      const webhook = await owned(request);
      // `host.` is the same host as `host`: one bucket for both spellings.
      const host = new URL(webhook.url).hostname.toLowerCase().replace(/\.$/, '');
      const { perHost, perOrganization } = TEST_LIMITS;
      const decision = await deps.limiter.hit(
        [
          { key: `webhook-test:host:${webhook.organization_id}:${host}`, ...perHost },
          { key: `webhook-test:org:${webhook.organization_id}`, ...perOrganization },
        ],
        perHost.windowMs,
        'take',
      );
      if (!decision.allowed) {
        throw new AppError('rate_limited', {
          retry_after: Math.max(1, Math.ceil(decision.retryAfterMs / 1000)),
        });
      }
      const queued = await db.tx((q) => queueTest(q, webhook));
      if (!queued) throw notFound();
      return reply.code(202).send({ ...queued, status: 'pending' as const });
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      schema: { params: WebhookPath, querystring: DeliveryListQuery, response: { 200: DeliveryList } },
      config: read,
    },
    async (request) => {
      const webhook = await owned(request);
      return {
        data: (await listDeliveries(db, webhook.id, pageSize(request.query.limit))).map(deliveryView),
      };
    },
  );
}

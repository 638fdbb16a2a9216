// The on-call view: webhooks across organizations (filtered to the failing ones), one webhook with
// its recent deliveries and their errors, and each organization's backlog. Reads only.
import { type Static, Type } from 'typebox';
import { Page, PageQuery, readPage } from '../api/pagination.js';
import { notFound } from '../http/errors.js';
import type { App } from '../http/kit.js';
import { DateTime, IdParams, Nullable, Uuid } from '../http/schemas.js';
import type { OperatorDeps } from './deps.js';
import { findOrganization } from './organizations.js';
import { backlog, findWebhook, listWebhooks, recentDeliveries, webhookQueue } from './webhooks-queries.js';

/** The position of a page across every organization: cursors are bound to an organization. */
const ALL_ORGANIZATIONS = '00000000-0000-0000-0000-000000000000';
export const RECENT_DELIVERIES = 20;
export const MAX_RECENT_DELIVERIES = 100;
export const BACKLOG_LIMIT = 50;

const Webhook = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  integration_id: Uuid,
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Nullable(Type.String()),
  active: Type.Boolean(),
  consecutive_failures: Type.Integer({ description: 'Deliveries ended dead in a row.' }),
  disabled_at: Nullable(DateTime),
  disabled_reason: Nullable(Type.String()),
  created_at: DateTime,
  updated_at: DateTime,
});

const Delivery = Type.Object({
  id: Uuid,
  event_id: Uuid,
  event_type: Type.String(),
  status: Type.String({ description: 'As last recorded: pending, failed, succeeded or dead.' }),
  in_flight: Type.Boolean({ description: 'An attempt is under way (leased).' }),
  attempt: Type.Integer({ description: 'Attempts recorded.' }),
  max_attempts: Type.Integer(),
  next_retry_at: Nullable(DateTime),
  last_status: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  last_duration_ms: Type.Integer(),
  delivered_at: Nullable(DateTime),
  created_at: DateTime,
});

const Queue = Type.Object({
  due: Type.Integer({ description: 'Deliveries due now and not leased.' }),
  oldest_due_at: Nullable(DateTime),
  oldest_due_seconds: Nullable(Type.Number()),
  in_flight: Type.Integer({ description: 'Deliveries leased: an attempt under way.' }),
  scheduled: Type.Integer({ description: 'Retries not due yet.' }),
});

const Backlog = Type.Object({
  organization_id: Uuid,
  due: Type.Integer(),
  oldest_due_at: Nullable(DateTime),
  oldest_due_seconds: Nullable(Type.Number()),
  in_flight: Type.Integer(),
  webhooks_due: Type.Integer(),
});

const WebhookListQuery = Type.Object(
  {
    organization_id: Type.Optional(Uuid),
    active: Type.Optional(Type.Enum(['true', 'false'])),
    failing: Type.Optional(
      Type.Enum(['true'], {
        description:
          'Only webhooks with a delivery waiting for a retry after a failed attempt, or a delivery created in the last hour that ended dead.',
      }),
    ),
    consecutive_failures_above: Type.Optional(Type.Integer({ minimum: 0 })),
    ...PageQuery,
  },
  { additionalProperties: false },
);

const DetailQuery = Type.Object(
  { deliveries: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RECENT_DELIVERIES })) },
  { additionalProperties: false },
);

const BacklogQuery = Type.Object(
  {
    organization_id: Type.Optional(Uuid),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  },
  { additionalProperties: false },
);

export function webhookReadRoutes(app: App, deps: OperatorDeps): void {
  const { db } = deps;

  app.get(
    '/webhooks',
    { schema: { querystring: WebhookListQuery, response: { 200: Page(Webhook) } } },
    async (request) => {
      const q = request.query;
      const filters = {
        organizationId: q.organization_id,
        active: q.active === undefined ? undefined : q.active === 'true',
        failing: q.failing === 'true',
        consecutiveFailuresAbove: q.consecutive_failures_above,
      };
      const page = await readPage(
        deps.cursors,
        {
          list: 'operator-webhooks',
          organizationId: q.organization_id ?? ALL_ORGANIZATIONS,
          limit: q.limit,
          cursor: q.cursor,
        },
        (after, take) => listWebhooks(db, filters, after, take),
      );
      return { data: page.rows, next_cursor: page.next_cursor, has_more: page.has_more };
    },
  );

  app.get(
    '/webhooks/:id',
    {
      schema: {
        params: IdParams,
        querystring: DetailQuery,
        response: {
          200: Type.Object({ ...Webhook.properties, queue: Queue, deliveries: Type.Array(Delivery) }),
        },
      },
    },
    async (request) => {
      const webhook = await findWebhook(db, request.params.id);
      if (!webhook) throw notFound();
      const [queue, deliveries] = await Promise.all([
        webhookQueue(db, webhook.id),
        recentDeliveries(db, webhook.id, request.query.deliveries ?? RECENT_DELIVERIES),
      ]);
      return { ...webhook, queue, deliveries };
    },
  );

  app.get(
    '/backlog',
    {
      schema: {
        querystring: BacklogQuery,
        response: { 200: Type.Object({ data: Type.Array(Backlog) }) },
      },
    },
    async (request) => ({
      data: await backlog(db, request.query.organization_id ?? null, request.query.limit ?? BACKLOG_LIMIT),
    }),
  );

  app.get(
    '/organizations/:id/backlog',
    { schema: { params: IdParams, response: { 200: Backlog } } },
    async (request) => {
      const organization = await findOrganization(db, request.params.id);
      const [row] = await backlog(db, organization.id, 1);
      const none: Static<typeof Backlog> = {
        organization_id: organization.id,
        due: 0,
        oldest_due_at: null,
        oldest_due_seconds: null,
        in_flight: 0,
        webhooks_due: 0,
      };
      return row ?? none;
    },
  );
}

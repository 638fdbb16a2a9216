// Organizations (tenants) and their flags.
import { type Static, Type } from 'typebox';
import type { Queryable } from '../db/db.js';
import { notFound } from '../http/errors.js';
import type { App } from '../http/kit.js';
import { DateTime, IdParams, Uuid } from '../http/schemas.js';
import { uniqueViolationTo } from './db-errors.js';
import type { OperatorDeps } from './deps.js';

const Organization = Type.Object({
  id: Uuid,
  code: Type.String(),
  name: Type.String(),
  api_enabled: Type.Boolean(),
  webhooks_enabled: Type.Boolean(),
  outbox_enabled: Type.Boolean(),
  created_at: DateTime,
  updated_at: DateTime,
});

const Flags = {
  api_enabled: Type.Optional(Type.Boolean()),
  webhooks_enabled: Type.Optional(Type.Boolean()),
  outbox_enabled: Type.Optional(Type.Boolean()),
};

const CreateOrganization = Type.Object(
  {
    code: Type.String({
      pattern: '^[1-9][0-9]{1,5}$',
      description: 'Prefix of booking numbers: 2 to 6 digits.',
    }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    ...Flags,
  },
  { additionalProperties: false },
);

const UpdateOrganization = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), ...Flags },
  { additionalProperties: false, minProperties: 1 },
);

const COLUMNS = 'id, code, name, api_enabled, webhooks_enabled, outbox_enabled, created_at, updated_at';

export async function findOrganization(q: Queryable, id: string) {
  const [row] = await q.query<Static<typeof Organization>>(
    `SELECT ${COLUMNS} FROM organizations WHERE id = $1`,
    [id],
  );
  if (!row) throw notFound();
  return row;
}

export function organizationRoutes(app: App, deps: OperatorDeps): void {
  app.post(
    '/organizations',
    { schema: { body: CreateOrganization, response: { 201: Organization } } },
    async (request, reply) => {
      const b = request.body;
      const [row] = await deps.db
        .query<Static<typeof Organization>>(
          `INSERT INTO organizations (code, name, api_enabled, webhooks_enabled, outbox_enabled)
           VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
          [b.code, b.name, b.api_enabled ?? true, b.webhooks_enabled ?? false, b.outbox_enabled ?? false],
        )
        .catch(uniqueViolationTo('code', 'Ya existe una organización con ese código.'));
      return reply.code(201).send(row as Static<typeof Organization>);
    },
  );

  app.get(
    '/organizations/:id',
    { schema: { params: IdParams, response: { 200: Organization } } },
    (request) => findOrganization(deps.db, request.params.id),
  );

  app.patch(
    '/organizations/:id',
    { schema: { params: IdParams, body: UpdateOrganization, response: { 200: Organization } } },
    async (request) => {
      const b = request.body;
      const [row] = await deps.db.query<Static<typeof Organization>>(
        `UPDATE organizations SET
           name = coalesce($2, name),
           api_enabled = coalesce($3, api_enabled),
           webhooks_enabled = coalesce($4, webhooks_enabled),
           outbox_enabled = coalesce($5, outbox_enabled),
           updated_at = now()
         WHERE id = $1 RETURNING ${COLUMNS}`,
        [
          request.params.id,
          b.name ?? null,
          b.api_enabled ?? null,
          b.webhooks_enabled ?? null,
          b.outbox_enabled ?? null,
        ],
      );
      if (!row) throw notFound();
      deps.identities.clear();
      return row;
    },
  );
}

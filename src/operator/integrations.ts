// Integrations of an organization and their API keys.
import { type Static, Type } from 'typebox';
import type { Queryable } from '../db/db.js';
import { AppError, notFound } from '../http/errors.js';
import type { App } from '../http/kit.js';
import { DateTime, DateTimeInput, IdParams, Nullable, StringEnum, Uuid } from '../http/schemas.js';
import { ALL_SCOPES, INTEGRATION_KINDS } from '../http/scopes.js';
import { generateApiKey } from '../security/secrets.js';
import type { OperatorDeps } from './deps.js';
import { findOrganization } from './organizations.js';

const Scopes = Type.Array(StringEnum([...ALL_SCOPES]), { uniqueItems: true, maxItems: ALL_SCOPES.length });

const Integration = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  name: Type.String(),
  kind: Type.String(),
  scopes: Type.Array(Type.String()),
  status: Type.String(),
  created_at: DateTime,
  updated_at: DateTime,
});

const ApiKey = Type.Object({
  id: Uuid,
  integration_id: Uuid,
  name: Nullable(Type.String()),
  prefix: Type.String(),
  scopes: Type.Array(Type.String()),
  environment: Type.String(),
  expires_at: Nullable(DateTime),
  revoked_at: Nullable(DateTime),
  created_at: DateTime,
});

const NewApiKey = Type.Object({ ...ApiKey.properties, key: Type.String() });

const CreateIntegration = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    kind: StringEnum([...INTEGRATION_KINDS]),
    scopes: Scopes,
  },
  { additionalProperties: false },
);

const UpdateIntegration = Type.Object(
  {
    status: Type.Optional(StringEnum(['active', 'disabled', 'revoked'])),
    scopes: Type.Optional(Scopes),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false, minProperties: 1 },
);

const CreateKey = Type.Object(
  {
    name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    scopes: Scopes,
    environment: StringEnum(['live', 'test']),
    expires_at: Type.Optional(Nullable(DateTimeInput)),
  },
  { additionalProperties: false },
);

const INTEGRATION_COLUMNS = 'id, organization_id, name, kind, scopes, status, created_at, updated_at';
const KEY_COLUMNS =
  'id, integration_id, name, prefix, scopes, environment, expires_at, revoked_at, created_at';

async function findIntegration(q: Queryable, id: string) {
  const [row] = await q.query<Static<typeof Integration>>(
    `SELECT ${INTEGRATION_COLUMNS} FROM integrations WHERE id = $1`,
    [id],
  );
  if (!row) throw notFound();
  return row;
}

/** Issues a key: the full secret is in this answer only; the database keeps its hash. */
export async function createApiKey(
  q: Queryable,
  integration: { id: string; scopes: string[] },
  b: Static<typeof CreateKey>,
  now: () => number = Date.now,
): Promise<Static<typeof NewApiKey>> {
  // A key never holds more scopes than its integration.
  const beyond = b.scopes.find((s) => !integration.scopes.includes(s));
  if (beyond) {
    throw new AppError(
      'validation_error',
      { field: 'scopes', allowed: integration.scopes },
      `La integración no tiene el permiso ${beyond}.`,
    );
  }
  // The service's clock, the one the guard compares expires_at with.
  if (b.expires_at && Date.parse(b.expires_at) <= now()) {
    throw new AppError('validation_error', { field: 'expires_at' }, 'expires_at debe estar en el futuro.');
  }
  const generated = generateApiKey(b.environment);
  const [row] = await q.query<Static<typeof ApiKey>>(
    `INSERT INTO api_keys (integration_id, name, prefix, secret_hash, scopes, environment, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${KEY_COLUMNS}`,
    [
      integration.id,
      b.name ?? null,
      generated.prefix,
      generated.hash,
      b.scopes,
      b.environment,
      b.expires_at ?? null,
    ],
  );
  return { ...(row as Static<typeof ApiKey>), key: generated.key };
}

export function integrationRoutes(app: App, deps: OperatorDeps): void {
  const { db } = deps;

  app.post(
    '/organizations/:id/integrations',
    { schema: { params: IdParams, body: CreateIntegration, response: { 201: Integration } } },
    async (request, reply) => {
      const organization = await findOrganization(db, request.params.id);
      const b = request.body;
      const [row] = await db.query<Static<typeof Integration>>(
        `INSERT INTO integrations (organization_id, name, kind, scopes) VALUES ($1, $2, $3, $4)
         RETURNING ${INTEGRATION_COLUMNS}`,
        [organization.id, b.name, b.kind, b.scopes],
      );
      return reply.code(201).send(row as Static<typeof Integration>);
    },
  );

  app.get(
    '/organizations/:id/integrations',
    { schema: { params: IdParams, response: { 200: Type.Object({ data: Type.Array(Integration) }) } } },
    async (request) => {
      await findOrganization(db, request.params.id);
      const data = await db.query<Static<typeof Integration>>(
        `SELECT ${INTEGRATION_COLUMNS} FROM integrations WHERE organization_id = $1
         ORDER BY created_at DESC, id DESC`,
        [request.params.id],
      );
      return { data };
    },
  );

  app.get('/integrations/:id', { schema: { params: IdParams, response: { 200: Integration } } }, (request) =>
    findIntegration(db, request.params.id),
  );

  app.patch(
    '/integrations/:id',
    { schema: { params: IdParams, body: UpdateIntegration, response: { 200: Integration } } },
    async (request) => {
      const b = request.body;
      const [row] = await db.query<Static<typeof Integration>>(
        `UPDATE integrations SET
           status = coalesce($2, status), scopes = coalesce($3, scopes), name = coalesce($4, name),
           updated_at = now()
         WHERE id = $1 RETURNING ${INTEGRATION_COLUMNS}`,
        [request.params.id, b.status ?? null, b.scopes ?? null, b.name ?? null],
      );
      if (!row) throw notFound();
      deps.identities.clear();
      return row;
    },
  );

  app.post(
    '/integrations/:id/keys',
    { schema: { params: IdParams, body: CreateKey, response: { 201: NewApiKey } } },
    async (request, reply) => {
      const integration = await findIntegration(db, request.params.id);
      return reply.code(201).send(await createApiKey(db, integration, request.body, deps.now));
    },
  );

  app.get(
    '/integrations/:id/keys',
    { schema: { params: IdParams, response: { 200: Type.Object({ data: Type.Array(ApiKey) }) } } },
    async (request) => {
      await findIntegration(db, request.params.id);
      const data = await db.query<Static<typeof ApiKey>>(
        `SELECT ${KEY_COLUMNS} FROM api_keys WHERE integration_id = $1 ORDER BY created_at DESC, id DESC`,
        [request.params.id],
      );
      return { data };
    },
  );

  app.post(
    '/keys/:id/revoke',
    { schema: { params: IdParams, response: { 200: ApiKey } } },
    async (request) => {
      // Revoking twice keeps the first revocation time.
      const [row] = await db.query<Static<typeof ApiKey>>(
        `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING ${KEY_COLUMNS}`,
        [request.params.id],
      );
      if (!row) throw notFound();
      deps.identities.clear();
      return row;
    },
  );
}

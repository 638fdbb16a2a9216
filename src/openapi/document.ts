// The OpenAPI 3.1 document of the public API, built from the routes the application registered:
// their TypeBox schemas (the ones that validate requests and serialize responses) become the
// parameters, bodies and responses; their config says the scopes, the webhooks feature and
// Idempotency-Key. What no schema says (the errors each operation can give, headers, examples and
// the words) is derived from the same config by the rules below, so the document cannot drift.
import type { TSchema } from 'typebox';
import { Booking, ExecutorPricing, OriginatorPricing } from '../api/bookings/schemas.js';
import { Customer, Driver, Vehicle } from '../api/catalogue/schemas.js';
import { Event } from '../api/events/schemas.js';
import { Deleted, ExternalIdBody, ExternalIdLink } from '../api/external-ids/schemas.js';
import { IntegrationIdentity } from '../api/integrations/schemas.js';
import { Page } from '../api/pagination.js';
import {
  DeliveryBody,
  DeliveryList,
  RotateBody,
  RotatedSecret,
  TestQueued,
  Webhook,
  WebhookCreateBody,
  WebhookCreated,
  WebhookDelivery,
  WebhookList,
  WebhookPatchBody,
} from '../api/webhooks/schemas.js';
import { ERRORS } from '../http/errors.js';
import { canonicalJson } from '../http/idempotency.js';
import type { CollectedRoute } from './collect.js';
import * as ex from './examples.js';
import { OPERATIONS, TAGS } from './operations.js';
import { ERROR_RESPONSES, errorResponse, HEADERS, header } from './responses.js';
import { codeSamples } from './samples.js';
import { EVENT_TYPES_DESCRIPTION, webhookSection } from './webhooks.js';

type Json = Record<string, unknown>;

export const API_VERSION = 'v1';
/** The date of this revision of v1 in CHANGELOG.md. */
export const DOCUMENT_DATE = '2026-11-28';

/** Schemas published under components.schemas, with the examples that illustrate them. */
const COMPONENTS: [string, TSchema, unknown?][] = [
  ['IntegrationIdentity', IntegrationIdentity, ex.integrationExample],
  ['Booking', Booking, ex.bookingExample],
  ['BookingPage', Page(Booking), ex.page(ex.bookingExample)],
  ['OriginatorPricing', OriginatorPricing],
  ['ExecutorPricing', ExecutorPricing],
  ['ExternalIdLink', ExternalIdLink, ex.externalIdLinkExample],
  ['ExternalIdBody', ExternalIdBody, { external_id: 'ERP-2026-0042' }],
  ['Deleted', Deleted, ex.deletedExample],
  ['Customer', Customer, ex.customerExample],
  ['CustomerPage', Page(Customer), ex.page(ex.customerExample)],
  ['Driver', Driver, ex.driverExample],
  ['DriverPage', Page(Driver), ex.page(ex.driverExample)],
  ['Vehicle', Vehicle, ex.vehicleExample],
  ['VehiclePage', Page(Vehicle), ex.page(ex.vehicleExample)],
  ['Event', Event, ex.eventExample],
  ['EventPage', Page(Event), ex.page(ex.eventExample)],
  ['Webhook', Webhook, ex.webhookExample],
  ['WebhookCreated', WebhookCreated, ex.webhookCreatedExample],
  ['WebhookList', WebhookList, { data: [ex.webhookExample] }],
  [
    'WebhookCreateBody',
    WebhookCreateBody,
    { url: ex.webhookExample.url, events: ex.webhookExample.events, description: 'ERP de facturación' },
  ],
  ['WebhookPatchBody', WebhookPatchBody, { active: false }],
  ['RotateSecretBody', RotateBody, { overlap_minutes: 60 }],
  ['RotatedSecret', RotatedSecret, ex.rotatedSecretExample],
  ['TestQueued', TestQueued, ex.testQueuedExample],
  ['WebhookDelivery', WebhookDelivery, ex.webhookDeliveryExample],
  ['WebhookDeliveryList', DeliveryList, { data: [ex.webhookDeliveryExample] }],
  ['WebhookEvent', DeliveryBody, ex.deliveryBodyExample],
];

/** Plain JSON of a TypeBox schema: TypeBox's own markers are not enumerable, so they go. */
const plain = (schema: unknown): Json => JSON.parse(JSON.stringify(schema)) as Json;

/**
 * Where the published form differs from the runtime one. The serializer gets one pricing object
 * with both shapes' members optional (fast: no run-time branch choice); people and generated
 * clients get the two shapes as a `oneOf` they can tell apart.
 */
const PUBLISHED_AS: [TSchema | Json, Json][] = [
  [
    Booking.properties.pricing,
    {
      description:
        'Only with scope `pricing:read` (absent otherwise). `OriginatorPricing` when `role` is `originator` or `originator_and_executor`, `ExecutorPricing` when it is `executor`. Never null: absent also when the platform holds no price for the role (no price stored; for an executor, no net stored).',
      oneOf: [
        { $ref: '#/components/schemas/OriginatorPricing' },
        { $ref: '#/components/schemas/ExecutorPricing' },
      ],
    },
  ],
];

const DESCRIPTIONS: Record<string, Record<string, string>> = {
  Event: { type: EVENT_TYPES_DESCRIPTION },
  WebhookEvent: { type: EVENT_TYPES_DESCRIPTION },
  Booking: {
    passenger: 'Only with scope `passengers:read`; without it the property does not exist (it is not null).',
    flight: '`number` is absent while the passenger has not given the flight (`pending: true`); never null.',
    confirmation:
      'Each member is absent while the platform holds none (a booking not yet confirmed); never null.',
  },
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/**
 * Constraints a component carries beside its properties. `role` decides the pricing shape: stated
 * as a `oneOf` on the booking, so a validator checks the pair and generated types narrow `pricing`
 * by `role` (the property alone can only say "one of the two").
 */
const PAIRED: Record<string, Json> = {
  Booking: {
    oneOf: [
      {
        required: ['role'],
        properties: {
          role: { enum: ['originator', 'originator_and_executor'] },
          pricing: ref('OriginatorPricing'),
        },
      },
      { required: ['role'], properties: { role: { const: 'executor' }, pricing: ref('ExecutorPricing') } },
    ],
  },
};

/** Replaces every sub-schema equal to a published component (or a published form) by its reference. */
function referencer() {
  const byShape = new Map<string, Json>();
  for (const [name, schema] of COMPONENTS) byShape.set(canonicalJson(plain(schema)), ref(name));
  for (const [schema, published] of PUBLISHED_AS) byShape.set(canonicalJson(plain(schema)), published);
  const walk = (node: unknown, root: boolean): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n, false));
    if (node === null || typeof node !== 'object') return node;
    if (!root) {
      const found = byShape.get(canonicalJson(node));
      if (found) return found;
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, false)]));
  };
  return (schema: unknown, root = false) => walk(plain(schema), root) as Json;
}

const componentName = new Map(COMPONENTS.map(([name, schema]) => [canonicalJson(plain(schema)), name]));
const exampleOf = new Map(COMPONENTS.map(([name, , example]) => [name, example]));

function componentSchemas(toRef: ReturnType<typeof referencer>): Json {
  const schemas: Json = {};
  for (const [name, schema, example] of COMPONENTS) {
    const published = toRef(schema, true);
    const properties = published.properties as Record<string, Json> | undefined;
    for (const [property, text] of Object.entries(DESCRIPTIONS[name] ?? {})) {
      if (properties?.[property]) properties[property] = { description: text, ...properties[property] };
    }
    Object.assign(published, PAIRED[name]);
    schemas[name] = example === undefined ? published : { ...published, examples: [example] };
  }
  schemas.ErrorCode = { type: 'string', enum: Object.keys(ERRORS) };
  schemas.ErrorDetails = {
    type: 'object',
    description: 'Usual keys: `param`, `field`, `allowed`, `required_scope`, `retry_after`.',
    properties: {
      param: { type: 'string' },
      field: { type: 'string' },
      allowed: { type: 'array', items: { type: 'string' } },
      required_scope: { type: 'string' },
      retry_after: { type: 'integer', description: 'Seconds, as in `Retry-After`.' },
      limit_bytes: { type: 'integer', description: 'The body limit, on a 413.' },
    },
    additionalProperties: true,
  };
  return schemas;
}

export function publishedPath(url: string, prefix: string): string {
  return url.slice(prefix.length).replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function parameters(route: CollectedRoute): Json[] {
  const out: Json[] = [];
  const add = (where: 'path' | 'query', schema: unknown) => {
    const object = plain(schema ?? {});
    const required = new Set((object.required as string[] | undefined) ?? []);
    for (const [name, property] of Object.entries((object.properties ?? {}) as Record<string, Json>)) {
      const { description, ...rest } = property;
      out.push({
        name,
        in: where,
        required: where === 'path' || required.has(name),
        ...(description ? { description } : {}),
        schema: rest,
      });
    }
  };
  add('path', route.schema.params);
  add('query', route.schema.querystring);
  if (route.config.idempotency) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Makes a retried write run once: the same key with the same request answers the first answer again (`Idempotent-Replayed: true`); with another request it is 409 `idempotency_conflict`; while the first still runs, 409 `idempotency_in_progress` (the claim expires after 5 minutes). 1 to 255 printable ASCII characters, not starting or ending with a space.',
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[!-~](?:[ -~]{0,253}[!-~])?$' },
    });
  }
  return out;
}

function successResponse(route: CollectedRoute, schema: unknown, toRef: ReturnType<typeof referencer>): Json {
  const authenticated = !route.config.public;
  const published = toRef(schema);
  const name = componentName.get(canonicalJson(plain(schema)));
  const headers: Json = { 'X-SVC-Request-Id': header('RequestId') };
  if (authenticated) {
    headers['X-RateLimit-Limit'] = { ...(HEADERS.RateLimitLimit as Json), required: true };
    headers['X-RateLimit-Remaining'] = { ...(HEADERS.RateLimitRemaining as Json), required: true };
  }
  if (route.config.idempotency) headers['Idempotent-Replayed'] = header('IdempotentReplayed');
  const media: Json = { schema: name ? ref(name) : published };
  if (name === 'Booking') {
    media.examples = {
      originator: { summary: 'As its originator (and executor) sees it', value: ex.bookingExample },
      executor: { summary: 'As an executor for another company sees it', value: ex.executorBookingExample },
    };
  } else if (name && exampleOf.get(name) !== undefined) {
    media.example = exampleOf.get(name);
  }
  return {
    description: name ? `A ${name}.` : 'The answer.',
    headers,
    content: { 'application/json': media },
  };
}

/** Methods whose requests may carry a body: the server parses one whenever it is sent. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What the server itself can answer to any request, before or around the endpoint. */
const SERVER_ERRORS = ['RequestTimeout', 'HeadersTooLarge', 'InternalError', 'Unavailable'];

/**
 * Every error status the server can give to the route. A body is parsed on every method that may
 * carry one, declared or not: a body that is not JSON (400), too large (413) or of another media
 * type (415) is refused even where the operation takes none.
 */
function errorsOf(route: CollectedRoute, conflict: boolean): string[] {
  const { schema, config } = route;
  if (config.public) return SERVER_ERRORS;
  const takesBody = BODY_METHODS.has(route.method);
  const names: string[] = [];
  const query = plain(schema.querystring ?? {}).properties as Json | undefined;
  if (query?.cursor) names.push('BadRequestList');
  else if (query || takesBody || config.idempotency) names.push('BadRequest');
  names.push('Unauthorized');
  names.push((config.scopes ?? []).length > 0 ? 'Forbidden' : 'ForbiddenAnyKey');
  if (schema.params) names.push('NotFound');
  if (conflict) names.push('Conflict');
  else if (config.idempotency) names.push('IdempotencyConflict');
  if (takesBody) names.push('PayloadTooLarge', 'UnsupportedMediaType');
  names.push('TooManyRequests', ...SERVER_ERRORS);
  return names;
}

function operation(route: CollectedRoute, key: string, toRef: ReturnType<typeof referencer>): Json {
  const text = OPERATIONS[key];
  if (!text) throw new Error(`${key} has no entry in src/openapi/operations.ts`);
  const scopes = [...(route.config.scopes ?? [])];
  const notes: string[] = [];
  if (text.description) notes.push(text.description);
  if (!route.config.public) {
    notes.push(
      scopes.length
        ? `Scopes: ${scopes.map((s) => `\`${s}\``).join(', ')}.`
        : 'Scopes: none (any valid key).',
    );
  }
  if (route.config.feature === 'webhooks') notes.push('Needs webhooks enabled for the organization.');
  const responses: Json = {};
  const declared = route.schema.response ?? { 200: { type: 'object' } };
  for (const [status, schema] of Object.entries(declared))
    responses[status] = successResponse(route, schema, toRef);
  for (const name of errorsOf(route, text.conflict === true)) {
    responses[String(ERROR_RESPONSES[name]!.status)] = { $ref: `#/components/responses/${name}` };
  }
  const op: Json = {
    operationId: text.operationId,
    tags: [text.tag],
    summary: text.summary,
    description: notes.join('\n\n'),
  };
  const params = parameters(route);
  if (params.length) op.parameters = params;
  let bodyExample: unknown;
  if (route.schema.body !== undefined) {
    const name = componentName.get(canonicalJson(plain(route.schema.body)));
    bodyExample = name ? exampleOf.get(name) : undefined;
    op.requestBody = {
      required: true,
      content: { 'application/json': { schema: name ? ref(name) : toRef(route.schema.body) } },
    };
  }
  op.responses = responses;
  op.security = route.config.public ? [] : [{ bearerAuth: scopes }];
  if (!route.config.public) op['x-required-scopes'] = scopes;
  if (route.config.feature) op['x-feature'] = route.config.feature;
  op['x-codeSamples'] = codeSamples({
    method: route.method,
    path: key.slice(key.indexOf(' ') + 1),
    operationId: text.operationId,
    body: bodyExample,
    public: route.config.public === true,
  });
  return op;
}

// ---------------------------------------------------------------------------------------------

const INFO_DESCRIPTION = `The public Integration API v1 of the transfer-booking platform: one organization's bookings, customers, drivers, vehicles and event log, its webhooks, and the ids your system keeps for its bookings.

**Authentication.** Every request carries \`Authorization: Bearer <key>\` (\`svc_live_\` or \`svc_test_\` + 40 alphanumerics; a server accepts only the keys of its own environment, production only live keys: another answers 401 \`wrong_environment\`). The key decides the organization; its effective scopes are those it shares with its integration (GET /integrations/me). Each operation lists the scopes it needs in its security requirement and in \`x-required-scopes\`; all of them are needed.

**Errors.** Every error has the body \`{"error": {"code", "message", "request_id", "details"?}}\`; decide by \`code\`. The only exception is the server-level 405 (a method that does not exist on a path): header \`Allow\`, a plain-text body, no envelope and no \`X-SVC-Request-Id\`. A path that does not exist answers 404 \`not_found\` with the envelope.

**Limits.** 600 requests per minute per key, 1200 per organization, 300 per key and endpoint (sliding windows); 60 authentication failures per IP. Answers to a valid key carry \`X-RateLimit-Limit\` and \`X-RateLimit-Remaining\`; a 429 carries \`Retry-After\` instead.

**Pagination.** Lists take \`limit\` (1 to 100, default 25; more is cut to 100) and \`cursor\` (the previous \`next_cursor\`) and answer \`{data, next_cursor, has_more}\`.

**Versioning.** Compatible changes require nothing from clients and are dated in the changelog; a breaking change is a new version under a new path prefix.`;

/** Where the document says the API is: an absolute url template, so tools resolve paths under it. */
export interface ServerDefaults {
  scheme: 'https' | 'http';
  host: string;
}

/** The defaults of the committed file: the server `npm start` runs (SVC_PORT 8080). */
export const LOCAL_SERVER: ServerDefaults = { scheme: 'http', host: 'localhost:8080' };

/** The whole document for the routes registered under `prefix`. */
export function openapiDocument(
  routes: readonly CollectedRoute[],
  prefix: string,
  server: ServerDefaults = LOCAL_SERVER,
): Json {
  const toRef = referencer();
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    if (!route.url.startsWith(`${prefix}/`)) continue;
    const path = publishedPath(route.url, prefix);
    const key = `${route.method} ${path}`;
    paths[path] ??= {};
    (paths[path] as Json)[route.method.toLowerCase()] = operation(route, key, toRef);
  }
  for (const key of Object.keys(OPERATIONS)) {
    const [method, path] = key.split(' ') as [string, string];
    if (!(paths[path] as Json | undefined)?.[method.toLowerCase()]) {
      throw new Error(`${key} is described in src/openapi/operations.ts but no route serves it`);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'SVC Integration API',
      version: `${API_VERSION} (${DOCUMENT_DATE})`,
      summary: 'Bookings, catalogue, event log, webhooks and external ids of one organization.',
      description: INFO_DESCRIPTION,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [
      {
        url: `{scheme}://{host}${prefix}`,
        description: 'The base url (in production https://<your API host>/api/v1)',
        variables: {
          scheme: { enum: ['https', 'http'], default: server.scheme },
          host: {
            default: server.host,
            description:
              'Host name, and port when not the default. A server that serves this document puts its own here (and its scheme); the committed file has those of a local `npm start`.',
          },
        },
      },
    ],
    security: [{ bearerAuth: [] }],
    tags: [...TAGS],
    paths,
    webhooks: webhookSection(),
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'svc_live_ or svc_test_ + 40 alphanumerics',
          description:
            'An API key issued by the operator to an integration. The scopes listed in each security requirement are all required.',
        },
      },
      headers: HEADERS,
      examples: {
        BookingDelivery: { summary: 'A booking event', value: ex.deliveryBodyExample },
        WebhookTestDelivery: { summary: 'A webhook.test event', value: ex.testDeliveryBodyExample },
      },
      responses: Object.fromEntries(
        Object.entries(ERROR_RESPONSES).map(([name, response]) => [name, errorResponse(response)]),
      ),
      schemas: componentSchemas(toRef),
    },
  };
}

// The OpenAPI 3.1 document of the public API, built from the routes the application registered:
// their TypeBox schemas (the ones that validate requests and serialize responses) become the
// parameters, bodies and responses; their config says the scopes, the webhooks feature and
// Idempotency-Key. What no schema says (the errors each operation can give, headers, examples and
// the words) is derived from the same config by the rules below, so the document cannot drift.
import type { TSchema } from 'typebox';
import { Booking, ExecutorPricing, OriginatorPricing } from '../api/bookings/schemas.js';
import { Customer, Driver, Vehicle } from '../api/catalogue/schemas.js';
import { EVENT_TYPES, Event } from '../api/events/schemas.js';
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
import { ERRORS, type ErrorCode } from '../http/errors.js';
import { canonicalJson } from '../http/idempotency.js';
import type { CollectedRoute } from './collect.js';
import * as ex from './examples.js';
import { OPERATIONS, TAGS } from './operations.js';

type Json = Record<string, unknown>;

export const API_VERSION = 'v1';
/** The date of this revision of v1 in CHANGELOG.md. */
export const DOCUMENT_DATE = '2026-11-23';

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
        'Only with scope `pricing:read` (absent otherwise). `OriginatorPricing` when `role` is `originator` or `originator_and_executor`, `ExecutorPricing` when it is `executor`; null when the platform stored no price.',
      oneOf: [
        { $ref: '#/components/schemas/OriginatorPricing' },
        { $ref: '#/components/schemas/ExecutorPricing' },
        { type: 'null' },
      ],
    },
  ],
];

const DESCRIPTIONS: Record<string, Record<string, string>> = {
  Booking: {
    passenger: 'Only with scope `passengers:read`; without it the property does not exist (it is not null).',
  },
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

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

// ---------------------------------------------------------------------------------------------
// Headers and error responses

const HEADERS: Json = {
  RequestId: {
    description: 'Identifies the request; the same value as `error.request_id`.',
    required: true,
    schema: { type: 'string', pattern: '^req_[A-Za-z0-9_-]{16}$' },
  },
  RateLimitLimit: {
    description: 'The per-key limit per minute (600). On every answer to a valid key except a 429.',
    schema: { type: 'integer' },
  },
  RateLimitRemaining: {
    description: 'The smallest remainder of the three buckets (key, organization, endpoint).',
    schema: { type: 'integer' },
  },
  RetryAfter: {
    description: 'Seconds to wait before retrying.',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  IdempotentReplayed: {
    description:
      'Present (`true`) when the answer is the replay of an earlier request with this Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
};

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

interface ErrorResponse {
  status: number;
  codes: ErrorCode[];
  description: string;
}

const ERROR_RESPONSES: Record<string, ErrorResponse> = {
  BadRequest: {
    status: 400,
    codes: ['validation_error'],
    description: 'A parameter or field is invalid: `details.param` or `details.field` says which.',
  },
  BadRequestList: {
    status: 400,
    codes: ['validation_error', 'invalid_cursor'],
    description:
      'A parameter is invalid (`details.param`), or the cursor is tampered, truncated, from another list or signed with a retired key: start again from the first page.',
  },
  Unauthorized: {
    status: 401,
    codes: ['unauthorized', 'invalid_key', 'expired_key', 'revoked_key', 'wrong_environment'],
    description: 'No valid key. Do not retry with the same key.',
  },
  Forbidden: {
    status: 403,
    codes: ['integration_disabled', 'api_disabled', 'insufficient_scope'],
    description:
      'The integration is disabled, the API (or the webhooks part) is not enabled for the organization, or a scope is missing (`details.required_scope`). Do not retry.',
  },
  ForbiddenAnyKey: {
    status: 403,
    codes: ['integration_disabled', 'api_disabled'],
    description: 'The integration is disabled or the API is not enabled for the organization.',
  },
  NotFound: {
    status: 404,
    codes: ['not_found'],
    description: "Absent, not of the caller's organization, or an id that cannot exist: the same answer.",
  },
  Conflict: {
    status: 409,
    codes: ['conflict', 'idempotency_conflict', 'idempotency_in_progress'],
    description:
      'The external id already points to another booking of this integration, or the Idempotency-Key was used with another request or is still running.',
  },
  IdempotencyConflict: {
    status: 409,
    codes: ['idempotency_conflict', 'idempotency_in_progress'],
    description: 'The Idempotency-Key was used with another request, or a request with it is still running.',
  },
  PayloadTooLarge: {
    status: 413,
    codes: ['payload_too_large'],
    description: 'The body is over 256 KB (262,144 bytes of UTF-8).',
  },
  UnsupportedMediaType: {
    status: 415,
    codes: ['unsupported_media_type'],
    description: 'The body is not `application/json`, or there is no Content-Type.',
  },
  TooManyRequests: {
    status: 429,
    codes: ['rate_limited'],
    description: 'A limit is full: wait `Retry-After` seconds, then retry with exponential back-off.',
  },
  InternalError: {
    status: 500,
    codes: ['internal'],
    description: 'Unforeseen failure. Retry with exponential back-off a few times.',
  },
};

/** The error body, `code` narrowed to those one response can carry. */
function errorEnvelope(code: Json): Json {
  return {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'request_id'],
        properties: {
          code: { ...code, description: 'Stable: decide by it.' },
          message: { type: 'string', description: 'For people (Spanish); may change.' },
          request_id: { type: 'string', description: 'The same value as the `X-SVC-Request-Id` header.' },
          details: { $ref: '#/components/schemas/ErrorDetails' },
        },
      },
    },
  };
}

function errorResponse({ status, codes, description }: ErrorResponse): Json {
  const headers: Json = { 'X-SVC-Request-Id': header('RequestId') };
  if (status === 429) headers['Retry-After'] = header('RetryAfter');
  else if (status !== 401) {
    headers['X-RateLimit-Limit'] = header('RateLimitLimit');
    headers['X-RateLimit-Remaining'] = header('RateLimitRemaining');
  }
  return {
    description: `${description} Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
    headers,
    content: {
      'application/json': {
        schema: errorEnvelope({ $ref: '#/components/schemas/ErrorCode', enum: codes }),
        examples: Object.fromEntries(codes.map((c) => [c, { value: ex.errorExample(c) }])),
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Operations

/** `/api/v1/bookings/:id` -> `/bookings/{id}`. */
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

function errorsOf(route: CollectedRoute, conflict: boolean): string[] {
  const { schema, config } = route;
  if (config.public) return ['InternalError'];
  const hasBody = schema.body !== undefined;
  const names: string[] = [];
  const query = plain(schema.querystring ?? {}).properties as Json | undefined;
  if (query?.cursor) names.push('BadRequestList');
  else if (query || hasBody || config.idempotency) names.push('BadRequest');
  names.push('Unauthorized');
  names.push((config.scopes ?? []).length > 0 ? 'Forbidden' : 'ForbiddenAnyKey');
  if (schema.params) names.push('NotFound');
  if (conflict) names.push('Conflict');
  else if (config.idempotency) names.push('IdempotencyConflict');
  if (hasBody) names.push('PayloadTooLarge', 'UnsupportedMediaType');
  names.push('TooManyRequests', 'InternalError');
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
  if (route.schema.body !== undefined) {
    const name = componentName.get(canonicalJson(plain(route.schema.body)));
    op.requestBody = {
      required: true,
      content: { 'application/json': { schema: name ? ref(name) : toRef(route.schema.body) } },
    };
  }
  op.responses = responses;
  op.security = route.config.public ? [] : [{ bearerAuth: scopes }];
  if (!route.config.public) op['x-required-scopes'] = scopes;
  if (route.config.feature) op['x-feature'] = route.config.feature;
  return op;
}

// ---------------------------------------------------------------------------------------------
// Webhook deliveries

const DELIVERY_HEADERS: [string, string, Json][] = [
  ['User-Agent', '`SVC-Webhooks/1`.', { type: 'string', const: 'SVC-Webhooks/1' }],
  ['X-SVC-Event', 'The event type.', { type: 'string', enum: [...EVENT_TYPES] }],
  [
    'X-SVC-Event-Id',
    "The event id: the body's `id`, and the event's in GET /events.",
    { type: 'string', format: 'uuid' },
  ],
  [
    'X-SVC-Delivery',
    'The delivery id: the same on every retry of this delivery.',
    { type: 'string', format: 'uuid' },
  ],
  ['X-SVC-Attempt', 'Attempt number, starting at 1.', { type: 'integer', minimum: 1 }],
  ['X-SVC-Timestamp', 'Unix time in seconds when the attempt was signed.', { type: 'integer' }],
  [
    'X-SVC-Signature',
    '`v1=<hex>`: HMAC-SHA256 of `"{X-SVC-Timestamp}.{raw body}"` keyed with the whole secret (`whsec_…`). During a rotation overlap, two values separated by a comma: the new one, then the previous one. Verify it before reading the body.',
    { type: 'string', pattern: '^v1=[0-9a-f]{64}(,v1=[0-9a-f]{64})?$' },
  ],
];

const EVENT_TEXT: Record<string, string> = {
  'booking.created': 'A booking was created.',
  'booking.updated': 'A booking changed (`changes` names the columns).',
  'booking.assigned':
    "A booking's driver, vehicle or executor changed. An executor that lost the booking receives `data: null`.",
  'booking.started': 'The service of a booking started.',
  'booking.completed': 'A booking was completed.',
  'booking.cancelled': 'A booking was cancelled.',
  'booking.no_show': 'The passenger did not show.',
  'booking.deleted': 'A booking was deleted; `data` is the booking as it was just before.',
  'webhook.test':
    'Sent only by POST /webhooks/{id}/test: `resource.type` is `webhook`, `changes` empty, `data` null.',
};

function webhookSection(): Json {
  const out: Json = {};
  for (const type of EVENT_TYPES) {
    out[type] = {
      post: {
        operationId: `deliver${type.replace(/(^|[._])([a-z])/g, (_m, _s, c: string) => c.toUpperCase())}`,
        tags: ['Webhook deliveries'],
        summary: type,
        description: `${EVENT_TEXT[type]} Sent as an HTTP POST to the webhook's url, retried up to 8 times over a little over an hour (3 while your server answers a permanent 4xx). Deduplicate by \`X-SVC-Event-Id\`: a delivery may arrive more than once.`,
        parameters: DELIVERY_HEADERS.map(([name, description, schema]) => ({
          name,
          in: 'header',
          required: true,
          description,
          schema,
        })),
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: ref('WebhookEvent'),
              examples: {
                body: {
                  $ref: `#/components/examples/${type === 'webhook.test' ? 'WebhookTestDelivery' : 'BookingDelivery'}`,
                },
              },
            },
          },
        },
        responses: {
          '200': { description: 'Any 2xx within 10 seconds is a success.' },
          '400': {
            description:
              'A permanent 4xx (any but 408, 409, 425 and 429) caps the delivery at 3 attempts; any other answer, a redirect, a time-out or a network error is retried.',
          },
        },
        security: [{ webhookSignature: [] }],
      },
    };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

const INFO_DESCRIPTION = `The public Integration API v1 of the transfer-booking platform: one organization's bookings, customers, drivers, vehicles and event log, its webhooks, and the ids your system keeps for its bookings.

**Authentication.** Every request carries \`Authorization: Bearer <key>\` (\`svc_live_\` + 40 alphanumerics). The key decides the organization; its effective scopes are those it shares with its integration (GET /integrations/me). Each operation lists the scopes it needs in its security requirement and in \`x-required-scopes\`; all of them are needed.

**Errors.** Every error has the body \`{"error": {"code", "message", "request_id", "details"?}}\`; decide by \`code\`. The only exception is the server-level 405 (a method that does not exist on a path): header \`Allow\`, a plain-text body, no envelope and no \`X-SVC-Request-Id\`. A path that does not exist answers 404 \`not_found\` with the envelope.

**Limits.** 600 requests per minute per key, 1200 per organization, 300 per key and endpoint (sliding windows); 60 authentication failures per IP. Answers to a valid key carry \`X-RateLimit-Limit\` and \`X-RateLimit-Remaining\`; a 429 carries \`Retry-After\` instead.

**Pagination.** Lists take \`limit\` (1 to 100, default 25; more is cut to 100) and \`cursor\` (the previous \`next_cursor\`) and answer \`{data, next_cursor, has_more}\`.

**Versioning.** Compatible changes require nothing from clients and are dated in the changelog; a breaking change is a new version under a new path prefix.`;

/** The whole document for the routes registered under `prefix`. */
export function openapiDocument(routes: readonly CollectedRoute[], prefix: string): Json {
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
    servers: [{ url: prefix, description: 'This server (in production, the base url ending in /api/v1)' }],
    security: [{ bearerAuth: [] }],
    tags: [
      ...TAGS,
      { name: 'Webhook deliveries', description: 'What the service sends to your webhook urls.' },
    ],
    paths,
    webhooks: webhookSection(),
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'svc_live_ + 40 alphanumerics',
          description:
            'An API key issued by the operator to an integration. The scopes listed in each security requirement are all required.',
        },
        webhookSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'X-SVC-Signature',
          description: 'Deliveries are signed with the webhook secret; see the X-SVC-Signature header.',
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

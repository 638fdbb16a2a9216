// The shared pieces of every operation's answers: the documented response headers, and one named
// error response per status with the contract's envelope and the codes that status can carry.
import type { ErrorCode } from '../http/errors.js';
import * as ex from './examples.js';

type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Headers and error responses

export const HEADERS: Json = {
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

export const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

interface ErrorResponse {
  status: number;
  codes: ErrorCode[];
  description: string;
}

export const ERROR_RESPONSES: Record<string, ErrorResponse> = {
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
  // The server's own answers, before or around any endpoint (docs/decisions.md, "Requests and errors").
  RequestTimeout: {
    status: 408,
    codes: ['request_timeout'],
    description:
      'The headers or the body did not arrive whole within the request time-out; the connection is closed. Send the request again.',
  },
  HeadersTooLarge: {
    status: 431,
    codes: ['headers_too_large'],
    description: 'The request headers are over 16 KiB; the connection is closed. Fix the request.',
  },
  Unavailable: {
    status: 503,
    codes: ['unavailable'],
    description:
      'The process that received the request is shutting down; the connection is closed. Retry at once: another process answers.',
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

export function errorResponse({ status, codes, description }: ErrorResponse): Json {
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
        schema: errorEnvelope({ $ref: '#/components/schemas/ErrorCode', type: 'string', enum: codes }),
        examples: Object.fromEntries(codes.map((c) => [c, { value: ex.errorExample(c) }])),
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Operations

/** `/api/v1/bookings/:id` -> `/bookings/{id}`. */

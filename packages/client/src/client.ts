// The typed client of the Integration API v1: one typed method per operation of the published
// document, an async iterator over every page of a list, retries with exponential back-off and
// jitter where a retry is safe, and errors that carry the contract's `code`, `request_id` and
// `details`. Types and the operation table are generated from openapi/openapi.json.
import { randomUUID } from 'node:crypto';
import { OPERATIONS } from './operations.js';
import type { components, operations } from './schema.js';

export type { components, operations, paths } from './schema.js';
export type Schemas = components['schemas'];
/**
 * A booking, as reads return it and as webhook events carry it in `data`. A union by `role`:
 * `booking.role === 'executor'` narrows `pricing` to `ExecutorPricing`, the other roles to
 * `OriginatorPricing`.
 */
export type Booking = Schemas['Booking'];
export type OriginatorPricing = Schemas['OriginatorPricing'];
export type ExecutorPricing = Schemas['ExecutorPricing'];
export type Customer = Schemas['Customer'];
export type Driver = Schemas['Driver'];
export type Vehicle = Schemas['Vehicle'];
export type Event = Schemas['Event'];
export type Webhook = Schemas['Webhook'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type ErrorCode = Schemas['ErrorCode'];

export type OperationId = keyof operations & keyof typeof OPERATIONS;

type Params<K extends OperationId> = operations[K]['parameters'];
type PathOf<K extends OperationId> = Params<K> extends { path: infer P } ? P : never;
type QueryOf<K extends OperationId> = Params<K> extends { query?: infer Q } ? Q : never;
type BodyOf<K extends OperationId> = operations[K] extends {
  requestBody: { content: { 'application/json': infer B } };
}
  ? B
  : never;

type SuccessStatus = 200 | 201 | 202;
/** The body of the operation's success answer. */
export type ResultOf<K extends OperationId> = {
  [S in keyof operations[K]['responses']]: S extends SuccessStatus
    ? operations[K]['responses'][S] extends { content: { 'application/json': infer R } }
      ? R
      : never
    : never;
}[keyof operations[K]['responses']];

/** The Idempotency-Key option, on the operations that accept the header only. */
type IdempotencyOf<K extends OperationId> = (typeof OPERATIONS)[K]['idempotent'] extends true
  ? {
      /**
       * Idempotency-Key (`true` makes one). It makes the write safe to retry, so the client also
       * retries it after a 5xx or a network error.
       */
      idempotencyKey?: string | true;
    }
  : { idempotencyKey?: never };

/** What one call takes: only the parts its operation has are allowed, and required ones must be given. */
export type Args<K extends OperationId> = ([PathOf<K>] extends [never] | [undefined]
  ? { path?: never }
  : { path: PathOf<K> }) &
  ([QueryOf<K>] extends [never] | [undefined] ? { query?: never } : { query?: QueryOf<K> }) &
  ([BodyOf<K>] extends [never] ? { body?: never } : { body: BodyOf<K> }) &
  IdempotencyOf<K> & { signal?: AbortSignal };

type PagedId = { [K in OperationId]: (typeof OPERATIONS)[K]['paged'] extends true ? K : never }[OperationId];
type ItemOf<K extends OperationId> = ResultOf<K> extends { data: (infer T)[] } ? T : never;

export interface RetryOptions {
  /** Retries after the first attempt (default 4). */
  retries?: number;
  /** First back-off in ms (default 250), doubled each retry, up to `maxDelayMs` (default 8000). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /**
   * The longest the client waits before one retry (default 30000). A `429` whose `Retry-After`
   * asks for more is thrown at once as its `ApiError` (`details.retry_after` says how long), rather
   * than holding the call for that long.
   */
  maxRetryWaitMs?: number;
  /**
   * Told before each retry: its number (1 for the first), the wait in ms, and what failed (the
   * `ApiError` of the answer, or the network error). For a log line or a metric; it cannot cancel.
   */
  onRetry?: (attempt: number, waitMs: number, error: unknown) => void;
}

export interface ClientOptions {
  /**
   * Where the API is: its origin (`https://api.example.com`, the client adds `/api/v1`) or the
   * whole url of the version (`https://api.example.com/api/v1`, also behind a path prefix).
   */
  baseUrl: string;
  /** The integration's API key (`svc_live_…` or `svc_test_…`). */
  apiKey: string;
  retry?: RetryOptions;
  fetch?: typeof fetch;
  /** Waits `ms`; replaceable in tests. */
  sleep?: (ms: number) => Promise<void>;
  /** A number in [0, 1) for the jitter; replaceable in tests. */
  random?: () => number;
}

/** An answer of the API that is not a success, with the contract's error fields. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode | 'unknown',
    message: string,
    readonly request_id: string | null,
    readonly details: Record<string, unknown> | undefined,
    readonly headers: Headers,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The path of the version this client speaks; every operation path is under it. */
const API_PREFIX = '/api/v1';

/**
 * The url every operation path is appended to. A bare origin gets `/api/v1`; a url that already
 * ends in `/api/v1` is kept; any other path would only ever answer 404, so it is refused here with
 * what to write instead.
 */
function normalizeBaseUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(
      `baseUrl must be an absolute http(s) url such as https://api.example.com (given: ${JSON.stringify(baseUrl)})`,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TypeError(`baseUrl must be an http(s) url (given: ${url.protocol})`);
  }
  if (url.search || url.hash || url.username || url.password) {
    throw new TypeError('baseUrl must not carry a query, a fragment or credentials (the key goes in apiKey)');
  }
  const path = url.pathname.replace(/\/+$/, '');
  if (path === '') return `${url.origin}${API_PREFIX}`;
  if (path.endsWith(API_PREFIX)) return `${url.origin}${path}`;
  throw new TypeError(
    `baseUrl ${url.origin}${path} does not end in ${API_PREFIX}: give the origin (${url.origin}) ` +
      `or the url of the version (${url.origin}${path.replace(/\/api(\/v\d+)?$/, '')}${API_PREFIX})`,
  );
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const RETRIED_STATUSES = new Set([500, 502, 503, 504]);

async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text();
  let envelope: {
    error?: { code?: ErrorCode; message?: string; request_id?: string; details?: Record<string, unknown> };
  } = {};
  try {
    envelope = JSON.parse(text);
  } catch {}
  const error = envelope.error;
  if (error?.code) {
    return new ApiError(
      res.status,
      error.code,
      error.message ?? '',
      error.request_id ?? null,
      error.details,
      res.headers,
    );
  }
  // The server-level 405 has no envelope; decide by the status.
  const code = res.status === 405 ? 'method_not_allowed' : 'unknown';
  return new ApiError(
    res.status,
    code,
    text || res.statusText,
    res.headers.get('x-svc-request-id'),
    undefined,
    res.headers,
  );
}

export interface Client {
  /** Calls one operation by its operationId. */
  call<K extends OperationId>(operation: K, args?: Args<K>): Promise<ResultOf<K>>;
  /** Every item of a list, page after page, with the same filters on each page. */
  paginate<K extends PagedId>(operation: K, args?: Args<K>): AsyncIterableIterator<ItemOf<K>>;
}

export type TypedClient = Client & { [K in OperationId]: (args?: Args<K>) => Promise<ResultOf<K>> };

export function createClient(options: ClientOptions): TypedClient {
  const doFetch = options.fetch ?? fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const random = options.random ?? Math.random;
  const retries = options.retry?.retries ?? 4;
  const base = options.retry?.baseDelayMs ?? 250;
  const cap = options.retry?.maxDelayMs ?? 8000;
  const maxWait = options.retry?.maxRetryWaitMs ?? 30_000;
  const onRetry = options.retry?.onRetry;
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '') {
    throw new TypeError('apiKey is missing: pass the integration key (svc_live_… or svc_test_…)');
  }

  /** Full jitter: a random wait up to the exponential bound of this retry. */
  const backoff = (retry: number) => Math.floor(random() * Math.min(cap, base * 2 ** retry));

  /** Says so and waits before retry `attempt + 1`, or throws `error` when the wait is over the cap. */
  async function retryAfter(attempt: number, waitMs: number, error: unknown): Promise<void> {
    if (waitMs > maxWait) throw error;
    onRetry?.(attempt + 1, waitMs, error);
    await sleep(waitMs);
  }

  async function call<K extends OperationId>(
    operation: K,
    args: Args<K> = {} as Args<K>,
  ): Promise<ResultOf<K>> {
    const spec = OPERATIONS[operation];
    const a = args as {
      path?: Record<string, string>;
      query?: Record<string, unknown>;
      body?: unknown;
      idempotencyKey?: string | true;
      signal?: AbortSignal;
    };
    const path = spec.path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
      const value = a.path?.[name];
      if (value === undefined) throw new TypeError(`${operation}: path parameter ${name} is missing`);
      return encodeURIComponent(value);
    });
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(a.query ?? {})) {
      if (value !== undefined && value !== null) query.set(name, String(value));
    }
    const url = `${baseUrl}${path}${query.size ? `?${query}` : ''}`;
    const headers: Record<string, string> = {
      authorization: `Bearer ${options.apiKey}`,
      accept: 'application/json',
    };
    if (a.body !== undefined) headers['content-type'] = 'application/json';
    const idempotencyKey =
      spec.idempotent && a.idempotencyKey !== undefined
        ? a.idempotencyKey === true
          ? randomUUID()
          : a.idempotencyKey
        : undefined;
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    // A 5xx or a lost connection may have left the write done: only retried when that is harmless.
    const retriable = SAFE_METHODS.has(spec.method) || idempotencyKey !== undefined;
    const init: RequestInit = {
      method: spec.method,
      headers,
      ...(a.body === undefined ? {} : { body: JSON.stringify(a.body) }),
      ...(a.signal ? { signal: a.signal } : {}),
    };

    for (let attempt = 0; ; attempt += 1) {
      let res: Response;
      try {
        res = await doFetch(url, init);
      } catch (error) {
        if (a.signal?.aborted || !retriable || attempt >= retries) throw error;
        await retryAfter(attempt, backoff(attempt), error);
        continue;
      }
      if (res.ok) return (await res.json()) as ResultOf<K>;
      const error = await errorOf(res);
      if (attempt >= retries) throw error;
      if (res.status === 429) {
        // A 429 is refused before any work: safe to repeat for every method, after Retry-After.
        const seconds = Number(res.headers.get('retry-after') ?? error.details?.retry_after);
        const wait = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
        await retryAfter(attempt, Math.max(wait, backoff(attempt)), error);
        continue;
      }
      if (RETRIED_STATUSES.has(res.status) && retriable) {
        await retryAfter(attempt, backoff(attempt), error);
        continue;
      }
      throw error;
    }
  }

  async function* paginate<K extends PagedId>(
    operation: K,
    args: Args<K> = {} as Args<K>,
  ): AsyncIterableIterator<ItemOf<K>> {
    const a = args as Args<K> & { query?: Record<string, unknown> };
    let cursor: string | null = null;
    do {
      // The cursor keeps the position only: the filters go with every page.
      const query = { ...(a.query ?? {}), ...(cursor ? { cursor } : {}) };
      const page = (await call(operation, { ...a, query } as Args<K>)) as {
        data: ItemOf<K>[];
        next_cursor: string | null;
      };
      yield* page.data;
      cursor = page.next_cursor;
    } while (cursor);
  }

  const client = { call, paginate } as TypedClient;
  for (const id of Object.keys(OPERATIONS) as OperationId[]) {
    (client as unknown as Record<string, unknown>)[id] = (args?: Args<typeof id>) => call(id, args);
  }
  return client;
}

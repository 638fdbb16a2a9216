// The HTTP kit every request of both APIs passes through: request id, JSON-only bodies with a
// size cap, schema validation, the single error renderer, 404 and the server-level 405.
import { randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { createDeadlines, isDeadlineExceeded } from './deadline.js';
import { AppError, errorBody } from './errors.js';
import { createFailureLog } from './failure-log.js';
import type { Metrics } from './metrics.js';
import { addLogFields, requestLogger } from './request-logger.js';
import { compileValidator, type ValidationPart, validationError } from './validation.js';

/** 256 KiB, counted in bytes of the UTF-8 body. */
export const BODY_LIMIT = 256 * 1024;
export const REQUEST_ID_HEADER = 'x-svc-request-id';

export interface KitOptions {
  logger: FastifyBaseLogger;
  /** Fastify's trustProxy: false, true, a hop count, or proxy addresses and CIDR ranges. */
  trustProxy?: boolean | number | string[];
  /** Drop a request not received whole within this time (ms); 0 never. */
  requestTimeoutMs?: number;
  /** Names the application in metrics. */
  name: 'public' | 'operator';
  metrics?: Metrics;
}

export type App = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

// Request ids are cut from 4 KiB of random bytes drawn at once: one call to the generator for 341
// requests instead of one each.
let randomPool = Buffer.alloc(0);
let randomUsed = 0;
const newRequestId = () => {
  if (randomUsed + 12 > randomPool.length) {
    randomPool = randomBytes(4092);
    randomUsed = 0;
  }
  randomUsed += 12;
  return `req_${randomPool.toString('base64url', randomUsed - 12, randomUsed)}`;
};

/**
 * The response serializer of a route whose answer a view builds member by member, typed by the
 * route's response schema (the booking view): nothing is left for the schema's compiled serializer
 * to strip or coerce, and the built-in JSON.stringify writes the text flat in one pass, where the
 * compiled one concatenates it piece by piece and checks every nullable object against the
 * branches of its `anyOf`. The schema still validates these answers in the contract tests.
 */
export const viewSerializer = () => (data: unknown) => JSON.stringify(data);

/**
 * What Node's HTTP parser refuses before there is a request (a time-out while headers or body
 * arrive, oversized headers, bytes that are not HTTP), answered with the envelope and a request id
 * of its own instead of Fastify's default body. The connection is closed after it.
 */
function clientErrorAnswer(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const appError =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new AppError('request_timeout')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new AppError('headers_too_large')
        : new AppError('validation_error', { param: 'request' }, 'La petición HTTP no es válida.');
  if (socket.writable) {
    const id = newRequestId();
    const body = JSON.stringify(errorBody(appError, id));
    socket.write(
      `HTTP/1.1 ${appError.status} ${STATUS_CODES[appError.status]}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `${REQUEST_ID_HEADER}: ${id}\r\ncache-control: no-store\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Fastify reads a hop count as "trust nobody" (it cannot tell a proxy from a client that wrote
 * the header itself), so a count is given as the function it stands for: trust the last N hops.
 * Safe only where clients reach the service through the proxies alone (docs/configuration.md).
 */
function trustProxyOption(value: boolean | number | string[]) {
  return typeof value === 'number' ? (_address: string, hop: number) => hop < value : value;
}

/** A body was announced and has not been parsed yet: the request is still arriving. */
function bodyPending(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  const announced =
    (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
  return announced && request.body === undefined;
}

/** How often Node looks for requests past their time-out: its default (30 s) would let one live 30 s more. */
const checkingInterval = (timeoutMs: number) => Math.max(100, Math.min(1000, Math.floor(timeoutMs / 4)));

const JSON_TYPE = /^application\/json\s*(;|$)/i;

/**
 * A route's hooks of one kind with `hook` after them, for `onRoute` hooks that attach work to the
 * routes needing it. Hooks added here run in the order the `onRoute` hooks were registered.
 */
export const withHook = <T>(existing: T | T[] | undefined, hook: T): T[] =>
  existing === undefined ? [hook] : [...(Array.isArray(existing) ? existing : [existing]), hook];

/** Maps what Fastify itself rejects onto the contract's codes. */
function toAppError(error: FastifyError): AppError | null {
  if (error instanceof AppError) return error;
  // The request outlived SVC_REQUEST_TIMEOUT_MS (a stalled database, most likely). The contract
  // has no 503: an unforeseen failure is 500 internal, which clients retry with back-off.
  if (isDeadlineExceeded(error)) return new AppError('internal');
  if (error.validation) {
    return validationError(error.validation as never, (error.validationContext ?? 'body') as ValidationPart);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', { limit_bytes: BODY_LIMIT });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new AppError('unsupported_media_type');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('validation_error', { field: 'body' }, 'El cuerpo JSON está vacío.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('validation_error', { field: 'body' }, 'El cuerpo no es JSON válido.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('validation_error', { field: 'body' }, 'Content-Length no coincide con el cuerpo.');
  }
  // The JSON parser's own syntax errors (and prototype-poisoning refusals) are 400s.
  if (error instanceof SyntaxError || error.statusCode === 400) {
    return new AppError('validation_error', { field: 'body' }, 'El cuerpo no es JSON válido.');
  }
  return null;
}

function routePattern(url: string): RegExp {
  const escaped = url
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${escaped}/?$`);
}

type RouteRegistry = Map<string, { pattern: RegExp; methods: Set<string> }>;
const registries = new WeakMap<object, RouteRegistry>();

/** The methods registered on the route a URL would match, whatever its method: empty for an unknown path. */
export function allowedMethods(app: App, url: string): Set<string> {
  const path = url.split('?')[0] ?? '';
  const allowed = new Set<string>();
  for (const { pattern, methods } of registries.get(app)?.values() ?? []) {
    if (pattern.test(path)) for (const m of methods) allowed.add(m);
  }
  return allowed;
}

/** The one error without envelope or request id: answered by the server, before the API. */
function methodNotAllowed(reply: FastifyReply, allowed: Set<string>): FastifyReply {
  reply.removeHeader(REQUEST_ID_HEADER);
  return reply
    .code(405)
    .header('allow', [...allowed].sort().join(', '))
    .type('text/plain; charset=utf-8')
    .send('Method Not Allowed');
}

/** The envelope of an error answer; its code goes on the request's log lines (`error_code`). */
function envelope(request: FastifyRequest, error: AppError) {
  addLogFields(request.log, { error_code: error.code });
  return errorBody(error, request.id);
}

/** HTTP/1.1 requires Host (RFC 9112, 3.2); HTTP/1.0 may omit it, as Node's own check allows. */
function hostMissing(request: FastifyRequest): AppError | undefined {
  if (request.headers.host !== undefined || request.raw.httpVersion !== '1.1') return undefined;
  return new AppError('validation_error', { param: 'Host' }, 'Falta la cabecera Host.');
}

export function createHttpApp(options: KitOptions): App {
  const app = Fastify({
    loggerInstance: options.logger,
    genReqId: newRequestId,
    childLoggerFactory: requestLogger,
    bodyLimit: BODY_LIMIT,
    trustProxy: trustProxyOption(options.trustProxy ?? false),
    requestTimeout: options.requestTimeoutMs ?? 0,
    http: {
      // Node answers an HTTP/1.1 request without Host with a bare 400 of its own; the kit answers
      // it instead, with the envelope and a request id (hostMissing below).
      requireHostHeader: false,
      ...(options.requestTimeoutMs
        ? {
            requestTimeout: options.requestTimeoutMs,
            headersTimeout: options.requestTimeoutMs,
            connectionsCheckingInterval: checkingInterval(options.requestTimeoutMs),
          }
        : {}),
    },
    clientErrorHandler: clientErrorAnswer,
    // Answered by the kit's own hook instead, with the envelope (see `closing` below).
    return503OnClosing: false,
    exposeHeadRoutes: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // A path the router cannot even read (bad percent-encoding, a path id longer than any id)
    // names nothing: the same 404 envelope as any other unknown path or id.
    frameworkErrors: (_error, request, reply: FastifyReply) => {
      reply
        .code(404)
        .header(REQUEST_ID_HEADER, request.id)
        .type('application/json')
        .send(envelope(request, new AppError('not_found')));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(compileValidator);
  const logFailure = createFailureLog();

  // The same bound from the moment the headers are read to the answer, hooks, body and handler
  // included: a request waiting on a stalled database answers 500 instead of hanging.
  const deadlines = options.requestTimeoutMs ? createDeadlines(options.requestTimeoutMs) : null;
  if (deadlines) {
    app.addHook('onClose', (_app, done) => {
      deadlines.stop();
      done();
    });
  }

  const { metrics } = options;
  if (metrics || deadlines) {
    app.addHook('onResponse', (request, reply, done) => {
      deadlines?.finish(reply);
      metrics?.requestDuration.observe(
        {
          app: options.name,
          method: request.method,
          route: request.is404 ? 'unknown' : (request.routeOptions.url ?? 'unknown'),
          status: String(reply.statusCode),
        },
        reply.elapsedTime / 1000,
      );
      done();
    });
  }

  // JSON is the only body media type. The default parser keeps its prototype-poisoning guard.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string' },
    app.getDefaultJsonParser('error', 'error'),
  );

  // Once the application is closing, a request that still arrives (on a keep-alive connection
  // or pipelined) is answered 503 with the envelope, and every answer closes its connection, so
  // keep-alive clients leave as soon as their request in flight is answered.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  // The hooks every request runs take a callback rather than returning a promise: no promise and
  // no extra turn of the microtask queue per hook and request.
  app.addHook('onRequest', (request, reply, done) => {
    deadlines?.start(reply);
    // A method the path lacks is answered before anything reads the body: a malformed body sent
    // with it is never parsed, so it cannot turn the 405 into a 400.
    if (request.is404) {
      const allowed = allowedMethods(app, request.url);
      if (allowed.size > 0) {
        methodNotAllowed(reply, allowed);
        return;
      }
    }
    reply.header(REQUEST_ID_HEADER, request.id);
    // Answers carry personal data and prices: no shared cache may keep them.
    reply.header('cache-control', 'no-store');
    done(closing ? new AppError('unavailable') : hostMissing(request));
  });

  // The first onSend hook of every answer (hooks of the routes run after it): the answer is
  // chosen, so a deadline from here on cuts the connection instead of answering again.
  app.addHook('onSend', (_request, reply, payload, done) => {
    deadlines?.answering(reply);
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  // A route that declares a body needs application/json even when the body is empty. Only those
  // routes get the check: a GET never runs it.
  const requireJson = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    const type = request.headers['content-type'];
    done(!type || !JSON_TYPE.test(type) ? new AppError('unsupported_media_type') : undefined);
  };
  app.addHook('onRoute', (route) => {
    if (route.schema?.body) route.preValidation = withHook(route.preValidation, requireJson);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    // The request time-out while the body still arrives is the client's slowness, not ours; the
    // rest of the body is never read, so the connection cannot carry another request.
    if (isDeadlineExceeded(error) && bodyPending(request)) {
      reply.header('connection', 'close');
      return reply
        .code(408)
        .type('application/json')
        .send(envelope(request, new AppError('request_timeout')));
    }
    const known = toAppError(error);
    if (!known) logFailure(request.log, error, 'unexpected failure');
    const appError = known ?? new AppError('internal');
    if (appError.status >= 500 && known) logFailure(request.log, error, 'server error');
    if (appError.code === 'rate_limited') {
      // A 429 never carries the rate-limit headers, even when a limit inside the route refused
      // the request after the guard had admitted it and set them.
      reply.removeHeader('x-ratelimit-limit');
      reply.removeHeader('x-ratelimit-remaining');
      if (appError.details?.retry_after !== undefined) {
        reply.header('retry-after', String(appError.details.retry_after));
      }
    }
    return reply.code(appError.status).type('application/json').send(envelope(request, appError));
  });

  // Registered routes, to tell "no such path" (404) from "no such method on this path" (405).
  const routes = new Map<string, { pattern: RegExp; methods: Set<string> }>();
  registries.set(app, routes);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const entry = routes.get(route.url) ?? { pattern: routePattern(route.url), methods: new Set<string>() };
    for (const m of methods) entry.methods.add(m.toUpperCase());
    routes.set(route.url, entry);
  });

  app.setNotFoundHandler((request, reply) => {
    const allowed = allowedMethods(app, request.url);
    if (allowed.size > 0) return methodNotAllowed(reply, allowed);
    return reply
      .code(404)
      .type('application/json')
      .send(envelope(request, new AppError('not_found')));
  });

  return app;
}

// Idempotency-Key: a write sent twice with the same key runs once; the second answer is the first
// one, replayed. A route opts in with `config: { idempotency: {} }`; installIdempotency() adds the
// hooks to exactly those routes. All state is in the idempotency_keys table, so any number of API
// processes on one database agree: the primary key decides who claims a key, and a conditional
// update decides who takes over an abandoned claim. See docs/idempotency.md.
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest, onSendHookHandler, preHandlerHookHandler } from 'fastify';
import type { Queryable } from '../db/db.js';
import { AppError } from './errors.js';
import { identityOf } from './guard.js';
import { type App, withHook } from './kit.js';

export interface IdempotencyRoute {
  /**
   * Makes the body kept for replays from a 2xx body. It runs before the record is written, so
   * whatever it drops (a secret shown once) never reaches the table.
   */
  replayBody?: (body: unknown) => unknown;
  /** Response headers replayed besides content-type, lower case. */
  headers?: readonly string[];
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route accepts Idempotency-Key. */
    idempotency?: IdempotencyRoute;
  }
}

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';

// 1 to 255 printable ASCII characters (0x20-0x7E); the first and the last are not spaces, because
// proxies may trim them and two keys that differ only there would then collide.
const KEY_FORMAT = /^[!-~](?:[ -~]{0,253}[!-~])?$/;

export function isValidIdempotencyKey(value: string): boolean {
  return KEY_FORMAT.test(value);
}

/** JSON with object keys sorted at every depth: equal data, equal text, whatever the key order. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  const entries = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`);
  return `{${entries.join(',')}}`;
}

export interface RequestShape {
  method: string;
  /** Path parameters: the concrete path, independent of trailing slashes or percent-encoding. */
  params: unknown;
  query: unknown;
  body: unknown;
}

/** What makes two requests "the same": method, concrete path, query and body, canonically. */
export function fingerprint(request: RequestShape): string {
  const text = canonicalJson([request.method, request.params, request.query, request.body]);
  return createHash('sha256').update(text).digest('hex');
}

export interface IdempotencyDeps {
  db: Queryable;
  claimTimeoutMs: number;
  retentionHours: number;
}

interface KeyScope {
  integrationId: string;
  method: string;
  route: string;
  key: string;
}

interface StoredRow {
  fingerprint: string;
  completed_at: Date | null;
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_body: string | null;
}

const scopeParams = (s: KeyScope) => [s.integrationId, s.method, s.route, s.key];

// One statement claims a free key, replaces a record older than the retention (the pruning task
// may not have run yet) or takes over an abandoned claim of the same request. Concurrent callers
// serialize on the row: the loser sees the winner's fresh claimed_at and gets no row back.
const CLAIM_SQL = `
  INSERT INTO idempotency_keys AS k (integration_id, method, route, key, fingerprint, claimed_at)
  VALUES ($1, $2, $3, $4, $5, now())
  ON CONFLICT (integration_id, method, route, key) DO UPDATE
  SET fingerprint = EXCLUDED.fingerprint, claimed_at = EXCLUDED.claimed_at, completed_at = NULL,
      response_status = NULL, response_headers = NULL, response_body = NULL
  WHERE k.claimed_at < now() - make_interval(hours => $6::int)
     OR (k.completed_at IS NULL AND k.fingerprint = EXCLUDED.fingerprint
         AND k.claimed_at < now() - make_interval(secs => $7::float8 / 1000))
  RETURNING k.claimed_at`;

const READ_SQL = `
  SELECT fingerprint, completed_at, response_status, response_headers, response_body
  FROM idempotency_keys
  WHERE integration_id = $1 AND method = $2 AND route = $3 AND key = $4`;

// claimed_at is the owner's token: a request whose claim was taken over cannot touch the record.
const COMPLETE_SQL = `
  UPDATE idempotency_keys
  SET completed_at = now(), response_status = $6, response_headers = $7, response_body = $8
  WHERE integration_id = $1 AND method = $2 AND route = $3 AND key = $4
    AND claimed_at = $5 AND completed_at IS NULL`;

const RELEASE_SQL = `
  DELETE FROM idempotency_keys
  WHERE integration_id = $1 AND method = $2 AND route = $3 AND key = $4
    AND claimed_at = $5 AND completed_at IS NULL`;

/** Deletes records older than the retention; returns how many. */
export async function pruneIdempotencyKeys(db: Queryable, retentionHours: number): Promise<number> {
  const [row] = await db.query<{ removed: number }>(
    `WITH gone AS (
       DELETE FROM idempotency_keys WHERE claimed_at < now() - make_interval(hours => $1::int) RETURNING 1
     )
     SELECT count(*)::int AS removed FROM gone`,
    [retentionHours],
  );
  return row?.removed ?? 0;
}

type Outcome = { kind: 'claimed'; token: Date } | { kind: 'replay'; row: StoredRow };

async function claim(deps: IdempotencyDeps, scope: KeyScope, print: string): Promise<Outcome> {
  // A record released (5xx) or pruned between our two statements leaves nothing to read: retry.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const [claimed] = await deps.db.query<{ claimed_at: Date }>(CLAIM_SQL, [
      ...scopeParams(scope),
      print,
      deps.retentionHours,
      deps.claimTimeoutMs,
    ]);
    if (claimed) return { kind: 'claimed', token: claimed.claimed_at };
    const [row] = await deps.db.query<StoredRow>(READ_SQL, scopeParams(scope));
    if (!row) continue;
    if (row.fingerprint !== print) throw new AppError('idempotency_conflict', { param: 'Idempotency-Key' });
    if (row.completed_at === null)
      throw new AppError('idempotency_in_progress', { param: 'Idempotency-Key' });
    return { kind: 'replay', row };
  }
  throw new AppError('idempotency_in_progress', { param: 'Idempotency-Key' });
}

/** A stored error keeps its body, but request_id names the request being answered now. */
function replayText(row: StoredRow, requestId: string): string {
  const text = row.response_body ?? '';
  if ((row.response_status ?? 0) < 400) return text;
  try {
    const body = JSON.parse(text) as { error?: { request_id?: string } };
    if (!body.error) return text;
    body.error.request_id = requestId;
    return JSON.stringify(body);
  } catch {
    return text;
  }
}

function replay(reply: FastifyReply, row: StoredRow, requestId: string): FastifyReply {
  reply.code(row.response_status ?? 200);
  for (const [name, value] of Object.entries(row.response_headers ?? {})) reply.header(name, value);
  reply.header(REPLAYED_HEADER, 'true');
  return reply.send(replayText(row, requestId));
}

/** The text to keep, or null when it cannot be kept safely (then the claim is released). */
function storedBody(payload: unknown, status: number, route: IdempotencyRoute): string | null {
  const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString() : null;
  if (text === null || !route.replayBody || status >= 300) return text;
  try {
    return JSON.stringify(route.replayBody(JSON.parse(text)));
  } catch {
    return null;
  }
}

function storedHeaders(reply: FastifyReply, route: IdempotencyRoute): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ['content-type', ...(route.headers ?? [])]) {
    const value = reply.getHeader(name);
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return headers;
}

// Requests holding a claim, until their record is written (by the route's own transaction or by
// the onSend hook).
// `within` marks a record written by the route's transaction: once the route answers 2xx, that
// transaction has committed and there is nothing left to write.
const claims = new WeakMap<FastifyRequest, { scope: KeyScope; token: Date; within?: boolean }>();

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Completes the request's Idempotency-Key record inside the route's own transaction, with the
 * answer it is about to send (the reply's status must be set). The write and its record then
 * commit or vanish together: a process that dies after the commit leaves a record to replay, one
 * that dies before leaves neither, so the handler can never run twice to effect. Without a claim
 * (no header) it does nothing. When the claim was taken over meanwhile, it throws, and the
 * transaction rolls back.
 */
export async function completeWithin(
  q: Queryable,
  request: FastifyRequest,
  reply: FastifyReply,
  body: unknown,
): Promise<void> {
  const owned = claims.get(request);
  if (!owned) return;
  const route = request.routeOptions.config.idempotency ?? {};
  const kept = route.replayBody ? route.replayBody(body) : body;
  const headers = { ...storedHeaders(reply, route), 'content-type': JSON_TYPE };
  const done = await q.query<{ ok: number }>(`${COMPLETE_SQL} RETURNING 1 AS ok`, [
    ...scopeParams(owned.scope),
    owned.token,
    reply.statusCode,
    JSON.stringify(headers),
    reply.serialize(kept),
  ]);
  if (done.length === 0) throw new AppError('idempotency_in_progress', { param: 'Idempotency-Key' });
  owned.within = true;
}

/** Whether the request holds an Idempotency-Key claim that completeWithin would complete. */
export function holdsClaim(request: FastifyRequest): boolean {
  return claims.has(request);
}

/** Adds the Idempotency-Key hooks to every route registered afterwards that opts in. */
export function installIdempotency(app: App, deps: IdempotencyDeps): void {
  const checkKey = async (request: FastifyRequest) => {
    const value = request.headers[IDEMPOTENCY_HEADER];
    if (value === undefined) return;
    if (typeof value !== 'string' || !isValidIdempotencyKey(value)) {
      throw new AppError(
        'validation_error',
        { param: 'Idempotency-Key' },
        'Idempotency-Key debe tener de 1 a 255 caracteres ASCII imprimibles, sin espacios al principio ni al final.',
      );
    }
  };

  const claimOrReplay: preHandlerHookHandler = async (request, reply) => {
    const key = request.headers[IDEMPOTENCY_HEADER];
    if (typeof key !== 'string') return;
    const scope: KeyScope = {
      integrationId: identityOf(request).integration.id,
      method: request.method,
      route: request.routeOptions.url ?? '',
      key,
    };
    const print = fingerprint(request);
    const outcome = await claim(deps, scope, print);
    if (outcome.kind === 'replay') return replay(reply, outcome.row, request.id);
    claims.set(request, { scope, token: outcome.token });
  };

  const record: onSendHookHandler = async (request, reply, payload) => {
    const owned = claims.get(request);
    if (!owned) return payload;
    claims.delete(request);
    const { scope, token } = owned;
    const route = request.routeOptions.config.idempotency ?? {};
    const status = reply.statusCode;
    // Written and committed with the route's own change. A failure after it rolled it back, so
    // the record is still a bare claim and is handled below like any other.
    if (owned.within && status < 300) return payload;
    const body = status >= 500 ? null : storedBody(payload, status, route);
    try {
      if (body === null) {
        // Not stored: a 5xx (the retry must run again) or a body that cannot be kept.
        await deps.db.query(RELEASE_SQL, [...scopeParams(scope), token]);
      } else {
        const headers = JSON.stringify(storedHeaders(reply, route));
        await deps.db.query(COMPLETE_SQL, [...scopeParams(scope), token, status, headers, body]);
      }
    } catch (error) {
      // The answer already exists; the claim then expires and a retry takes it over.
      request.log.error({ err: error }, 'idempotency record not written');
    }
    return payload;
  };

  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotency) return;
    route.preValidation = withHook(route.preValidation, checkKey as never);
    route.preHandler = withHook(route.preHandler, claimOrReplay);
    route.onSend = withHook(route.onSend, record as never);
  });
}

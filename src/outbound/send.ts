// One HTTP attempt of a webhook delivery. The url was vetted when the webhook was saved, but DNS
// can change since (DNS rebinding), so each attempt vets it again and the connection is pinned to
// the addresses just vetted: the socket's lookup answers from them and never asks DNS a second
// time, so the address judged is the address connected to. TLS is still verified against the
// host name, so pinning cannot be used to reach a host under another name's certificate.
// A kept-alive connection may serve a later attempt to the same origin: it was opened to an address
// vetted then, and every attempt is still vetted first, so a name that now resolves somewhere not
// allowed is refused before the pool is touched.
import type { LookupAddress, LookupOptions } from 'node:dns';
import { EventEmitter } from 'node:events';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { createSecureContext, rootCertificates } from 'node:tls';
import { Agent, request } from 'undici';
import {
  type Address,
  defaultResolver,
  type Resolver,
  type TargetPolicy,
  type TargetRefusal,
  TargetRefused,
  vetTarget,
} from '../security/url-guard.js';

export interface SenderOptions {
  policy: TargetPolicy;
  resolve?: Resolver;
  timeoutMs: number;
  /** An extra CA (PEM) trusted besides Node's root certificates; for tests and private receivers. */
  ca?: string | Buffer | null;
  /** connections per origin */
  connections?: number;
}

export interface Attempt {
  url: string;
  headers: Record<string, string>;
  /** The exact bytes sent (and signed), or a string sent as UTF-8. */
  body: Buffer | string;
}

export interface AttemptResult {
  /** HTTP status, or null on time-out, network error or refused target */
  status: number | null;
  /** null only on success (a 2xx whose answer completed); otherwise short text (<= 500 chars) */
  error: string | null;
  /** A 2xx whose answer was cut (time-out, reset) before its end: a failure despite its status. */
  partial?: true;
  durationMs: number;
  /** the refusal when the target was refused before connecting */
  refused?: TargetRefusal;
  /** The attempt's time ran out (no answer, or an answer cut by the time-out). */
  timedOut?: true;
}

export interface Sender {
  send(attempt: Attempt): Promise<AttemptResult>;
  /** Ends every connection at once, cutting attempts still in flight. */
  close(): Promise<void>;
}

const MAX_ERROR_CHARS = 500;
const MAX_SNIPPET_CHARS = 200;
// Enough to explain a failure; a receiver must not make us download (or buffer) a large answer.
const MAX_BODY_BYTES = 1024;
// An answer is read to its end to know it completed, keeping only the first KiB; past this much it
// is not read further (the connection is closed) and its status decides.
const MAX_READ_BYTES = 1024 * 1024;
// Hostnames whose vetted addresses are remembered for the pinned lookup; the oldest is forgotten.
const MAX_PINNED_HOSTS = 1000;

class DeadlineExceeded extends Error {}

/**
 * An attempt's time limit, in the shape undici takes as a request's signal (an EventEmitter with
 * `aborted` and `reason`): at the deadline it cuts the request, and whatever `race` waits on.
 * An AbortController, its signal's listeners and a promise for the race cost about 6 µs per
 * attempt, this under 1 µs: about 1.5% of a busy worker's CPU.
 */
class Deadline extends EventEmitter {
  aborted = false;
  reason: DeadlineExceeded | undefined;
  private readonly timer: NodeJS.Timeout;
  private expired: ((error: DeadlineExceeded) => void) | null = null;

  constructor(ms: number) {
    super();
    this.timer = setTimeout(() => {
      this.aborted = true;
      this.reason = new DeadlineExceeded();
      this.emit('abort');
      this.expired?.(this.reason);
    }, ms);
  }

  /** `work`, or a DeadlineExceeded once the time is up, whichever comes first. */
  race<T>(work: Promise<T>): Promise<T> {
    if (this.reason) return Promise.reject(this.reason);
    return new Promise<T>((resolve, reject) => {
      this.expired = reject;
      work.then(resolve, reject).finally(() => {
        this.expired = null;
      });
    });
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

/** How long one address of a host is tried before the next is tried beside it. */
const HAPPY_EYEBALLS_MS = 2000;

export function createSender(options: SenderOptions): Sender {
  const { policy, resolve = defaultResolver, timeoutMs } = options;
  const pinned = new Map<string, Address[]>();
  const agent = new Agent({
    connections: options.connections ?? null,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    // A host with several addresses is tried address after address (happy eyeballs), each for this
    // long. Node's 250 ms counts event-loop time: a busy worker that resumed late gave up on a
    // receiver already answering, and the attempt failed as a time-out after 300 ms.
    autoSelectFamily: true,
    autoSelectFamilyAttemptTimeout: Math.min(timeoutMs, HAPPY_EYEBALLS_MS),
    connect: {
      timeout: timeoutMs,
      lookup: pinnedLookup(pinned),
      // undici sets servername (SNI) to the url's host name, so the certificate is checked
      // against the name, not against the pinned address.
      rejectUnauthorized: true,
      // Built once: a CA list given per connection would be parsed again for every handshake.
      ...(options.ca
        ? { secureContext: createSecureContext({ ca: [...rootCertificates, options.ca] }) }
        : {}),
    },
  });

  function pin(hostname: string, addresses: Address[]) {
    pinned.delete(hostname);
    pinned.set(hostname, addresses);
    if (pinned.size > MAX_PINNED_HOSTS) {
      const oldest = pinned.keys().next();
      if (!oldest.done) pinned.delete(oldest.value);
    }
  }

  async function send(attempt: Attempt): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const deadline = new Deadline(timeoutMs);
    let hostname = '';
    try {
      // Resolution counts against the attempt's time too: a resolver may not answer at all.
      const { url, addresses } = await deadline.race(vetTarget(attempt.url, policy, resolve));
      hostname = url.hostname;
      pin(unbracket(url.hostname), addresses);
      const body = typeof attempt.body === 'string' ? Buffer.from(attempt.body, 'utf8') : attempt.body;
      const response = await request(url, {
        method: 'POST',
        dispatcher: agent,
        signal: deadline,
        headers: withContentLength(attempt.headers, body.length),
        body,
      });
      // A 2xx is a success only once its answer has ended: one cut by the time-out or a reset is
      // a failure, recorded with its status. For any other status the cut only shortens the snippet.
      const { snippet, complete, failure } = await readAnswer(response.body);
      const status = response.statusCode;
      if (!complete && status >= 200 && status < 300) {
        const timedOut = deadline.aborted;
        const why =
          failure === undefined && !timedOut
            ? 'el destino cerró la conexión antes del final'
            : describeFailure(failure, timedOut, timeoutMs, hostname);
        return {
          status,
          error: cut(`respuesta ${status} incompleta: ${why}`),
          partial: true,
          durationMs: elapsed(),
          ...(timedOut ? { timedOut: true as const } : {}),
        };
      }
      return {
        status,
        error: describeStatus(status, response.headers.location, snippet),
        durationMs: elapsed(),
      };
    } catch (error) {
      if (error instanceof TargetRefused) {
        const why = `${error.message.charAt(0).toLowerCase()}${error.message.slice(1)}`;
        return {
          status: null,
          error: cut(`destino no permitido: ${why}`),
          durationMs: elapsed(),
          refused: error.reason,
        };
      }
      const timedOut = deadline.aborted || error instanceof DeadlineExceeded || isTimeoutCode(error);
      return {
        status: null,
        error: describeFailure(error, timedOut, timeoutMs, hostname),
        durationMs: elapsed(),
        ...(timedOut ? { timedOut: true as const } : {}),
      };
    } finally {
      deadline.clear();
    }
  }

  // Attempts still open when the worker hands its deliveries back are cut, not waited for.
  return { send, close: () => agent.destroy() };
}

/** The status the retry policy judges: none for a 2xx that did not complete (so it is not a success). */
export const judgedStatus = (result: AttemptResult): number | null => (result.partial ? null : result.status);

/** Answers the socket's lookup from the vetted addresses only; an unknown host fails, it is never resolved. */
export function pinnedLookup(pinned: ReadonlyMap<string, readonly Address[]>): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
    const known = pinned.get(hostname.toLowerCase()) ?? [];
    const usable = family === 4 || family === 6 ? known.filter((a) => a.family === family) : known;
    const first = usable[0];
    process.nextTick(() => {
      if (!first) {
        const error = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname} (no vetted address)`), {
          code: 'ENOTFOUND',
          hostname,
        });
        callback(error, '', 0);
      } else if (options.all) {
        callback(
          null,
          usable.map((a): LookupAddress => ({ address: a.address, family: a.family })),
        );
      } else {
        callback(null, first.address, first.family);
      }
    });
  };
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** The headers with the body's own content-length in place of any the caller gave. */
function withContentLength(headers: Record<string, string>, length: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers)
    if (name.toLowerCase() !== 'content-length') out[name] = headers[name] as string;
  out['content-length'] = String(length);
  return out;
}

interface Answer {
  /** The first KiB. */
  snippet: Buffer;
  /** The body reached its end, or MAX_READ_BYTES of it were read. */
  complete: boolean;
  /** Why it did not complete. */
  failure?: unknown;
}

/** Reads the body to its end (or MAX_READ_BYTES), keeping the first KiB: memory stays bounded. */
function readAnswer(body: Readable): Promise<Answer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    let read = 0;
    let settled = false;
    const finish = (complete: boolean, failure?: unknown) => {
      if (settled) return;
      settled = true;
      resolve({ snippet: Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES), complete, failure });
    };
    body.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (kept < MAX_BODY_BYTES) {
        chunks.push(chunk);
        kept += chunk.length;
      }
      if (read >= MAX_READ_BYTES) {
        finish(true);
        body.destroy();
      }
    });
    body.on('end', () => finish(true));
    body.on('error', (error) => finish(false, error));
    body.on('close', () => finish(false));
  });
}

function describeStatus(
  status: number,
  location: string | string[] | undefined,
  snippet: Buffer,
): string | null {
  if (status >= 200 && status < 300) return null;
  if (status >= 300 && status < 400) {
    const to = Array.isArray(location) ? location[0] : location;
    return cut(`redirección no seguida (${status} ${to ? `a ${clean(to, 300)}` : 'sin Location'})`);
  }
  const text = clean(snippet.toString('utf8'), MAX_SNIPPET_CHARS);
  return cut(text ? `HTTP ${status}: ${text}` : `HTTP ${status}`);
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);
const NETWORK_TEXT: Record<string, string> = {
  ECONNRESET: 'conexión reiniciada',
  ECONNREFUSED: 'conexión rechazada',
  UND_ERR_SOCKET: 'el destino cerró la conexión',
  EPIPE: 'el destino cerró la conexión',
  EHOSTUNREACH: 'destino inalcanzable',
  ENETUNREACH: 'destino inalcanzable',
  ENOTFOUND: 'no se pudo resolver el host',
  EAI_AGAIN: 'no se pudo resolver el host',
};

const isTimeoutCode = (error: unknown): boolean => TIMEOUT_CODES.has(errorCode(error) ?? '');

function describeFailure(error: unknown, timedOut: boolean, timeoutMs: number, hostname: string): string {
  const code = errorCode(error);
  if (timedOut || (code && TIMEOUT_CODES.has(code))) return `tiempo de espera agotado (${timeoutMs} ms)`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return cut(`el certificado TLS no corresponde a ${hostname} (${code})`);
  }
  if (code && /CERT|SELF_SIGNED|UNABLE_TO_(VERIFY|GET_ISSUER)/.test(code)) {
    return cut(`certificado TLS no válido (${code})`);
  }
  if (code && /^(ERR_SSL_|ERR_TLS_|EPROTO$)/.test(code)) return cut(`error TLS (${code})`);
  if (code && NETWORK_TEXT[code]) return `${NETWORK_TEXT[code]} (${code})`;
  const message = error instanceof Error ? error.message : String(error);
  return cut(`error de red (${code ?? clean(message, 200)})`);
}

/** The code of the error or of its cause: undici sometimes wraps the socket's error. */
function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 3; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** Control and format characters (bidi overrides too) out, whitespace collapsed: this text is stored and shown. */
function clean(text: string, max: number): string {
  const flat = text
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const chars = Array.from(flat);
  return chars.length > max ? `${chars.slice(0, max).join('')}…` : flat;
}

function cut(text: string): string {
  const chars = Array.from(text);
  return chars.length > MAX_ERROR_CHARS ? `${chars.slice(0, MAX_ERROR_CHARS - 1).join('')}…` : text;
}

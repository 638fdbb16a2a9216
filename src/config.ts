// The only place that reads process.env. Every variable is validated at start, all of them at
// once: one message lists every bad or missing variable, each with what it expects, so a deploy
// is fixed in one round rather than one variable per restart.
import { isIP } from 'node:net';

export type Environment = 'live' | 'test';

export interface RateLimitConfig {
  windowMs: number;
  perKey: number;
  perOrganization: number;
  perEndpoint: number;
  authFailuresPerIp: number;
}

export interface WebhookConfig {
  /** Development and tests only: loopback and private targets, any port (logged loudly). */
  allowPrivateTargets: boolean;
  /** Development and tests only: private CIDR ranges (or addresses) allowed, on any port. */
  allowedPrivateRanges: string[];
  /** A webhook host name whose DNS does not answer within this is refused (API) or fails the attempt. */
  dnsTimeoutMs: number;
  /** Development and tests only: a CA trusted for deliveries besides the system's. */
  caFile: string | null;
  /** The seven gaps between the eight attempts, in ms. */
  retryGapsMs: number[];
  timeoutMs: number;
  /** A claimed delivery not recorded within this returns to the queue. */
  leaseMs: number;
  /** Attempts in flight per worker process (its budget), and per webhook across all workers. */
  concurrency: number;
  concurrencyPerWebhook: number;
  /** How long finished attempts are gathered before their outcomes are written together, in ms. */
  batchMs: number;
  /**
   * After a claim that took nothing while deliveries were due (they wait for room), an event
   * committed does not start another claim before this, in ms.
   */
  idleGapMs: number;
  /**
   * How often at most a worker looks for work that no notification announced (one lost with its
   * connection, what a writer left behind in the outbox), in ms.
   */
  pollMs: number;
  /** A worker whose beat (every pollMs) stops this long is dead: its webhooks go to the others. */
  workerLeaseMs: number;
  /** Whether `svc serve` runs its embedded delivery worker (off: `svc worker` processes deliver, or nothing does). */
  embeddedWorker: boolean;
}

export interface Config {
  environment: Environment;
  databaseUrl: string | null;
  dataDir: string;
  redisUrl: string | null;
  host: string;
  port: number;
  /** Where integrators reach this service's public listener (scheme, host, port): portal links start with it. */
  publicUrl: string;
  operatorHost: string;
  operatorPort: number;
  operatorToken: string | null;
  /** `svc worker`: port of its /metrics listener on operatorHost; null (unset or 0) for none. */
  metricsPort: number | null;
  /** The unauthenticated /livez and /readyz listener (serve and worker); null (unset or 0) for none. */
  healthHost: string;
  healthPort: number | null;
  /** Where `svc admin` finds the operator API. */
  operatorUrl: string;
  masterKey: Buffer | null;
  /** Older (or not yet current) master keys: they open sealed secrets and verify cursors, never seal or sign. */
  masterKeyFallbacks: Buffer[];
  logLevel: string;
  /** auto: readable lines on a terminal, JSON elsewhere; JSON by default when NODE_ENV=production. */
  logFormat: 'auto' | 'json' | 'pretty';
  authCacheTtlMs: number;
  /** A query running longer is cancelled by PostgreSQL (the request answers 500 internal). */
  statementTimeoutMs: number;
  /** How long a query may wait for a pooled connection before the request answers 500. */
  dbPoolWaitMs: number;
  /** PostgreSQL connections per process: the API's transactions and the delivery engine share them. */
  dbPoolSize: number;
  /** A request not received whole within this time is dropped (slow clients, slowloris). */
  requestTimeoutMs: number;
  /** After SIGTERM, how long requests in flight (and later, jobs) may take before they are cut. */
  shutdownGraceMs: number;
  /** Whether serve, worker and demo apply pending migrations at start (false: refuse to start while any is pending). */
  migrateAtStart: boolean;
  /**
   * Who may name the client in X-Forwarded-For: nobody (false), every hop (true), the last N
   * hops, or the proxies at these addresses or CIDR ranges (Fastify's trustProxy).
   */
  trustProxy: boolean | number | string[];
  rateLimits: RateLimitConfig;
  eventRetentionDays: number;
  idempotencyRetentionHours: number;
  idempotencyClaimTimeoutMs: number;
  webhooks: WebhookConfig;
  /** Where webhook deactivations and warnings are announced, signed with `secret`; null for nowhere. */
  operatorNotify: OperatorNotifyConfig | null;
}

export interface OperatorNotifyConfig {
  /** An https:// URL of the platform's; private addresses allowed (docs/decisions.md). */
  url: string;
  /** `whsec_` and base64 of 24 to 64 bytes: signs like a webhook secret. */
  secret: string;
}

export interface ConfigProblem {
  variable: string;
  reason: string;
}

/** Every bad or missing variable, one per line of the message (`VARIABLE: what it expects`). */
export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    super(problems.map((p) => `${p.variable}: ${p.reason}`).join('\n'));
    this.problems = problems;
  }

  /** The first variable named. */
  get variable(): string {
    return this.problems[0]?.variable ?? '';
  }
}

type Env = Record<string, string | undefined>;

/** The environment being read and the problems found so far: a bad value is noted, its default stands in. */
class Reader {
  readonly problems: ConfigProblem[] = [];
  constructor(readonly env: Env) {}

  refuse<T>(variable: string, reason: string, fallback: T): T {
    this.problems.push({ variable, reason });
    return fallback;
  }
}

function int(r: Reader, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = r.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) return r.refuse(name, `must be a whole number, got "${raw}"`, fallback);
  const value = Number(raw);
  if (value < min || value > max)
    return r.refuse(name, `must be between ${min} and ${max}, got ${value}`, fallback);
  return value;
}

function oneOf<T extends string>(r: Reader, name: string, allowed: readonly T[], fallback: T): T {
  const raw = r.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!allowed.includes(raw as T)) return r.refuse(name, `must be one of ${allowed.join(', ')}`, fallback);
  return raw as T;
}

function bool(r: Reader, name: string, fallback: boolean): boolean {
  return oneOf(r, name, ['true', 'false'], fallback ? 'true' : 'false') === 'true';
}

/**
 * A URL with one of `schemes`, or null when unset. The value is never repeated in the message: a
 * database or Redis URL holds a password.
 */
function url(r: Reader, name: string, schemes: readonly string[]): string | null {
  const raw = r.env[name];
  if (raw === undefined || raw === '') return null;
  const expected = `must be a ${schemes.map((s) => `${s}//`).join(' or ')} URL`;
  let parsed: URL | null = null;
  try {
    // Without a scheme (`db:5432`, a bare database name) it is no URL, whatever URL() makes of it.
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) parsed = new URL(raw);
  } catch {}
  if (parsed === null) {
    return r.refuse(name, `${expected}, got a bare name or something else that is not a URL`, null);
  }
  if (!schemes.includes(parsed.protocol)) {
    return r.refuse(name, `${expected}, got a ${parsed.protocol}// URL`, null);
  }
  if (parsed.hostname === '' && !parsed.searchParams.has('host')) {
    return r.refuse(name, `${expected} with a host, got none`, null);
  }
  return raw;
}

function isAddressOrRange(entry: string): boolean {
  const [address = '', bits, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

function trustProxy(r: Reader, name: string): boolean | number | string[] {
  const raw = r.env[name]?.trim();
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return int(r, name, 0, 1, 20) || false;
  const entries = raw.split(',').map((e) => e.trim());
  const bad = entries.find((e) => !isAddressOrRange(e));
  if (bad !== undefined) {
    return r.refuse(
      name,
      `must be false, a number of proxy hops, or a comma-separated list of proxy addresses or CIDR ranges; "${bad}" is none of these`,
      false,
    );
  }
  return entries;
}

function ranges(r: Reader, name: string): string[] {
  const raw = r.env[name]?.trim();
  if (!raw) return [];
  const entries = raw.split(',').map((e) => e.trim());
  const bad = entries.find((e) => !isAddressOrRange(e));
  if (bad !== undefined) {
    return r.refuse(
      name,
      `must be a comma-separated list of addresses or CIDR ranges; "${bad}" is neither`,
      [],
    );
  }
  return entries;
}

export const DEFAULT_RETRY_GAPS_S = [30, 60, 120, 240, 480, 960, 1920];

/** Seven gaps in seconds (decimals allowed, so tests can compress the schedule). */
function retryGaps(r: Reader, name: string): number[] {
  const raw = r.env[name];
  const fallback = DEFAULT_RETRY_GAPS_S.map((s) => s * 1000);
  if (raw === undefined || raw === '') return fallback;
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length !== 7 || parts.some((p) => !/^\d{1,6}(\.\d{1,3})?$/.test(p))) {
    return r.refuse(name, `must be seven comma-separated numbers of seconds, got "${raw}"`, fallback);
  }
  return parts.map((p) => Math.round(Number(p) * 1000));
}

function webhookConfig(r: Reader): WebhookConfig {
  const { env } = r;
  const timeoutMs = int(r, 'SVC_WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000);
  const leaseMs = int(r, 'SVC_WEBHOOK_LEASE_SECONDS', 60, 1, 3600) * 1000;
  if (leaseMs < timeoutMs + 1000) {
    r.refuse('SVC_WEBHOOK_LEASE_SECONDS', 'must exceed SVC_WEBHOOK_TIMEOUT_MS by at least 1 s', null);
  }
  // A hanging attempt costs a socket, not a core: 128 leaves room beside a tenant whose ten
  // webhooks hang for the whole time-out (40 attempts at the default bound of 4).
  const concurrency = int(r, 'SVC_WEBHOOK_CONCURRENCY', 128, 1, 1000);
  const pollMs = int(r, 'SVC_WEBHOOK_POLL_MS', 1000, 20, 60_000);
  const workerLeaseMs = int(r, 'SVC_WEBHOOK_WORKER_LEASE_MS', 10_000, 100, 600_000);
  if (workerLeaseMs < 3 * pollMs) {
    r.refuse('SVC_WEBHOOK_WORKER_LEASE_MS', 'must be at least three times SVC_WEBHOOK_POLL_MS', null);
  }
  return {
    allowPrivateTargets: bool(r, 'SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    allowedPrivateRanges: ranges(r, 'SVC_WEBHOOK_ALLOWED_PRIVATE_RANGES'),
    dnsTimeoutMs: int(r, 'SVC_WEBHOOK_DNS_TIMEOUT_MS', 3000, 50, 30_000),
    caFile: env.SVC_WEBHOOK_CA_FILE || null,
    retryGapsMs: retryGaps(r, 'SVC_WEBHOOK_RETRY_SCHEDULE'),
    timeoutMs,
    leaseMs,
    concurrency,
    concurrencyPerWebhook: int(r, 'SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK', 4, 1, concurrency),
    batchMs: int(r, 'SVC_WEBHOOK_BATCH_MS', 2, 0, 1000),
    idleGapMs: int(r, 'SVC_WEBHOOK_IDLE_GAP_MS', 50, 0, 60_000),
    pollMs,
    workerLeaseMs,
    embeddedWorker: oneOf(r, 'SVC_WEBHOOK_WORKER', ['on', 'off'], 'on') === 'on',
  };
}

/** The operator notification URL and its secret: both or neither. */
function operatorNotify(r: Reader): OperatorNotifyConfig | null {
  const target = url(r, 'SVC_OPERATOR_NOTIFY_URL', ['https:']);
  const secret = r.env.SVC_OPERATOR_NOTIFY_SECRET || null;
  // Never repeated in a message: it is a secret.
  const bytes = secret?.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64').length : 0;
  if (secret !== null && (!/^whsec_[A-Za-z0-9+/_-]+={0,2}$/.test(secret) || bytes < 24 || bytes > 64)) {
    return r.refuse(
      'SVC_OPERATOR_NOTIFY_SECRET',
      'must be whsec_ followed by 24 to 64 bytes in base64 (e.g. whsec_$(openssl rand -base64 32))',
      null,
    );
  }
  if (target !== null && secret === null) {
    return r.refuse('SVC_OPERATOR_NOTIFY_SECRET', 'required when SVC_OPERATOR_NOTIFY_URL is set', null);
  }
  if (secret !== null && target === null && !r.env.SVC_OPERATOR_NOTIFY_URL) {
    return r.refuse('SVC_OPERATOR_NOTIFY_URL', 'required when SVC_OPERATOR_NOTIFY_SECRET is set', null);
  }
  return target !== null && secret !== null ? { url: target, secret } : null;
}

const MASTER_KEY_FORM = '32 bytes as 64 hex characters or base64';

/** A master key is 32 bytes, given as 64 hex characters or as base64. */
export function parseMasterKey(raw: string, name = 'SVC_MASTER_KEY'): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError([{ variable: name, reason: `must be ${MASTER_KEY_FORM}` }]);
  return key;
}

/** An http(s) origin, without a trailing slash. */
function origin(r: Reader, name: string, fallback: string): string {
  const raw = r.env[name];
  if (raw === undefined || raw === '') return fallback;
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {}
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    return r.refuse(name, 'must be an http:// or https:// address', fallback);
  }
  return url.href.replace(/\/+$/, '');
}

/** Comma-separated master keys, each as SVC_MASTER_KEY takes it; a key listed twice counts once. */
function masterKeys(r: Reader, name: string): Buffer[] {
  const raw = r.env[name]?.trim();
  if (!raw) return [];
  const keys: Buffer[] = [];
  for (const [i, entry] of raw.split(',').entries()) {
    try {
      const key = parseMasterKey(entry.trim(), name);
      if (!keys.some((k) => k.equals(key))) keys.push(key);
    } catch {
      r.refuse(
        name,
        `must be a comma-separated list of master keys (32 bytes each, as 64 hex characters or base64); entry ${i + 1} is not one`,
        null,
      );
      return [];
    }
  }
  return keys;
}

function masterKey(r: Reader): Buffer | null {
  const raw = r.env.SVC_MASTER_KEY;
  if (!raw) return null;
  try {
    return parseMasterKey(raw);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    r.problems.push(...error.problems);
    return null;
  }
}

/** What the command about to run needs besides valid values. */
export interface Needs {
  /** `svc serve` without --demo: the operator API cannot start without its token. */
  operatorToken?: boolean;
  /** A command that opens the database: on a server database the master key is given, not generated. */
  masterKey?: boolean;
}

/** Variables that are required for this command and missing, in the same list as the bad ones. */
function missing(r: Reader, config: Config, needs: Needs): void {
  if (needs.operatorToken && config.operatorToken === null && !r.env.SVC_OPERATOR_TOKEN) {
    r.refuse('SVC_OPERATOR_TOKEN', 'required (at least 32 characters) to start the operator API', null);
  }
  if (needs.masterKey && config.databaseUrl && !r.env.SVC_MASTER_KEY) {
    r.refuse('SVC_MASTER_KEY', `required when DATABASE_URL is set (${MASTER_KEY_FORM})`, null);
  }
}

export function loadConfig(env: Env = process.env, needs: Needs = {}): Config {
  const r = new Reader(env);
  const config = readConfig(r);
  missing(r, config, needs);
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return config;
}

function readConfig(r: Reader): Config {
  const { env } = r;
  let operatorToken = env.SVC_OPERATOR_TOKEN || null;
  if (operatorToken !== null && operatorToken.length < 32) {
    operatorToken = r.refuse('SVC_OPERATOR_TOKEN', 'must be at least 32 characters', null);
  }
  const eventRetentionDays = int(r, 'SVC_EVENT_RETENTION_DAYS', 30, 30, 3650);
  const operatorPort = int(r, 'SVC_OPERATOR_PORT', 8081, 0, 65535);
  const databaseUrl = url(r, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  const redisUrl = url(r, 'REDIS_URL', ['redis:', 'rediss:']);
  // Read once: the public URL's default follows it, and a bad value is one problem, not two.
  const port = int(r, 'SVC_PORT', 8080, 0, 65535);
  return {
    environment: oneOf(r, 'SVC_ENVIRONMENT', ['live', 'test'], 'live'),
    databaseUrl,
    dataDir: env.SVC_DATA_DIR || './data',
    redisUrl,
    host: env.SVC_HOST || '0.0.0.0',
    port,
    publicUrl: origin(r, 'SVC_PUBLIC_URL', `http://localhost:${port}`),
    operatorHost: env.SVC_OPERATOR_HOST || '127.0.0.1',
    operatorPort,
    operatorToken,
    metricsPort: int(r, 'SVC_METRICS_PORT', 0, 0, 65535) || null,
    healthHost: env.SVC_HEALTH_HOST || '0.0.0.0',
    healthPort: int(r, 'SVC_HEALTH_PORT', 0, 0, 65535) || null,
    operatorUrl: env.SVC_OPERATOR_URL || `http://127.0.0.1:${operatorPort}`,
    masterKey: masterKey(r),
    masterKeyFallbacks: masterKeys(r, 'SVC_MASTER_KEY_FALLBACKS'),
    logLevel: oneOf(
      r,
      'SVC_LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      'info',
    ),
    logFormat: oneOf(
      r,
      'SVC_LOG_FORMAT',
      ['auto', 'json', 'pretty'],
      env.NODE_ENV === 'production' ? 'json' : 'auto',
    ),
    authCacheTtlMs: int(r, 'SVC_AUTH_CACHE_TTL_MS', 5000, 0, 60_000),
    statementTimeoutMs: int(r, 'SVC_DB_STATEMENT_TIMEOUT_MS', 15_000, 100, 600_000),
    dbPoolWaitMs: int(r, 'SVC_DB_POOL_WAIT_MS', 2000, 50, 60_000),
    // The API's statements alone (a delivery worker has pools of its own): more connections than
    // the server has cores to run them only add backends that take turns on those cores, and each
    // read then costs PostgreSQL more CPU (docs/decisions.md, the API's pool size).
    dbPoolSize: int(r, 'SVC_DB_POOL_SIZE', 10, 2, 1000),
    requestTimeoutMs: int(r, 'SVC_REQUEST_TIMEOUT_MS', 30_000, 1000, 600_000),
    shutdownGraceMs: int(r, 'SVC_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    migrateAtStart: bool(r, 'SVC_MIGRATE_AT_START', true),
    trustProxy: trustProxy(r, 'SVC_TRUST_PROXY'),
    rateLimits: {
      windowMs: int(r, 'SVC_RATE_WINDOW_MS', 60_000, 1000),
      perKey: int(r, 'SVC_RATE_PER_KEY', 600, 1),
      perOrganization: int(r, 'SVC_RATE_PER_ORGANIZATION', 1200, 1),
      perEndpoint: int(r, 'SVC_RATE_PER_ENDPOINT', 300, 1),
      authFailuresPerIp: int(r, 'SVC_RATE_AUTH_FAILURES_PER_IP', 60, 1),
    },
    eventRetentionDays,
    idempotencyRetentionHours: int(r, 'SVC_IDEMPOTENCY_RETENTION_HOURS', 24, 1, 24 * 30),
    idempotencyClaimTimeoutMs: int(r, 'SVC_IDEMPOTENCY_CLAIM_TIMEOUT_MS', 5 * 60_000, 1000),
    webhooks: webhookConfig(r),
    operatorNotify: operatorNotify(r),
  };
}

// The only place that reads process.env. Every variable is validated at start and a bad one
// stops the process with a message that names it.
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
  /** Attempts in flight per worker process, and per webhook across all workers. */
  concurrency: number;
  concurrencyPerWebhook: number;
  /** How long finished attempts are gathered before their outcomes are written together, in ms. */
  batchMs: number;
  /**
   * After a claim that took nothing while deliveries were due (they wait for other workers' slots),
   * or a publish that found nothing, an event committed does not start another one before this, in ms.
   */
  idleGapMs: number;
  /**
   * While every webhook a worker sends to has at least its bound queued behind its attempts (a
   * backlog), its rounds (outcomes written, slots claimed again) come at most this often, in ms.
   */
  backlogRoundMs: number;
  /**
   * A webhook whose oldest due delivery has waited this long (ms) is shared: its holder is not
   * keeping up, so other workers take what its bound leaves, and a worker standing by takes it if
   * no one holds it.
   */
  shareAfterMs: number;
  /**
   * How often at most a worker looks for work that no notification announced (one lost with its
   * connection, what a writer left behind in the outbox), in ms.
   */
  pollMs: number;
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
  operatorHost: string;
  operatorPort: number;
  operatorToken: string | null;
  /** `svc worker`: port of its /metrics listener on operatorHost; null (unset or 0) for none. */
  metricsPort: number | null;
  /** Where `svc admin` finds the operator API. */
  operatorUrl: string;
  masterKey: Buffer | null;
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
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: ${reason}`);
  }
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!allowed.includes(raw as T)) throw new ConfigError(name, `must be one of ${allowed.join(', ')}`);
  return raw as T;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  return oneOf(env, name, ['true', 'false'], fallback ? 'true' : 'false') === 'true';
}

function isAddressOrRange(entry: string): boolean {
  const [address = '', bits, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

function trustProxy(env: Env, name: string): boolean | number | string[] {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return int(env, name, 0, 1, 20);
  const entries = raw.split(',').map((e) => e.trim());
  const bad = entries.find((e) => !isAddressOrRange(e));
  if (bad !== undefined) {
    throw new ConfigError(
      name,
      `must be false, a number of proxy hops, or a comma-separated list of proxy addresses or CIDR ranges; "${bad}" is none of these`,
    );
  }
  return entries;
}

function ranges(env: Env, name: string): string[] {
  const raw = env[name]?.trim();
  if (!raw) return [];
  const entries = raw.split(',').map((e) => e.trim());
  const bad = entries.find((e) => !isAddressOrRange(e));
  if (bad !== undefined) {
    throw new ConfigError(
      name,
      `must be a comma-separated list of addresses or CIDR ranges; "${bad}" is neither`,
    );
  }
  return entries;
}

export const DEFAULT_RETRY_GAPS_S = [30, 60, 120, 240, 480, 960, 1920];

/** Seven gaps in seconds (decimals allowed, so tests can compress the schedule). */
function retryGaps(env: Env, name: string): number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return DEFAULT_RETRY_GAPS_S.map((s) => s * 1000);
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length !== 7 || parts.some((p) => !/^\d{1,6}(\.\d{1,3})?$/.test(p))) {
    throw new ConfigError(name, `must be seven comma-separated numbers of seconds, got "${raw}"`);
  }
  return parts.map((p) => Math.round(Number(p) * 1000));
}

function webhookConfig(env: Env): WebhookConfig {
  const timeoutMs = int(env, 'SVC_WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000);
  const leaseMs = int(env, 'SVC_WEBHOOK_LEASE_SECONDS', 60, 1, 3600) * 1000;
  if (leaseMs < timeoutMs + 1000) {
    throw new ConfigError('SVC_WEBHOOK_LEASE_SECONDS', 'must exceed SVC_WEBHOOK_TIMEOUT_MS by at least 1 s');
  }
  const concurrency = int(env, 'SVC_WEBHOOK_CONCURRENCY', 32, 1, 1000);
  return {
    allowPrivateTargets: bool(env, 'SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    allowedPrivateRanges: ranges(env, 'SVC_WEBHOOK_ALLOWED_PRIVATE_RANGES'),
    dnsTimeoutMs: int(env, 'SVC_WEBHOOK_DNS_TIMEOUT_MS', 3000, 50, 30_000),
    caFile: env.SVC_WEBHOOK_CA_FILE || null,
    retryGapsMs: retryGaps(env, 'SVC_WEBHOOK_RETRY_SCHEDULE'),
    timeoutMs,
    leaseMs,
    concurrency,
    concurrencyPerWebhook: int(env, 'SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK', 4, 1, concurrency),
    batchMs: int(env, 'SVC_WEBHOOK_BATCH_MS', 2, 0, 1000),
    idleGapMs: int(env, 'SVC_WEBHOOK_IDLE_GAP_MS', 50, 0, 60_000),
    backlogRoundMs: int(env, 'SVC_WEBHOOK_BACKLOG_ROUND_MS', 40, 0, 1000),
    shareAfterMs: int(env, 'SVC_WEBHOOK_SHARE_AFTER_MS', 500, 10, 600_000),
    pollMs: int(env, 'SVC_WEBHOOK_POLL_MS', 1000, 100, 60_000),
    embeddedWorker: oneOf(env, 'SVC_WEBHOOK_WORKER', ['on', 'off'], 'on') === 'on',
  };
}

/** A master key is 32 bytes, given as 64 hex characters or as base64. */
export function parseMasterKey(raw: string, name = 'SVC_MASTER_KEY'): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError(name, 'must be 32 bytes as 64 hex characters or base64');
  return key;
}

export function loadConfig(env: Env = process.env): Config {
  const operatorToken = env.SVC_OPERATOR_TOKEN || null;
  if (operatorToken !== null && operatorToken.length < 32) {
    throw new ConfigError('SVC_OPERATOR_TOKEN', 'must be at least 32 characters');
  }
  const eventRetentionDays = int(env, 'SVC_EVENT_RETENTION_DAYS', 30, 30, 3650);
  return {
    environment: oneOf(env, 'SVC_ENVIRONMENT', ['live', 'test'], 'live'),
    databaseUrl: env.DATABASE_URL || null,
    dataDir: env.SVC_DATA_DIR || './data',
    redisUrl: env.REDIS_URL || null,
    host: env.SVC_HOST || '0.0.0.0',
    port: int(env, 'SVC_PORT', 8080, 0, 65535),
    operatorHost: env.SVC_OPERATOR_HOST || '127.0.0.1',
    operatorPort: int(env, 'SVC_OPERATOR_PORT', 8081, 0, 65535),
    operatorToken,
    metricsPort: int(env, 'SVC_METRICS_PORT', 0, 0, 65535) || null,
    operatorUrl: env.SVC_OPERATOR_URL || `http://127.0.0.1:${int(env, 'SVC_OPERATOR_PORT', 8081, 0, 65535)}`,
    masterKey: env.SVC_MASTER_KEY ? parseMasterKey(env.SVC_MASTER_KEY) : null,
    logLevel: oneOf(
      env,
      'SVC_LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      'info',
    ),
    logFormat: oneOf(
      env,
      'SVC_LOG_FORMAT',
      ['auto', 'json', 'pretty'],
      env.NODE_ENV === 'production' ? 'json' : 'auto',
    ),
    authCacheTtlMs: int(env, 'SVC_AUTH_CACHE_TTL_MS', 5000, 0, 60_000),
    statementTimeoutMs: int(env, 'SVC_DB_STATEMENT_TIMEOUT_MS', 15_000, 100, 600_000),
    dbPoolWaitMs: int(env, 'SVC_DB_POOL_WAIT_MS', 2000, 50, 60_000),
    // The API's statements alone (a delivery worker has pools of its own): more connections than
    // the server has cores to run them only add backends that take turns on those cores, and each
    // read then costs PostgreSQL more CPU (docs/decisions.md, the API's pool size).
    dbPoolSize: int(env, 'SVC_DB_POOL_SIZE', 10, 2, 1000),
    requestTimeoutMs: int(env, 'SVC_REQUEST_TIMEOUT_MS', 30_000, 1000, 600_000),
    shutdownGraceMs: int(env, 'SVC_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    trustProxy: trustProxy(env, 'SVC_TRUST_PROXY'),
    rateLimits: {
      windowMs: int(env, 'SVC_RATE_WINDOW_MS', 60_000, 1000),
      perKey: int(env, 'SVC_RATE_PER_KEY', 600, 1),
      perOrganization: int(env, 'SVC_RATE_PER_ORGANIZATION', 1200, 1),
      perEndpoint: int(env, 'SVC_RATE_PER_ENDPOINT', 300, 1),
      authFailuresPerIp: int(env, 'SVC_RATE_AUTH_FAILURES_PER_IP', 60, 1),
    },
    eventRetentionDays,
    idempotencyRetentionHours: int(env, 'SVC_IDEMPOTENCY_RETENTION_HOURS', 24, 1, 24 * 30),
    idempotencyClaimTimeoutMs: int(env, 'SVC_IDEMPOTENCY_CLAIM_TIMEOUT_MS', 5 * 60_000, 1000),
    webhooks: webhookConfig(env),
  };
}

// Builds the dependencies of the applications from the configuration.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Deps } from './apps/deps.js';
import type { Config } from './config.js';
import { createPgliteDb, createPostgresDb, type Db } from './db/db.js';
import { buildName, migrate, pendingMigrations } from './db/migrate.js';
import { createDeliveryMetrics } from './delivery/metrics.js';
import { startWorker, type Worker } from './delivery/worker.js';
import { answerProbe, defaultReadinessChecks } from './health.js';
import { createIdentityCache } from './http/auth.js';
import { createCursorCodec } from './http/cursor.js';
import { createMetrics, type Metrics, metricsText } from './http/metrics.js';
import { prettyStream, wantsPretty } from './log-pretty.js';
import { createLogger } from './logger.js';
import { createOperatorNotifier, type OperatorNotifier } from './operator/notices.js';
import { createSender, type Sender } from './outbound/send.js';
import { withFallback } from './ratelimit/fallback.js';
import { createMemoryStore } from './ratelimit/memory.js';
import { createMirror } from './ratelimit/mirror.js';
import { createRedisStore } from './ratelimit/redis.js';
import type { RateLimitStore } from './ratelimit/store.js';
import { assertMasterKeyOpens, masterKeyCheck } from './security/master-key.js';
import { createTargetResolver } from './security/resolver.js';
import { createSecretBox, newMasterKey, type SecretBox } from './security/secrets.js';
import { targetPolicy } from './security/url-guard.js';

export async function openDatabase(config: Config, logger = createLogger(config.logLevel)): Promise<Db> {
  if (config.databaseUrl) {
    return createPostgresDb({
      url: config.databaseUrl,
      statementTimeoutMs: config.statementTimeoutMs,
      connectionTimeoutMs: config.dbPoolWaitMs,
      max: config.dbPoolSize,
      onIdleError: (error) =>
        logger.warn({ err: error }, 'an idle database connection broke; the pool drops it'),
    });
  }
  await mkdir(config.dataDir, { recursive: true });
  return createPgliteDb(join(config.dataDir, 'pglite'));
}

/**
 * The master key protects derived secrets (cursor signing today). A server database needs it
 * given (SVC_MASTER_KEY); the embedded one keeps a generated key beside its data, readable by
 * the owner only.
 */
export async function resolveMasterKey(config: Config): Promise<Buffer> {
  if (config.masterKey) return config.masterKey;
  if (config.databaseUrl) throw new Error('SVC_MASTER_KEY: required when DATABASE_URL is set');
  const file = join(config.dataDir, 'master.key');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      // Never replace a key that exists: every cursor and derived secret depends on it.
      throw new Error(
        `${file}: cannot be read (${(error as Error).message}); fix it or restore it from a copy`,
      );
    }
    const key = newMasterKey();
    await mkdir(config.dataDir, { recursive: true });
    // `wx`: if another process created it meanwhile, fail rather than overwrite.
    await writeFile(file, key.toString('hex'), { mode: 0o600, flag: 'wx' });
    return key;
  }
  const hex = text.trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
    throw new Error(
      `${file}: must hold the 32 bytes of the master key as 64 hex characters; restore it from a copy`,
    );
  }
  return Buffer.from(hex, 'hex');
}

/** Seals under the master key, opens under it and SVC_MASTER_KEY_FALLBACKS (the keyring). */
export async function secretBoxOf(config: Config): Promise<SecretBox> {
  return createSecretBox(await resolveMasterKey(config), config.masterKeyFallbacks);
}

function createLimiter(config: Config, logger: Deps['logger'], now: () => number): RateLimitStore {
  if (!config.redisUrl) return createMemoryStore(now);
  return withFallback({
    primary: createRedisStore({ url: config.redisUrl, now }),
    local: createMirror(now),
    onFallback: (error) =>
      logger.error(
        { err: error },
        'Redis unreachable: rate limits are decided by each process from its copy of the shared windows until it is back',
      ),
    onStall: (error) =>
      logger.warn(
        { err: error },
        'Redis did not answer in time: this request was decided from the local copy',
      ),
    onRecovery: (downMs) =>
      logger.warn({ down_ms: downMs }, 'Redis answers again: rate limits are shared again'),
  });
}

/** The log of this process: readable lines on a terminal (unless told otherwise), JSON elsewhere. */
export function processLogger(config: Config, isTTY = process.stdout.isTTY): FastifyBaseLogger {
  return createLogger(
    config.logLevel,
    wantsPretty(config.logFormat, isTTY) ? prettyStream(process.stdout, isTTY === true) : undefined,
  );
}

/**
 * Applies the pending migrations (under the migrations' lock, so processes may start together), or
 * with SVC_MIGRATE_AT_START=false refuses to start while any is pending: a platform that runs
 * `svc migrate` as a step of its own never has a process start on a schema it does not know.
 */
async function prepareSchema(config: Config, db: Db): Promise<void> {
  if (config.migrateAtStart) {
    await migrate(db);
    return;
  }
  const pending = await pendingMigrations(db);
  if (pending.length > 0) {
    throw new Error(
      `SVC_MIGRATE_AT_START=false and ${pending.length} migration(s) are pending (${pending.join(', ')}): run svc migrate first`,
    );
  }
}

export async function createDeps(config: Config, db: Db, logger = processLogger(config)): Promise<Deps> {
  const now = Date.now;
  const masterKey = await resolveMasterKey(config);
  const secrets = createSecretBox(masterKey, config.masterKeyFallbacks);
  await prepareSchema(config, db);
  // A key that does not open what is stored would fail every delivery: refuse to start instead.
  // (The caller closes the database it opened when the start fails: its idle connections would
  // otherwise hold the process up for minutes after the message.)
  await assertMasterKeyOpens(db, secrets);
  return {
    config,
    db,
    logger,
    readinessChecks: [
      ...defaultReadinessChecks(db),
      {
        // A key that no longer opens the stored secrets would fail every delivery.
        name: 'master key',
        async check() {
          const verdict = await masterKeyCheck(db, secrets);
          if (!verdict.ok)
            throw new Error(verdict.message ?? 'the master key does not open the stored secrets');
        },
      },
    ],
    identities: createIdentityCache(db, config.authCacheTtlMs, now),
    limiter: createLimiter(config, logger, now),
    metrics: createMetrics(),
    cursors: createCursorCodec({
      db,
      masterKey,
      fallbackMasterKeys: config.masterKeyFallbacks,
      refreshMs: config.authCacheTtlMs,
      now,
    }),
    secrets,
    // One resolver, so the API and a worker on the same thread share its cache.
    resolve: createTargetResolver({ timeoutMs: config.webhooks.dnsTimeoutMs }),
    now,
  };
}

/** What a delivery worker is made of: the application's dependencies, or a thread's own (delivery-thread.ts). */
export type DeliveryParts = Pick<Deps, 'config' | 'db' | 'logger' | 'secrets' | 'resolve'> & {
  metrics: Pick<Metrics, 'registry'>;
};

/** Connections of a delivery worker's own pool. */
const ENGINE_CONNECTIONS = 3;

/**
 * A delivery worker for this process, on the application's metrics registry. The development
 * settings that widen what a delivery may reach are logged loudly whenever they are on.
 */
export async function startDeliveryWorker(deps: DeliveryParts): Promise<Worker> {
  const { webhooks } = deps.config;
  if (webhooks.allowPrivateTargets) {
    deps.logger.warn(
      'SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS=true: webhooks may target loopback and private addresses on any port. Never in production.',
    );
  }
  if (webhooks.caFile) {
    deps.logger.warn(
      { file: webhooks.caFile },
      'SVC_WEBHOOK_CA_FILE: deliveries also trust this CA. Never in production.',
    );
  }
  const ca = webhooks.caFile ? await readFile(webhooks.caFile) : null;
  const sender = createSender({
    policy: targetPolicy(webhooks),
    resolve: deps.resolve,
    timeoutMs: webhooks.timeoutMs,
    ca,
  });
  const notices = operatorNotices(deps, ca);
  // The engine's statements on connections of their own (Db.withPlansKept): a worker runs one
  // round at a time, beside which it may hand back leases as it stops.
  const engine = deps.db.withPlansKept(ENGINE_CONNECTIONS);
  const worker = await startWorker({
    db: deps.db,
    engine,
    logger: deps.logger,
    config: webhooks,
    secrets: deps.secrets,
    sender,
    metrics: createDeliveryMetrics(deps.metrics.registry, deps.db),
    build: await buildName(),
    ...(notices ? { notify: notices.notifier.notify } : {}),
  });
  return {
    wake: worker.wake,
    async stop(graceMs) {
      await worker.stop(graceMs);
      // After the worker: its last outcomes may still deactivate a webhook.
      await notices?.notifier.close(graceMs);
      await Promise.all([sender.close(), notices?.sender.close()]);
      await engine.close();
    },
  };
}

/**
 * The announcer of deactivations and warnings, when SVC_OPERATOR_NOTIFY_URL is set. Its URL is the
 * platform's own choice, not a tenant's, so private addresses are allowed (docs/decisions.md,
 * "Operator notices"); it is still https only, vetted and pinned per attempt like a delivery.
 */
function operatorNotices(
  deps: DeliveryParts,
  ca: Buffer | null,
): { notifier: OperatorNotifier; sender: Sender } | null {
  const target = deps.config.operatorNotify;
  if (!target) return null;
  const sender = createSender({
    policy: { allowPrivateTargets: true },
    resolve: deps.resolve,
    timeoutMs: deps.config.webhooks.timeoutMs,
    ca,
    connections: 4,
  });
  const notifier = createOperatorNotifier({ ...target, sender, logger: deps.logger });
  // The host only: a path or query may carry the receiver's own token.
  deps.logger.info(
    { host: new URL(target.url).host },
    'webhook deactivations and warnings are announced to SVC_OPERATOR_NOTIFY_URL',
  );
  return { notifier, sender };
}

export interface MetricsListener {
  port: number;
  close(): Promise<void>;
}

/**
 * `svc worker` has no HTTP application, so its metrics (the delivery counters and gauges, and
 * node's own) get a listener of their own: GET /metrics on SVC_OPERATOR_HOST (127.0.0.1 by
 * default) at SVC_METRICS_PORT, without a token, like a Prometheus exporter. It only reads: the
 * queue-depth gauge is one grouped count per scrape. It also answers the probes /livez and
 * /readyz (src/health.ts). Off when the port is unset or 0.
 */
export async function startMetricsListener(deps: Deps): Promise<MetricsListener | null> {
  const port = deps.config.metricsPort;
  if (port === null) return null;
  const { registry } = deps.metrics;
  const probes = {
    logger: deps.logger,
    readinessChecks: deps.readinessChecks ?? defaultReadinessChecks(deps.db),
  };
  const server = createServer((req, res) => {
    if (answerProbe(probes, req, res)) return;
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    metricsText(deps.metrics).then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        deps.logger.warn({ err: error }, 'metrics could not be collected');
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n');
      },
    );
  });
  server.keepAliveTimeout = 5000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, deps.config.operatorHost, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  deps.logger.info({ host: deps.config.operatorHost, port: bound }, 'metrics listener started');
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

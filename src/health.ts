// Liveness and readiness for whatever runs the service (a kubelet, a load balancer, a container's
// HEALTHCHECK): answered without a credential and saying nothing beyond up or ready, on a
// listener of their own (SVC_HEALTH_PORT), so the operator API and its token stay on loopback.
// The operator API's /readyz (behind the token) gives the same verdict with the failing checks.
import { readdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Queryable } from './db/db.js';
import { MIGRATIONS_DIR } from './db/migrate.js';

/** One condition of readiness: resolves when it holds, rejects with the reason otherwise. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

/** Below the smallest SVC_REQUEST_TIMEOUT_MS (1 s), so a probe always answers itself. */
export const READY_TIMEOUT_MS = 500;

/** The database answers now: a probe that waits behind a stalled pool would lie to a balancer. */
export function databaseCheck(db: Queryable): ReadinessCheck {
  return { name: 'database', check: async () => void (await db.query('SELECT 1')) };
}

/** Every migration this release ships is applied (a database restored from an older backup is not). */
export function migrationsCheck(db: Queryable, dir = MIGRATIONS_DIR): ReadinessCheck {
  return {
    name: 'migrations',
    async check() {
      const rows = await db.query<{ name: string }>('SELECT name FROM schema_migrations');
      const applied = new Set(rows.map((r) => r.name));
      const pending = (await shipped(dir)).filter((n) => !applied.has(n));
      if (pending.length > 0) throw new Error(`migrations pending: ${pending.join(', ')}`);
    },
  };
}

/** The migration files of this release: read once per folder, they never change while it runs. */
const releases = new Map<string, Promise<string[]>>();
function shipped(dir: string): Promise<string[]> {
  let names = releases.get(dir);
  if (!names) {
    names = readdir(dir).then((files) => files.filter((f) => f.endsWith('.sql')));
    releases.set(dir, names);
  }
  return names;
}

/** The checks every process has; others (the master key opens stored secrets) are added to the list. */
export const defaultReadinessChecks = (db: Queryable): ReadinessCheck[] => [
  databaseCheck(db),
  migrationsCheck(db),
];

export interface Readiness {
  ready: boolean;
  /** The checks that failed, with their reasons: for the operator and the log, never a probe. */
  failed: { name: string; reason: string }[];
}

/** Runs every check at once, each bounded by `timeoutMs`. */
export async function readiness(
  checks: readonly ReadinessCheck[],
  timeoutMs = READY_TIMEOUT_MS,
): Promise<Readiness> {
  const results = await Promise.all(checks.map((c) => bounded(c, timeoutMs)));
  const failed = results.filter((r): r is { name: string; reason: string } => r !== null);
  return { ready: failed.length === 0, failed };
}

async function bounded(
  c: ReadinessCheck,
  timeoutMs: number,
): Promise<{ name: string; reason: string } | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([c.check(), late]);
    return null;
  } catch (error) {
    return { name: c.name, reason: (error as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

export interface ProbeDeps {
  readinessChecks: readonly ReadinessCheck[];
  logger: FastifyBaseLogger;
}

/**
 * Answers GET (or HEAD) /livez and /readyz; returns false for anything else. The bodies are
 * fixed: `{"status":"ok"}`, `{"status":"ready"}` or 503 `{"status":"unavailable"}`.
 */
export function answerProbe(deps: ProbeDeps, req: IncomingMessage, res: ServerResponse): boolean {
  const path = (req.url ?? '').split('?')[0];
  if ((path !== '/livez' && path !== '/readyz') || (req.method !== 'GET' && req.method !== 'HEAD')) {
    return false;
  }
  const send = (status: number, body: object) => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : JSON.stringify(body));
  };
  if (path === '/livez') {
    send(200, { status: 'ok' });
    return true;
  }
  void readiness(deps.readinessChecks).then((r) => {
    if (!r.ready) deps.logger.warn({ failed: r.failed }, 'not ready');
    send(r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'unavailable' });
  });
  return true;
}

export interface HealthListener {
  port: number;
  close(): Promise<void>;
}

/** The probes' own listener at host:port; anything but the two probes is a 404. */
export async function startHealthListener(
  deps: ProbeDeps,
  host: string,
  port: number,
): Promise<HealthListener> {
  const server = createServer((req, res) => {
    if (!answerProbe(deps, req, res)) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
    }
  });
  server.keepAliveTimeout = 5000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  deps.logger.info({ host, port: bound }, 'health listener started');
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

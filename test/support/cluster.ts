// Scale-out and fault tests: real `svc serve` and `svc worker` processes on one PostgreSQL schema
// of their own (on the shared test server, or on a private cluster this file starts), rate limits
// in Redis (the shared one, or a private redis-server), tenants and webhooks made over HTTP the way
// the platform and an integrator make them. Everything started here is stopped after the file.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { createPostgresDb, type Db } from '../../src/db/db.js';
import { freePort, type Started, start, svc } from './processes.js';
import { sleep, until } from './wait.js';
import { WEBHOOK_SCOPES } from './webhooks.js';

export const SERVER_DATABASE_URL = process.env.TEST_DATABASE_URL ?? '';
export const SERVER_REDIS_URL = process.env.TEST_REDIS_URL ?? '';

/** Why a file that needs PostgreSQL and Redis is skipped on the embedded run, or false. */
export const needsServers =
  SERVER_DATABASE_URL && SERVER_REDIS_URL
    ? false
    : 'needs PostgreSQL and Redis (TEST_DATABASE_URL and TEST_REDIS_URL): several processes share them';

export const OPERATOR_TOKEN = 'scale-test-operator-token-0123456789abcdef';
export const MASTER_KEY_HEX = '0a'.repeat(32);

export { sleep, until };

// ---------------------------------------------------------------------------------------------
// Databases

export interface TestSchema {
  /** DATABASE_URL of the processes: the schema first on their search path. */
  url: string;
  /** The test's own connection, for checks in SQL. */
  db: Db;
}

/** A fresh schema on the server at `serverUrl`, dropped after the file. */
export async function freshSchema(serverUrl = SERVER_DATABASE_URL): Promise<TestSchema> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = createPostgresDb({ url: serverUrl, max: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  const db = createPostgresDb({ url: serverUrl, schema, max: 2 });
  after(async () => {
    await db.close().catch(() => {});
    await admin.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.close().catch(() => {});
  });
  const separator = serverUrl.includes('?') ? '&' : '?';
  return { url: `${serverUrl}${separator}options=${encodeURIComponent(`-c search_path=${schema}`)}`, db };
}

export interface PrivatePostgres {
  url: string;
  port: number;
  /** Stops the server (`mode`: fast closes sessions; immediate is a crash) and starts it again after `downMs`. */
  restart(options?: {
    mode?: 'fast' | 'immediate';
    downMs?: number;
  }): Promise<{ downAt: number; upAt: number }>;
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
}

function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

/** Why a private PostgreSQL cannot be started here, or false. */
export const needsPostgresBinaries = postgresBin()
  ? false
  : 'needs initdb and pg_ctl (/usr/lib/postgresql/*/bin)';

/** Runs a command to its end; as the postgres user when this process is root (initdb refuses root). */
async function runAsOwner(bin: string, args: string[], timeoutMs = 60_000): Promise<string> {
  const asRoot = process.getuid?.() === 0;
  const [command, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  const child = start(command, argv);
  const timer = setTimeout(() => child.child.kill('SIGKILL'), timeoutMs);
  const code = await child.exited();
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${bin} ${args.join(' ')} exited with ${code}:\n${child.output()}`);
  return child.output();
}

/**
 * A PostgreSQL cluster of the test's own (initdb in a temporary directory, pg_ctl on a free port,
 * trust authentication on loopback), so stopping it never touches the machine's shared server.
 * Stopped and removed after the file.
 */
export async function privatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBin();
  if (!bin) throw new Error('no PostgreSQL binaries');
  const dir = await mkdtemp(join(tmpdir(), 'svc-pg-'));
  const data = join(dir, 'data');
  if (process.getuid?.() === 0) {
    const { uid, gid } = await ownerOf('postgres');
    await chown(dir, uid, gid);
  }
  await chmod(dir, 0o700);
  const port = await freePort();
  await runAsOwner(join(bin, 'initdb'), [
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    'postgres',
    '--no-sync',
    '-E',
    'UTF8',
  ]);
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c shared_buffers=16MB',
    '-c max_connections=60',
  ].join(' ');
  const pgCtl = (args: string[]) => runAsOwner(join(bin, 'pg_ctl'), ['-D', data, ...args]);
  const startServer = async () => {
    await pgCtl(['-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
  };
  const stopServer = async (mode: 'fast' | 'immediate' = 'fast') => {
    await pgCtl(['-m', mode, '-w', '-t', '60', 'stop']);
  };
  await startServer();
  after(async () => {
    await stopServer('immediate').catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start: startServer,
    stop: stopServer,
    async restart({ mode = 'fast', downMs = 0 } = {}) {
      await stopServer(mode);
      const downAt = Date.now();
      if (downMs > 0) await sleep(downMs);
      await startServer();
      return { downAt, upAt: Date.now() };
    },
  };
}

async function ownerOf(user: string): Promise<{ uid: number; gid: number }> {
  const { readFile } = await import('node:fs/promises');
  const line = (await readFile('/etc/passwd', 'utf8')).split('\n').find((l) => l.startsWith(`${user}:`));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) throw new Error(`no user ${user}`);
  return { uid: Number(uid), gid: Number(gid) };
}

export interface PrivateRedis {
  url: string;
  port: number;
  /** SIGSTOP: the connection stays open, nothing answers. */
  freeze(): void;
  /** SIGCONT after a freeze. */
  thaw(): void;
  /** SIGKILL: the connection drops; its data is gone (no persistence). */
  kill(): Promise<void>;
  /** Starts it again on the same port after a kill. */
  start(): Promise<void>;
}

/** Why a private Redis cannot be started here, or false. */
export const needsRedisServer = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].some((p) =>
  existsSync(p),
)
  ? false
  : 'needs redis-server';

/** A redis-server of the test's own on a free loopback port, without persistence. */
export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let current: Started | null = null;
  const launch = async () => {
    current = start('redis-server', [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--loglevel',
      'warning',
    ]);
    await until('redis-server accepts connections', async () => {
      const { createConnection } = await import('node:net');
      return new Promise<boolean>((resolve) => {
        const socket = createConnection({ port, host: '127.0.0.1' }, () => {
          socket.write('PING\r\n');
        });
        socket.once('data', (d) => {
          socket.destroy();
          resolve(d.toString().startsWith('+PONG'));
        });
        socket.once('error', () => resolve(false));
      });
    });
  };
  await launch();
  after(async () => {
    current?.child.kill('SIGCONT');
    await current?.stop('SIGKILL');
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    freeze: () => current?.child.kill('SIGSTOP'),
    thaw: () => current?.child.kill('SIGCONT'),
    async kill() {
      current?.child.kill('SIGCONT');
      await current?.stop('SIGKILL');
    },
    start: launch,
  };
}

// ---------------------------------------------------------------------------------------------
// Processes

export interface ServeProcess {
  proc: Started;
  api: string;
  op: string;
  env: Record<string, string>;
  metrics(): Promise<string>;
}

export interface WorkerProcess {
  proc: Started;
  metricsPort: number;
  metrics(): Promise<string>;
}

/** The settings every process of one test's service shares (database, Redis, secrets, receiver). */
export function serviceEnv(options: {
  databaseUrl: string;
  redisUrl: string;
  caFile: string;
  extra?: Record<string, string>;
}): Record<string, string> {
  return {
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    SVC_HOST: '127.0.0.1',
    SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
    SVC_MASTER_KEY: MASTER_KEY_HEX,
    SVC_LOG_LEVEL: 'warn',
    SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    SVC_WEBHOOK_CA_FILE: options.caFile,
    ...options.extra,
  };
}

/** `svc serve` on free ports; resolves once its operator API answers. */
export async function startServe(
  env: Record<string, string>,
  ports?: { api: number; op: number },
): Promise<ServeProcess> {
  const api = ports?.api ?? (await freePort());
  const op = ports?.op ?? (await freePort());
  const own = { ...env, SVC_PORT: String(api), SVC_OPERATOR_PORT: String(op) };
  const proc = svc(['serve'], own);
  const opUrl = `http://127.0.0.1:${op}/operator/v1`;
  await until(
    `svc serve answers on ${op}`,
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`svc serve exited:\n${proc.output()}`);
      return (await fetch(`${opUrl}/healthz`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })).ok;
    },
    60_000,
  );
  return {
    proc,
    api: `http://127.0.0.1:${api}/api/v1`,
    op: opUrl,
    env: own,
    metrics: async () =>
      (await fetch(`${opUrl}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })).text(),
  };
}

/** `svc worker` with its /metrics listener on a free port; resolves once that answers. */
export async function startWorker(env: Record<string, string>, metricsPort?: number): Promise<WorkerProcess> {
  const port = metricsPort ?? (await freePort());
  const proc = svc(['worker'], { ...env, SVC_METRICS_PORT: String(port) });
  const url = `http://127.0.0.1:${port}/metrics`;
  await until(
    `svc worker metrics answer on ${port}`,
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`svc worker exited:\n${proc.output()}`);
      return (await fetch(url)).ok;
    },
    60_000,
  );
  return { proc, metricsPort: port, metrics: async () => (await fetch(url)).text() };
}

/** The sum of a metric's samples in Prometheus text whose labels include `labels`. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    const given = match[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => given.includes(`${k}="${v}"`))) sum += Number(match[3]);
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------
// HTTP

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
  ms: number;
}

/** One request; network errors are thrown. */
export async function request(
  url: string,
  method: string,
  auth: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${auth}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed, headers: res.headers, ms: performance.now() - started };
}

export async function ok(answer: Promise<Answer>, what: string): Promise<any> {
  const res = await answer;
  assert.ok(res.status >= 200 && res.status < 300, `${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export interface ClusterTenant {
  organizationId: string;
  integrationId: string;
  key: string;
  webhooks: { id: string; secret: string; url: string }[];
}

let codes = 0;

/** An organization with webhooks and the outbox on, an integration, a key, and one webhook per url. */
export async function clusterTenant(serve: ServeProcess, webhookUrls: string[] = []): Promise<ClusterTenant> {
  codes += 1;
  const org = await ok(
    request(`${serve.op}/organizations`, 'POST', OPERATOR_TOKEN, {
      code: String(100 + ((process.pid * 31 + codes) % 900_000)),
      name: 'Transportes Escala',
      webhooks_enabled: true,
      outbox_enabled: true,
    }),
    'POST /organizations',
  );
  const integration = await ok(
    request(`${serve.op}/organizations/${org.id}/integrations`, 'POST', OPERATOR_TOKEN, {
      name: 'ERP',
      kind: 'erp',
      scopes: WEBHOOK_SCOPES,
    }),
    'POST integrations',
  );
  const key = await ok(
    request(`${serve.op}/integrations/${integration.id}/keys`, 'POST', OPERATOR_TOKEN, {
      name: 'k',
      scopes: WEBHOOK_SCOPES,
      environment: 'live',
    }),
    'POST keys',
  );
  const webhooks = [];
  for (const url of webhookUrls) {
    const made = await ok(
      request(`${serve.api}/webhooks`, 'POST', key.key, { url, events: ['*'] }),
      'POST /webhooks',
    );
    webhooks.push({ id: made.id, secret: made.secret, url });
  }
  return { organizationId: org.id, integrationId: integration.id, key: key.key, webhooks };
}

/** Another key of the tenant's integration. */
export async function anotherKey(serve: ServeProcess, tenant: ClusterTenant): Promise<string> {
  const key = await ok(
    request(`${serve.op}/integrations/${tenant.integrationId}/keys`, 'POST', OPERATOR_TOKEN, {
      name: `k${randomBytes(3).toString('hex')}`,
      scopes: WEBHOOK_SCOPES,
      environment: 'live',
    }),
    'POST keys',
  );
  return key.key;
}

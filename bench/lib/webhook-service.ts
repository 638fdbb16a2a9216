// The service of the delivery benchmark, started as operators start it: `node bin/svc.js serve`
// (APIs and the embedded delivery worker) and `node bin/svc.js worker` (delivery only, PostgreSQL),
// from dist, with webhooks allowed to reach the loopback receiver and trust the test CA.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { type Child, freePort, profileArgs, startChild } from './child.js';

export type BenchDatabase = { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir: string };

export interface ServiceEnv {
  env: NodeJS.ProcessEnv;
  baseUrl: string;
  operatorUrl: string;
  operatorToken: string;
}

const UNLIMITED = '100000000';

/** The environment every process of one service shares (serve and its workers). */
export async function serviceEnv(
  database: BenchDatabase,
  caFile: string,
  extra: Record<string, string> = {},
): Promise<ServiceEnv> {
  const port = await freePort();
  const operatorPort = await freePort();
  const operatorToken = randomBytes(24).toString('hex');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    SVC_HOST: '127.0.0.1',
    SVC_PORT: String(port),
    SVC_OPERATOR_PORT: String(operatorPort),
    SVC_OPERATOR_TOKEN: operatorToken,
    SVC_MASTER_KEY: randomBytes(32).toString('hex'),
    SVC_LOG_LEVEL: 'warn',
    SVC_RATE_PER_KEY: UNLIMITED,
    SVC_RATE_PER_ORGANIZATION: UNLIMITED,
    SVC_RATE_PER_ENDPOINT: UNLIMITED,
    SVC_RATE_WINDOW_MS: '1000',
    SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    SVC_WEBHOOK_CA_FILE: caFile,
    ...(database.kind === 'postgres' ? { DATABASE_URL: database.url } : { SVC_DATA_DIR: database.dataDir }),
    // The engine's settings given to the benchmark (SVC_WEBHOOK_BATCH_MS=0 npm run bench:webhooks …)
    // reach every process of the service: experiments need no code change.
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('SVC_WEBHOOK_'))),
    ...extra,
  };
  return {
    env,
    baseUrl: `http://127.0.0.1:${port}/api/v1`,
    operatorUrl: `http://127.0.0.1:${operatorPort}/operator/v1`,
    operatorToken,
  };
}

export function startServe(root: string, s: ServiceEnv, profileDir?: string): Promise<Child> {
  return startChild({
    args: [...profileArgs(profileDir), 'bin/svc.js', 'serve'],
    cwd: root,
    env: s.env,
    ready: async () =>
      (await fetch(`${s.operatorUrl}/healthz`, { headers: { authorization: `Bearer ${s.operatorToken}` } }))
        .ok,
  });
}

/**
 * `svc worker` has no HTTP port: it is ready when it logs that it started (its log level is raised
 * to info for that one line; the worker logs nothing per delivery).
 */
export async function startWorkerProcess(root: string, s: ServiceEnv, profileDir?: string): Promise<Child> {
  const child = await startChild({
    args: [...profileArgs(profileDir), 'bin/svc.js', 'worker'],
    cwd: root,
    env: { ...s.env, SVC_LOG_LEVEL: 'info' },
    ready: async () => true,
  });
  const deadline = Date.now() + 60_000;
  while (!child.output().includes('webhook delivery worker started')) {
    if (Date.now() > deadline || (await child.rssMb()) === null) {
      await child.stop();
      throw new Error(`svc worker did not start:\n${child.output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return child;
}

/** CPU time (user + system) of a process in ms, from /proc/<pid>/stat; null when unreadable. */
export async function cpuMs(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "(comm) ": state is field 3, utime 14, stime 15 (1-based in proc(5)).
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * (1000 / CLOCK_TICKS) : null;
  } catch {
    return null;
  }
}

/** USER_HZ; 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

/** Runs `work` on a connection to the server's `postgres` database (the one named by `url` may not exist). */
async function onServer<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Drops and creates the benchmark's PostgreSQL database named by `url` (a fresh run each time). */
export function recreateDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const quoted = `"${name.replaceAll('"', '""')}"`;
  return onServer(url, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${quoted}`);
  });
}

/** The server's autovacuum setting (on, off). */
export function autovacuumSetting(url: string): Promise<string> {
  return onServer(url, async (client) => {
    const { rows } = await client.query<{ autovacuum: string }>('SHOW autovacuum');
    return rows[0]?.autovacuum ?? 'unknown';
  });
}

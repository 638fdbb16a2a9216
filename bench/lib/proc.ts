// The processes of every benchmark: `svc serve` and `svc worker` started from dist as operators
// start them, and the benchmark's own scripts (the minimal server, the reference worker); each
// awaited until it is ready, measured through /proc, and stopped (or killed) by its own pid.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { freePort } from '../../test/support/ports.js';
import { ROOT, sleep } from './report.js';

export { freePort };

export interface Child {
  pid: number;
  /** CPU time used so far (user + system), ms; null once the process is gone. */
  cpuMs(): Promise<number | null>;
  /** SIGTERM (SIGKILL after 10 s), or the signal given; resolves when the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** utime + stime of /proc/<pid>/stat in ms (USER_HZ is 100 on every Linux this runs on). */
export async function cpuMs(pid: number): Promise<number | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields ? (Number(fields[11]) + Number(fields[12])) * 10 : null;
}

/** The machine's busy and total CPU time so far, ms, from the first line of /proc/stat. */
export async function machineCpuMs(): Promise<{ busy: number; total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  return { busy: (total - ticks[3]! - ticks[4]!) * 10, total: total * 10 };
}

/** Every process started and not yet stopped: killed by pid when the run is interrupted. */
const running = new Set<Child>();
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void stopAll('SIGKILL').finally(() => process.exit(130)));

/** Stops every process still running (after a failure). */
export const stopAll = (signal?: NodeJS.Signals) => Promise.all([...running].map((c) => c.stop(signal)));

/** `node <args>` in `cwd`, resolved once `ready` holds (given what it wrote so far), within 2 minutes. */
export async function startChild(
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: (output: string) => Promise<boolean> | boolean,
  cwd = ROOT,
): Promise<Child> {
  const proc = spawn(process.execPath, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  let exited: number | null = null;
  const exit = new Promise<void>((resolve) =>
    proc.once('exit', (code, signal) => {
      exited = code ?? (signal ? 128 : 1);
      resolve();
    }),
  );
  const child: Child = {
    pid: proc.pid!,
    cpuMs: () => (exited === null ? cpuMs(proc.pid!) : Promise.resolve(null)),
    async stop(signal = 'SIGTERM') {
      running.delete(child);
      if (exited !== null) return;
      proc.kill(signal);
      const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(killer);
    },
  };
  running.add(child);
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(50)) {
    if (exited !== null) throw new Error(`node ${args.join(' ')} exited (${exited}):\n${tail}`);
    if (await Promise.resolve(ready(tail)).catch(() => false)) return child;
  }
  await child.stop();
  throw new Error(`node ${args.join(' ')} did not get ready in time:\n${tail}`);
}

/** A script of the benchmark (bench/<file>), given `config` as JSON in BENCH_CONFIG; ready once it prints "ready". */
export const startScript = (file: string, config: unknown) =>
  startChild(
    ['--import', 'tsx', `bench/${file}`],
    { PATH: process.env.PATH, NODE_ENV: 'production', BENCH_CONFIG: JSON.stringify(config) },
    (output) => output.includes('ready'),
  );

export type Service = Awaited<ReturnType<typeof service>>;

/** High enough that no run is ever limited; the limiter still does its work on every request. */
const UNLIMITED = '100000000';

/**
 * The service's environment on the database at `url`: rate limits lifted with a one-second window
 * (the memory limiter keeps a timestamp per admitted request for a whole window; at 60 s the buckets
 * would hold a minute of benchmark traffic, tens of MB production never has), webhooks allowed to
 * the loopback receiver with the test CA. SVC_WEBHOOK_* variables given to the benchmark reach
 * every process. Each call has ports of its own; `like` shares its keys and data (another build).
 */
export async function service(url: string, extra: NodeJS.ProcessEnv = {}, like?: { env: NodeJS.ProcessEnv }) {
  const [port, operatorPort] = [await freePort(), await freePort()];
  const operatorToken = like?.env.SVC_OPERATOR_TOKEN ?? randomBytes(24).toString('hex');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    SVC_HOST: '127.0.0.1',
    SVC_OPERATOR_TOKEN: operatorToken,
    SVC_MASTER_KEY: randomBytes(32).toString('hex'),
    SVC_LOG_LEVEL: 'warn',
    SVC_RATE_PER_KEY: UNLIMITED,
    SVC_RATE_PER_ORGANIZATION: UNLIMITED,
    SVC_RATE_PER_ENDPOINT: UNLIMITED,
    SVC_RATE_WINDOW_MS: '1000',
    SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    SVC_WEBHOOK_CA_FILE: `${ROOT}/test/fixtures/tls/ca.pem`,
    DATABASE_URL: url,
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('SVC_WEBHOOK_'))),
    ...extra,
    ...like?.env,
    SVC_PORT: String(port),
    SVC_OPERATOR_PORT: String(operatorPort),
  };
  const operatorUrl = `http://127.0.0.1:${operatorPort}/operator/v1`;
  return {
    root: ROOT,
    env,
    baseUrl: `http://127.0.0.1:${port}/api/v1`,
    operatorUrl,
    operatorToken,
    /** A call to the operator API. */
    op: <T>(path: string, body: unknown, method = 'POST') =>
      call<T>(`${operatorUrl}${path}`, method, operatorToken, body),
  };
}

/** An integration of the organization with `scopes`, and a live key of it. */
export async function createIntegration(s: Service, organizationId: string, kind: string, scopes: string[]) {
  const integration = { name: 'Benchmark', kind, scopes };
  const { id } = await s.op<{ id: string }>(`/organizations/${organizationId}/integrations`, integration);
  const keyBody = { name: 'benchmark', scopes, environment: 'live' };
  const { key } = await s.op<{ key: string }>(`/integrations/${id}/keys`, keyBody);
  return { id, key };
}

/** `svc serve`, ready when its operator API answers. */
export const startServe = (s: Service, env: NodeJS.ProcessEnv = {}) =>
  startChild(
    ['bin/svc.js', 'serve'],
    { ...s.env, ...env },
    async () =>
      (await fetch(`${s.operatorUrl}/healthz`, { headers: { authorization: `Bearer ${s.operatorToken}` } }))
        .ok,
    s.root,
  );

/** `svc worker` has no port: it is ready once it logs that it started (at info, for that line). */
export const startWorker = (s: Service, env: NodeJS.ProcessEnv = {}) =>
  startChild(
    ['bin/svc.js', 'worker'],
    { ...s.env, SVC_LOG_LEVEL: 'info', ...env },
    (output) => output.includes('webhook delivery worker started'),
    s.root,
  );

/** A JSON call with a bearer token; throws on anything but 2xx. */
export async function call<T>(url: string, method: string, token: string, body?: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Creates the database named by `url` when it does not exist; with `fresh`, drops it first. */
export async function createDatabase(url: string, fresh: boolean): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const quoted = `"${name.replaceAll('"', '""')}"`;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    if (fresh) await client.query(`DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)`);
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${quoted}`);
  } finally {
    await client.end();
  }
}

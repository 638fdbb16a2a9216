// The processes of every benchmark: `svc serve` and `svc worker` started from dist as operators
// start them, the reference and the minimal server; each awaited until it answers, measured
// through /proc, and stopped (or killed) by its own pid.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import pg from 'pg';

export type Database = { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir: string };

export interface Child {
  pid: number;
  /** The last lines the process wrote, for error messages and readiness. */
  output(): string;
  /** CPU time used so far (user + system), ms; null once the process is gone. */
  cpuMs(): Promise<number | null>;
  /** Peak resident set size (VmHWM), MB. */
  peakRssMb(): Promise<number | null>;
  /** SIGTERM (SIGKILL after 10 s), or the signal given; resolves when the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** utime + stime of /proc/<pid>/stat in ms (USER_HZ is 100 on every Linux this runs on). */
export async function cpuMs(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** The machine's busy and total CPU time so far, ms, from the first line of /proc/stat. */
export async function machineCpuMs(): Promise<{ busy: number; total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
  return { busy: (total - idle) * 10, total: total * 10 };
}

export interface StartOptions {
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Resolves true once the process is ready; given what it wrote so far. */
  ready: (output: string) => Promise<boolean> | boolean;
}

/** Every process started and not yet stopped: stopped by pid when the run is interrupted. */
const running = new Set<Child>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void Promise.all([...running].map((c) => c.stop('SIGKILL'))).finally(() => process.exit(130));
  });
}

/** Stops every process still running (after a failure). */
export const stopAll = () => Promise.all([...running].map((c) => c.stop()));

export async function startChild(options: StartOptions): Promise<Child> {
  const proc: ChildProcess = spawn(process.execPath, options.args, {
    env: options.env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  let exited: number | null = null;
  const exit = new Promise<void>((resolve) => {
    proc.once('exit', (code, signal) => {
      exited = code ?? (signal ? 128 : 1);
      resolve();
    });
  });
  const pid = proc.pid;
  if (pid === undefined) throw new Error(`could not start node ${options.args.join(' ')}`);
  const child: Child = {
    pid,
    output: () => tail,
    cpuMs: () => (exited === null ? cpuMs(pid) : Promise.resolve(null)),
    async peakRssMb() {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      const kb = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
      return kb ? Math.round(Number(kb) / 1024) : null;
    },
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
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`node ${options.args.join(' ')} exited (${exited}):\n${tail}`);
    if (await Promise.resolve(options.ready(tail)).catch(() => false)) return child;
    await sleep(50);
  }
  await child.stop();
  throw new Error(`node ${options.args.join(' ')} did not get ready in time:\n${tail}`);
}

/** What every process of one service shares: its environment and the URLs of serve. */
export interface Service {
  root: string;
  env: NodeJS.ProcessEnv;
  baseUrl: string;
  operatorUrl: string;
  operatorToken: string;
}

/** High enough that no run is ever limited; the limiter still does its work on every request. */
const UNLIMITED = '100000000';

/**
 * The service's environment: rate limits lifted with a one-second window (the memory limiter keeps
 * a timestamp per admitted request for a whole window; at 60 s the buckets would hold a minute of
 * benchmark traffic, tens of MB production never has), webhooks allowed to the loopback receiver
 * with the test CA. SVC_WEBHOOK_* variables given to the benchmark reach every process.
 */
export async function service(root: string, database: Database, extra: NodeJS.ProcessEnv = {}) {
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
    SVC_WEBHOOK_CA_FILE: `${root}/test/fixtures/tls/ca.pem`,
    ...(database.kind === 'postgres' ? { DATABASE_URL: database.url } : { SVC_DATA_DIR: database.dataDir }),
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('SVC_WEBHOOK_'))),
    ...extra,
  };
  return {
    root,
    env,
    baseUrl: `http://127.0.0.1:${port}/api/v1`,
    operatorUrl: `http://127.0.0.1:${operatorPort}/operator/v1`,
    operatorToken,
  } satisfies Service;
}

/** `svc serve`, ready when its operator API answers. */
export function startServe(s: Service, env: NodeJS.ProcessEnv = {}): Promise<Child> {
  return startChild({
    args: ['bin/svc.js', 'serve'],
    cwd: s.root,
    env: { ...s.env, ...env },
    ready: async () =>
      (await fetch(`${s.operatorUrl}/healthz`, { headers: { authorization: `Bearer ${s.operatorToken}` } }))
        .ok,
  });
}

/** `svc worker` has no port: it is ready once it logs that it started (at info, for that line). */
export function startWorker(s: Service, env: NodeJS.ProcessEnv = {}): Promise<Child> {
  return startChild({
    args: ['bin/svc.js', 'worker'],
    cwd: s.root,
    env: { ...s.env, SVC_LOG_LEVEL: 'info', ...env },
    ready: (output) => output.includes('webhook delivery worker started'),
  });
}

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

/**
 * Creates the database named by `url` when it does not exist; with `fresh`, drops it first (every
 * run of the webhook benchmark starts empty).
 */
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

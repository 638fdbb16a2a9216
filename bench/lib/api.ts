// The API under test, started exactly as operators start it (`node bin/svc.js serve`) in a child
// process, and the key the benchmark uses, issued through the operator API.
import { randomBytes } from 'node:crypto';
import { type Child, freePort, startChild } from './child.js';

export type Database = { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir: string };

export interface RunningApi {
  child: Child;
  baseUrl: string;
  operatorUrl: string;
  operatorToken: string;
}

/** High enough that no benchmark run is ever limited; the limiter still does its work per request. */
const UNLIMITED = '100000000';
/**
 * The memory limiter keeps one timestamp per admitted request per bucket for a whole window. At
 * production limits a bucket holds at most 1,200 of them; with the limits lifted and the default
 * 60 s window it would hold a minute of benchmark traffic (hundreds of thousands per bucket), tens
 * of MB of RSS and compaction work production never has. A one-second window keeps the buckets near
 * production size while every request still goes through the limiter.
 */
const WINDOW_MS = '1000';

/** Kept across restarts of the API in one run, so its keys and signed cursors stay valid. */
export interface ApiSecrets {
  masterKey: string;
  operatorToken: string;
}

export function newSecrets(): ApiSecrets {
  return { masterKey: randomBytes(32).toString('hex'), operatorToken: randomBytes(24).toString('hex') };
}

/**
 * `root` is the checkout to run (another build serves as a reference); `profileDir` makes the API
 * write a V8 CPU profile there when it stops.
 */
export async function startApi(
  root: string,
  database: Database,
  secrets: ApiSecrets,
  profileDir?: string,
): Promise<RunningApi> {
  const port = await freePort();
  const operatorPort = await freePort();
  const { operatorToken } = secrets;
  const operatorUrl = `http://127.0.0.1:${operatorPort}/operator/v1`;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    SVC_HOST: '127.0.0.1',
    SVC_PORT: String(port),
    SVC_OPERATOR_PORT: String(operatorPort),
    SVC_OPERATOR_TOKEN: operatorToken,
    SVC_MASTER_KEY: secrets.masterKey,
    SVC_LOG_LEVEL: 'warn',
    SVC_RATE_PER_KEY: UNLIMITED,
    SVC_RATE_PER_ORGANIZATION: UNLIMITED,
    SVC_RATE_PER_ENDPOINT: UNLIMITED,
    SVC_RATE_WINDOW_MS: WINDOW_MS,
    ...(database.kind === 'postgres' ? { DATABASE_URL: database.url } : { SVC_DATA_DIR: database.dataDir }),
  };
  const child = await startChild({
    args: [...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), 'bin/svc.js', 'serve'],
    cwd: root,
    env,
    ready: async () =>
      (await fetch(`${operatorUrl}/healthz`, { headers: { authorization: `Bearer ${operatorToken}` } })).ok,
  });
  return { child, baseUrl: `http://127.0.0.1:${port}/api/v1`, operatorUrl, operatorToken };
}

/** The scopes of a reporting integration: every read, with prices and passenger data. */
const SCOPES = [
  'bookings:read',
  'customers:read',
  'drivers:read',
  'vehicles:read',
  'pricing:read',
  'passengers:read',
];

async function operatorPost<T>(api: RunningApi, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${api.operatorUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.operatorToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export async function createKey(api: RunningApi, organizationId: string): Promise<string> {
  const integration = await operatorPost<{ id: string }>(
    api,
    `/organizations/${organizationId}/integrations`,
    {
      name: 'Benchmark',
      kind: 'bi',
      scopes: SCOPES,
    },
  );
  const key = await operatorPost<{ key: string }>(api, `/integrations/${integration.id}/keys`, {
    name: 'benchmark',
    scopes: SCOPES,
    environment: 'live',
  });
  return key.key;
}

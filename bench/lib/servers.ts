// The servers one run loads, side by side: the API, the minimal server (bench/minimal.ts), the
// ceiling (bench/ceiling.ts) and, when asked, the API of another build (a baseline). On PGlite the
// database lives inside the process that opens it, so only one process of the API, the baseline
// or the minimal server may run at a time: starting one stops the other.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Capture } from '../ceiling.js';
import type { MinimalConfig } from '../minimal.js';
import { type ApiSecrets, type Database, startApi } from './api.js';
import { type Child, freePort, startChild } from './child.js';

export type ServerName = 'api' | 'minimal' | 'ceiling' | 'baseline';

export interface Running {
  baseUrl: string;
  child: Child;
}

interface Server {
  name: ServerName;
  /** Opens the database (PGlite: exclusive). */
  database: boolean;
  start(): Promise<Running>;
}

export interface ServerSetOptions {
  root: string;
  database: Database;
  secrets: ApiSecrets;
  /** Working directory for the files the servers read. */
  dir: string;
  captures: Record<string, Capture>;
  minimal: Omit<MinimalConfig, 'databaseUrl' | 'dataDir'>;
  profileDir?: string;
  /** A built checkout of another commit, loaded as the baseline. */
  baselineRoot?: string;
}

export interface ServerSet {
  names: ServerName[];
  /** The server, started (and on PGlite, the others using the database stopped) when needed. */
  use(name: ServerName): Promise<Running>;
  /** Called with a process of the API before it stops, for its peak memory. */
  onApiStop(fn: (child: Child) => Promise<void>): void;
  stop(): Promise<void>;
}

const tsx = (root: string, script: string, profileDir: string | undefined, ...args: string[]) => [
  // One directory per script: tsx's loader runs in a thread of its own, which writes a profile too.
  ...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', join(profileDir, script.replace(/\W+/g, '-'))] : []),
  '--import',
  'tsx',
  join(root, script),
  ...args,
];

export async function serverSet(options: ServerSetOptions, api: Running): Promise<ServerSet> {
  const { root, database, dir } = options;
  const dbTarget =
    database.kind === 'postgres' ? { databaseUrl: database.url } : { dataDir: database.dataDir };
  await writeFile(join(dir, 'minimal.json'), JSON.stringify({ ...options.minimal, ...dbTarget }));
  // The ceiling answers the same paths below the same prefix, so the requests are identical.
  const prefixed = Object.fromEntries(Object.entries(options.captures).map(([p, c]) => [`/api/v1${p}`, c]));
  await writeFile(join(dir, 'captures.json'), JSON.stringify(prefixed));

  // With --profile, the minimal server writes its CPU profile beside the API's, to compare them.
  const script = async (
    file: string,
    config: string,
    probe: string,
    profileDir?: string,
  ): Promise<Running> => {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}/api/v1`;
    const child = await startChild({
      args: tsx(root, file, profileDir, join(dir, config), String(port)),
      env: { PATH: process.env.PATH, NODE_ENV: 'production' },
      cwd: root,
      ready: async () => (await fetch(`${baseUrl}${probe}`)).status === 200,
    });
    return { baseUrl, child };
  };
  const servers: Server[] = [
    {
      name: 'api',
      database: true,
      start: async () => {
        const a = await startApi(root, database, options.secrets, options.profileDir);
        return { baseUrl: a.baseUrl, child: a.child };
      },
    },
    {
      name: 'minimal',
      database: true,
      start: () => script('bench/minimal.ts', 'minimal.json', '/integrations/me', options.profileDir),
    },
    {
      name: 'ceiling',
      database: false,
      start: () => script('bench/ceiling.ts', 'captures.json', '/integrations/me'),
    },
  ];
  const { baselineRoot } = options;
  if (baselineRoot) {
    servers.push({
      name: 'baseline',
      database: true,
      start: async () => {
        const a = await startApi(baselineRoot, database, options.secrets);
        return { baseUrl: a.baseUrl, child: a.child };
      },
    });
  }

  const running = new Map<ServerName, Running>([['api', api]]);
  const apiStops: ((child: Child) => Promise<void>)[] = [];
  const stop = async (name: ServerName) => {
    const r = running.get(name);
    if (!r) return;
    if (name === 'api') for (const fn of apiStops) await fn(r.child);
    await r.child.stop();
    running.delete(name);
  };

  return {
    names: servers.map((s) => s.name),
    async use(name) {
      const server = servers.find((s) => s.name === name) as Server;
      if (database.kind === 'pglite' && server.database) {
        for (const other of servers) if (other.database && other.name !== name) await stop(other.name);
      }
      let r = running.get(name);
      if (!r) {
        r = await server.start();
        running.set(name, r);
      }
      return r;
    },
    onApiStop(fn) {
      apiStops.push(fn);
    },
    async stop() {
      for (const name of [...running.keys()]) await stop(name);
    },
  };
}

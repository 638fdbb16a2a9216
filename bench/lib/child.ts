// Child processes of the benchmark (the API, the ceiling server): started, awaited until they answer,
// measured through /proc, stopped by their own pid.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';

export interface Child {
  pid: number;
  /** The last lines the process wrote, for error messages. */
  output(): string;
  /** Peak resident set size (VmHWM) in MB, or null where /proc is not available. */
  peakRssMb(): Promise<number | null>;
  /** Current resident set size (VmRSS) in MB. */
  rssMb(): Promise<number | null>;
  /** CPU time used so far (user + system) in µs, or null where /proc is not available. */
  cpuUs(): Promise<number | null>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function procStatusMb(pid: number, field: 'VmHWM' | 'VmRSS'): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** utime + stime of /proc/<pid>/stat, in clock ticks of 10 ms. */
async function procCpuUs(pid: number): Promise<number | null> {
  try {
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Node's arguments that write a CPU profile of the child (each of its threads) into `dir`, if given. */
export const profileArgs = (dir: string | undefined): string[] =>
  dir ? ['--cpu-prof', '--cpu-prof-dir', dir] : [];

export interface StartOptions {
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  /** Resolves true once the process answers. */
  ready: () => Promise<boolean>;
  timeoutMs?: number;
}

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
    peakRssMb: () => procStatusMb(pid, 'VmHWM'),
    rssMb: () => procStatusMb(pid, 'VmRSS'),
    cpuUs: () => procCpuUs(pid),
    async stop() {
      if (exited !== null) return;
      proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(killer);
    },
  };

  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`node ${options.args.join(' ')} exited (${exited}):\n${tail}`);
    if (await options.ready().catch(() => false)) return child;
    await sleep(100);
  }
  await child.stop();
  throw new Error(`node ${options.args.join(' ')} did not answer in time:\n${tail}`);
}

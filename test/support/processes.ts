// Real processes for tests of what a person runs: `svc` from source (as `npm start` runs it from
// dist), the examples, shell commands. Every process started here is killed after the file's last
// test, so a failed assertion never leaves one running (where several files share a process,
// when scripts/test-group.mjs says the file ended).
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { after } from 'node:test';
import { pathToFileURL } from 'node:url';

export { freePort } from './ports.js';

// The CLI from source under tsx (the single-file command), or the bundle of it scripts/test.mjs
// made for the suite (SVC_TEST_CLI), which node runs without a loader.
const CLI = process.env.SVC_TEST_CLI
  ? pathToFileURL(process.env.SVC_TEST_CLI)
  : new URL('../../src/cli.ts', import.meta.url);
// As bin/svc.js runs it: a failure prints its message and sets the exit code, and the process
// ends only when nothing holds it up any more (no crash on an unhandled rejection).
const ENTRY = `import(${JSON.stringify(CLI.href)}).then((m) => m.main(process.argv.slice(1))).then((code) => { process.exitCode = code; }, (error) => { console.error(error instanceof Error ? error.message : error); process.exitCode = 1; })`;

/** The node options scripts/test.mjs gives the suite, passed on to the `svc` it starts. */
const INHERITED = process.execArgv.filter((a) => a === '--liftoff-only' || a === '--enable-source-maps');

/** The command line of `svc …` from source: node, with tsx only when the sources are TypeScript. */
function svcCommand(args: string[]): [string, string[]] {
  const loader = CLI.pathname.endsWith('.ts') ? ['--import', 'tsx'] : [];
  return [process.execPath, [...INHERITED, ...loader, '-e', ENTRY, '--', ...args]];
}

const children: ChildProcess[] = [];
const groups = new WeakSet<ChildProcess>();

/** Kills what is still running; it ends the file (its last `after`, or scripts/test-group.mjs's FILE_END). */
function killChildren() {
  for (const child of children.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    // A process group of its own (detached) is killed whole: npm and the node it started.
    if (child.pid !== undefined && groups.has(child)) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    } else {
      child.kill('SIGKILL');
    }
  }
}
after(killChildren);
process.on('svc:test-file-end', killChildren);

export interface Started {
  child: ChildProcess;
  /** Everything printed so far, standard output and error interleaved. */
  output(): string;
  /** Resolves with everything printed once `pattern` appears; rejects on exit or time-out. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  exited(): Promise<number | null>;
  /** Sends `signal` (to the whole group when it has one) and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function start(
  command: string,
  args: string[],
  options: SpawnOptions & { group?: boolean } = {},
): Started {
  const child = spawn(command, args, {
    ...options,
    detached: options.group ?? false,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  if (options.group) groups.add(child);
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!pattern.test(out)) return;
          done();
          resolve(out);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${pattern}:\n${out}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        void exit.then((code) => {
          if (pattern.test(out)) return;
          done();
          reject(new Error(`exited with ${code} before ${pattern}:\n${out}`));
        });
        check();
      });
    },
    exited: () => exit,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        if (options.group && child.pid !== undefined) process.kill(-child.pid, signal);
        else child.kill(signal);
      }
      return exit;
    },
  };
}

/** `svc …` from source, quiet unless told otherwise. */
export function svc(args: string[], env: Record<string, string>): Started {
  const [command, argv] = svcCommand(args);
  return start(command, argv, { env: { ...process.env, SVC_LOG_LEVEL: 'warn', ...env } });
}

/** Everything a process printed once it has exited: its exit can come before the last of its output is read. */
export async function outputAfterExit(p: Started): Promise<string> {
  await p.exited();
  const open = [p.child.stdout, p.child.stderr].filter((s) => s !== null && !s.readableEnded);
  await Promise.all(open.map((s) => once(s as Readable, 'end')));
  return p.output();
}

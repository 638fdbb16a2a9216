// The embedded delivery worker of `svc serve`. On a server database it runs on a thread of its own,
// with its own event loop and connections: signing, TLS and the engine's rounds then never delay
// the answers of the APIs, and the process uses a second core when it has one. At 200 events/s
// on 2 cores, with the worker on the APIs' event loop, the feed's PUT waited behind its work
// (p99 100-200 ms, against about 35 ms with the deliveries in another process).
//
// The thread is this same module (the worker_threads entry is import.meta.url), so the service
// ships no second entry point. It answers for its metrics when /metrics is scraped, and stops as
// the process's shutdown says. A thread that ends on its own ends the process's wait for a
// signal: `svc serve` then stops like on SIGTERM and exits with 1, for its supervisor to restart it.
//
// The embedded database (PGlite) lives in the process's main thread and cannot be shared with
// another: there the worker stays on the main thread, as it does when the service runs from its
// TypeScript sources (a thread would need a loader).
import { isMainThread, parentPort, Worker as Thread, workerData } from 'node:worker_threads';
import { Registry } from 'prom-client';
import type { Deps } from './apps/deps.js';
import type { Config } from './config.js';
import type { Worker } from './delivery/worker.js';
import { openDatabase, processLogger, secretBoxOf, startDeliveryWorker } from './runtime.js';
import { createTargetResolver } from './security/resolver.js';

const ROLE = 'svc-delivery-thread';
/** Connections of the thread's own pool besides the engine's: the publisher, the metrics' count. */
const THREAD_POOL = 2;
/** How long after the grace period a thread that has not stopped is ended. */
const STOP_MARGIN_MS = 2000;
/** How long /metrics waits for the thread's part. */
const METRICS_WAIT_MS = 2000;

interface Start {
  role: typeof ROLE;
  config: Config;
  isTTY: boolean | undefined;
}

type ToThread = { type: 'stop'; graceMs: number } | { type: 'metrics'; id: number } | { type: 'wake' };
type FromThread =
  | { type: 'ready' }
  | { type: 'stopped' }
  | { type: 'metrics'; id: number; text: string | null };

export interface EmbeddedWorker extends Worker {
  /** Resolves with the reason if the worker ends without being stopped (a thread that died). */
  readonly ended: Promise<Error>;
}

/** The embedded worker of `svc serve`: on a thread of its own where it can be, else on this one. */
export async function startEmbeddedWorker(deps: Deps): Promise<EmbeddedWorker> {
  if (!deps.config.databaseUrl || import.meta.url.endsWith('.ts')) {
    return { ...(await startDeliveryWorker(deps)), ended: new Promise(() => {}) };
  }
  return startDeliveryThread(deps);
}

async function startDeliveryThread(deps: Deps): Promise<EmbeddedWorker> {
  const start: Start = { role: ROLE, config: deps.config, isTTY: process.stdout.isTTY };
  const thread = new Thread(new URL(import.meta.url), { workerData: start });
  const waiting = new Map<number, (text: string | null) => void>();
  let nextId = 0;
  let stopped: (() => void) | null = null;
  let stopping = false;
  let exited = false;

  const ended = new Promise<Error>((resolve) => {
    thread.once('error', (error) => resolve(error));
    thread.once('exit', (code) => {
      exited = true;
      for (const answer of waiting.values()) answer(null);
      stopped?.();
      resolve(new Error(`the delivery thread exited with ${code}`));
    });
  });
  await new Promise<void>((resolve, reject) => {
    thread.on('message', (message: FromThread) => {
      if (message.type === 'ready') resolve();
      else if (message.type === 'stopped') stopped?.();
      else if (message.type === 'metrics') waiting.get(message.id)?.(message.text);
    });
    void ended.then(reject);
  });

  const post = (message: ToThread) => thread.postMessage(message);

  const part = async (): Promise<string> => {
    if (stopping) return '';
    const id = nextId++;
    const text = await new Promise<string | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), METRICS_WAIT_MS);
      waiting.set(id, (value) => {
        clearTimeout(timer);
        resolve(value);
      });
      post({ type: 'metrics', id });
    }).finally(() => waiting.delete(id));
    if (text === null) throw new Error('the delivery thread did not give its metrics');
    return text;
  };
  deps.metrics.elsewhere.add(part);

  return {
    ended: ended.then((error) => {
      if (!stopping) deps.logger.fatal({ err: error }, 'the delivery thread ended: svc serve stops');
      return error;
    }),
    wake: () => post({ type: 'wake' }),
    async stop(graceMs) {
      stopping = true;
      deps.metrics.elsewhere.delete(part);
      if (exited) return;
      // The thread gives up on attempts past the grace period itself; should it not answer (stuck
      // in a loop), it is ended a little later.
      await new Promise<void>((resolve) => {
        stopped = resolve;
        const late = setTimeout(resolve, graceMs + STOP_MARGIN_MS);
        late.unref();
        post({ type: 'stop', graceMs });
      });
      await thread.terminate();
    },
  };
}

/** The thread's side: its own pool, logger, metrics and resolver, and the worker on them. */
async function runThread(start: Start, port: NonNullable<typeof parentPort>): Promise<void> {
  const config: Config = {
    ...start.config,
    // A Buffer crosses to a thread as a Uint8Array.
    masterKey: start.config.masterKey ? Buffer.from(start.config.masterKey) : null,
    dbPoolSize: THREAD_POOL,
  };
  const logger = processLogger(config, start.isTTY).child({ thread: 'delivery' });
  const db = await openDatabase(config, logger);
  const registry = new Registry();
  const worker = await startDeliveryWorker({
    config,
    db,
    logger,
    secrets: await secretBoxOf(config),
    resolve: createTargetResolver({ timeoutMs: config.webhooks.dnsTimeoutMs }),
    metrics: { registry },
  });
  port.on('message', (message: ToThread) => {
    if (message.type === 'wake') worker.wake();
    else if (message.type === 'metrics') {
      registry.metrics().then(
        (text) => port.postMessage({ type: 'metrics', id: message.id, text } satisfies FromThread),
        (error: unknown) => {
          logger.warn({ err: error }, 'metrics could not be collected');
          port.postMessage({ type: 'metrics', id: message.id, text: null } satisfies FromThread);
        },
      );
    } else if (message.type === 'stop') {
      void worker
        .stop(message.graceMs)
        .then(() => db.close())
        .finally(() => {
          port.postMessage({ type: 'stopped' } satisfies FromThread);
          port.close();
        });
    }
  });
  logger.info('the delivery worker runs on a thread of its own');
  port.postMessage({ type: 'ready' } satisfies FromThread);
}

const start = workerData as Start | null;
if (!isMainThread && parentPort && start?.role === ROLE) {
  // A failure to start is left unhandled: the thread ends with it, and the main thread's side hears
  // it as the thread's 'error' event.
  void runThread(start, parentPort);
}

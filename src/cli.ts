// svc: serve | worker | migrate | demo | admin
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { adminCommand } from './admin.js';
import type { Deps } from './apps/deps.js';
import { buildOperatorApp } from './apps/operator.js';
import { buildPublicApp, PUBLIC_PREFIX } from './apps/public.js';
import { type Config, ConfigError, loadConfig, type Needs } from './config.js';
import { migrate } from './db/migrate.js';
import type { Worker } from './delivery/worker.js';
import { startEmbeddedWorker } from './delivery-thread.js';
import { prepareDemo, printDemoBanner, readDemoKey, writeDemoEnv } from './demo/demo.js';
import { MAX_RATE, type Simulation, startSimulation } from './demo/simulate.js';
import { type HealthListener, startHealthListener } from './health.js';
import type { App } from './http/kit.js';
import { httpStoppable, StartInterrupted, Startup, type Stoppable, shutdown } from './lifecycle.js';
import { startMaintenance } from './maintenance.js';
import { PORTAL_PATH } from './portal/routes.js';
import { issueSession, MAX_SESSION_MINUTES } from './portal/sessions.js';
import {
  createDeps,
  openDatabase,
  processLogger,
  startDeliveryWorker,
  startMetricsListener,
} from './runtime.js';
import { catchStopSignals, catchStopSignalsFor, type StopSignals } from './signals.js';

const USAGE = `Usage: svc <command>

  serve [--demo] [--host ADDRESS]
                   public API (SVC_HOST:SVC_PORT, 0.0.0.0:8080), operator API (SVC_OPERATOR_PORT,
                   8081) and a webhook delivery worker
                   --demo: seed the demo organization when missing and print its API key (of
                   SVC_ENVIRONMENT; the same across restarts while data/demo.env holds it);
                   listens on 127.0.0.1 unless SVC_HOST or --host say otherwise; on the
                   embedded database it also lets webhooks reach the example receiver on this
                   machine (examples/tls). Embedded database only, unless
                   --allow-server-database (a staging database)
        [--simulate [--rate N] [--seed S]]
                   with --demo: move the demo's bookings through their life cycle, N changes
                   (events) per second (default 1); the same seed makes the same changes
  worker           webhook delivery workers only (PostgreSQL), for scale-out beside serve;
                   GET /metrics on SVC_OPERATOR_HOST:SVC_METRICS_PORT when that is set
  migrate          apply database migrations and exit
  demo [--simulate [--rate N] [--seed S]]
                   seed the demo organization when missing and exit; with --simulate, make
                   simulated traffic until stopped (PostgreSQL, beside svc serve; with
                   --allow-server-database, as the demo refuses a server database otherwise)
  admin ...        client of the operator API (svc admin help)
`;

function config(env: Record<string, string | undefined> = process.env, needs: Needs = {}): Config {
  try {
    return loadConfig(env, needs);
  } catch (error) {
    if (error instanceof ConfigError) {
      throw new Error(`Invalid configuration:\n${error.message.replace(/^/gm, '  ')}`);
    }
    throw error;
  }
}

const DEMO_OPTIONS = { 'allow-server-database': { type: 'boolean', default: false } } as const;

/**
 * The demo reuses any organization with code 100, issues it a live key with every scope and can
 * make organization 200 the executor of its bookings: harmless on the embedded database, a
 * breach on a production one.
 */
function refuseDemoOnServer(cfg: Config, allowed: boolean): void {
  if (cfg.databaseUrl && !allowed) {
    throw new Error(
      'the demo writes a demo organization (code 100) and a live key with every scope; it runs on the embedded database only. DATABASE_URL is set: unset it, or pass --allow-server-database for a staging database',
    );
  }
}

/** The CA of the example receiver's certificate (examples/tls), beside the compiled code. */
export const EXAMPLES_CA_FILE = fileURLToPath(new URL('../examples/tls/ca.pem', import.meta.url));

/**
 * `serve --demo` on the embedded database is a laptop: there webhooks may reach the example
 * receiver (loopback, any port, its certificate signed by examples/tls/ca.pem) unless the
 * variables say otherwise. On a server database (DATABASE_URL) nothing is widened.
 */
function laptopDemoConfig(cfg: Config): Config {
  if (cfg.databaseUrl) return cfg;
  const defaults: Record<string, string> = { SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };
  if (existsSync(EXAMPLES_CA_FILE)) defaults.SVC_WEBHOOK_CA_FILE = EXAMPLES_CA_FILE;
  return config({ ...defaults, ...process.env });
}

const SIMULATION_OPTIONS = {
  simulate: { type: 'boolean', default: false },
  rate: { type: 'string' },
  seed: { type: 'string' },
} as const;

function simulationOf(values: {
  simulate?: boolean;
  rate?: string;
  seed?: string;
}): { rate: number; seed: number } | null {
  if (!values.simulate) {
    if (values.rate !== undefined || values.seed !== undefined)
      throw new Error('--rate and --seed go with --simulate');
    return null;
  }
  const rate = values.rate === undefined ? 1 : Number(values.rate);
  if (!Number.isFinite(rate) || rate <= 0 || rate > MAX_RATE) {
    throw new Error(`--rate: changes per second, more than 0 and at most ${MAX_RATE}`);
  }
  const seed = values.seed === undefined ? Date.now() % 1_000_000 : Number(values.seed);
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error('--seed: a whole number, 0 or more');
  return { rate, seed };
}

async function serve(args: string[], startup: Startup, signals: StopSignals): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      demo: { type: 'boolean', default: false },
      host: { type: 'string' },
      ...SIMULATION_OPTIONS,
      ...DEMO_OPTIONS,
    },
  });
  const simulation = simulationOf(values);
  if (simulation && !values.demo) throw new Error('--simulate goes with --demo (it moves the demo bookings)');
  let cfg = config(process.env, { operatorToken: !values.demo, masterKey: true });
  if (values.demo) {
    refuseDemoOnServer(cfg, values['allow-server-database']);
    cfg = laptopDemoConfig(cfg);
  }
  // The demo makes a token of its own when none is given; otherwise the configuration required one.
  const operatorToken = cfg.operatorToken ?? randomBytes(24).toString('base64url');
  // The demo holds a key with every scope: it stays on this machine unless asked otherwise.
  const host = values.host ?? (values.demo && !process.env.SVC_HOST ? '127.0.0.1' : cfg.host);
  startup.begin(processLogger(cfg));
  // Each part stops with the start-up when a listener cannot be had or a signal arrives: nothing
  // (the database's timers, the limiter's connection) keeps the process up without its listeners.
  const db = await startup.step('database', openDatabase(cfg), (db) => db.close());
  const deps = await startup.step('migrations', createDeps(cfg, db, startup.logger), (deps) =>
    deps.limiter.close(),
  );
  if (cfg.databaseUrl && !cfg.redisUrl) {
    deps.logger.warn(
      'REDIS_URL is not set: rate limits are per process, so each svc serve grants the full limits; set REDIS_URL to share them',
    );
  }
  const demo = values.demo
    ? await startup.step('demo', prepareDemo(deps, await readDemoKey(cfg.dataDir)))
    : null;
  const api = await startup.step('public API', buildPublicApp(deps), (app) => app.close());
  const operator = await startup.step('operator API', buildOperatorApp(deps, operatorToken), (app) =>
    app.close(),
  );
  await startup.step('public listener', listen(api, 'SVC_PORT', host, cfg.port));
  await startup.step(
    'operator listener',
    listen(operator, 'SVC_OPERATOR_PORT', cfg.operatorHost, cfg.operatorPort),
  );
  const health = await startup.step('health listener', startProbes(deps), (health) => health?.close());
  const maintenance = startMaintenance(deps);
  startup.started('maintenance', () => maintenance.stop());
  // Off: this process serves the APIs only; `svc worker` processes deliver.
  const worker = cfg.webhooks.embeddedWorker ? await startEmbeddedWorker(deps) : null;
  if (worker) startup.started('webhook worker', () => worker.stop(cfg.shutdownGraceMs));
  startup.checkpoint();

  let simulator: Simulation | null = null;
  if (demo) {
    const address = api.server.address();
    const port = typeof address === 'object' && address ? address.port : cfg.port;
    const baseUrl = `http://localhost:${port}${PUBLIC_PREFIX}`;
    // A first portal link, issued here as the operator API would (the demo may have no token yet).
    const session = await issueSession(
      db,
      demo.integrationId,
      new Date(Date.now() + MAX_SESSION_MINUTES * 60_000),
    );
    printDemoBanner({
      baseUrl,
      portalUrl: session ? `${new URL(baseUrl).origin}${PORTAL_PATH}#token=${session.token}` : null,
      host,
      operatorUrl: `http://${cfg.operatorHost}:${cfg.operatorPort}`,
      operatorToken: cfg.operatorToken ? null : operatorToken,
      environment: cfg.environment,
      database: cfg.databaseUrl ? 'PostgreSQL' : 'embedded',
      envFile: await writeDemoEnv(cfg.dataDir, baseUrl, demo.key),
      localWebhooks: cfg.webhooks.allowPrivateTargets && cfg.webhooks.caFile !== null,
      simulation,
      ...demo,
    });
    if (simulation) {
      simulator = await startSimulation({
        db,
        organizationId: demo.organizationId,
        logger: deps.logger,
        ...simulation,
      });
    }
  }
  startup.finish();

  // A delivery thread that ended on its own stops the process as a signal would, and fails it.
  const failed = await Promise.race([
    signals.next.then(() => false),
    ...(worker ? [worker.ended.then(() => true)] : []),
  ]);
  await simulator?.stop();
  maintenance.stop();
  // Probes fail from the first moment of the shutdown: a balancer stops sending at once.
  await health?.close();
  await shutdown(
    [
      httpStoppable('public API', api),
      httpStoppable('operator API', operator),
      ...(worker ? [workerStoppable(worker, cfg)] : []),
    ],
    cfg.shutdownGraceMs,
    deps.logger,
  );
  await deps.limiter.close();
  await db.close();
  if (failed) return 1;
  deps.logger.info('stopped cleanly');
  return 0;
}

/** The unauthenticated probes' listener when SVC_HEALTH_PORT is set (src/health.ts). */
async function startProbes(deps: Deps): Promise<HealthListener | null> {
  const { healthHost, healthPort } = deps.config;
  if (healthPort === null) return null;
  return startHealthListener(
    { logger: deps.logger, readinessChecks: deps.readinessChecks ?? [] },
    healthHost,
    healthPort,
  ).catch((error: unknown) => {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`SVC_HEALTH_PORT: cannot listen on ${healthHost}:${healthPort} (${code ?? error})`);
  });
}

/** Listens, or says which setting names a port that cannot be had (taken, or not allowed). */
async function listen(app: App, setting: string, host: string, port: number): Promise<void> {
  try {
    await app.listen({ host, port });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new Error(
        `${setting}: port ${port} on ${host} is already in use by another process; stop it or choose another port`,
      );
    }
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new Error(`${setting}: cannot listen on ${host}:${port} (${code})`);
    }
    throw error;
  }
}

/**
 * The delivery worker in the shutdown sequence: it stops claiming, gives attempts in flight the
 * same grace period and hands back the rest itself, so there is nothing left to abort.
 */
function workerStoppable(worker: Worker, cfg: Config): Stoppable {
  return { name: 'webhook worker', stop: () => worker.stop(cfg.shutdownGraceMs), abort: () => {} };
}

/**
 * Runs a long-running command. A stop signal during its start-up (or a failure to start) stops
 * what had started, newest first; the signal then ends the process with 0, as it would later.
 */
async function untilStopped(
  signals: StopSignals,
  run: (startup: Startup, signals: StopSignals) => Promise<number>,
): Promise<number> {
  const startup = new Startup(signals);
  try {
    return await run(startup, signals);
  } catch (error) {
    await startup.unwind();
    if (!(error instanceof StartInterrupted)) throw error;
    startup.logger?.info({ signal: error.signal }, 'stopped during start-up');
    return 0;
  }
}

/** Delivery workers without the APIs; the embedded database has room for one process only. */
async function worker(startup: Startup, signals: StopSignals): Promise<number> {
  const cfg = config(process.env, { masterKey: true });
  if (!cfg.databaseUrl) {
    throw new Error(
      'svc worker needs DATABASE_URL (PostgreSQL): on the embedded database, svc serve runs the only worker',
    );
  }
  startup.begin(processLogger(cfg));
  const db = await startup.step('database', openDatabase(cfg), (db) => db.close());
  const deps = await startup.step('migrations', createDeps(cfg, db, startup.logger), (deps) =>
    deps.limiter.close(),
  );
  // First, so a busy port stops the start (and the process) before any delivery is claimed.
  const metrics = await startup.step(
    'metrics listener',
    startMetricsListener(deps).catch((error: unknown) => {
      throw new Error(`SVC_METRICS_PORT: cannot listen (${(error as Error).message})`);
    }),
    (metrics) => metrics?.close(),
  );
  const health = await startup.step('health listener', startProbes(deps), (health) => health?.close());
  // The platform's writes reach `svc serve`, which publishes them: this process publishes only what
  // a writer left behind.
  const delivery = await startDeliveryWorker(deps);
  startup.started('webhook worker', () => delivery.stop(cfg.shutdownGraceMs));
  startup.finish();
  deps.logger.info('webhook delivery worker started');
  await signals.next;
  await health?.close();
  await shutdown([workerStoppable(delivery, cfg)], cfg.shutdownGraceMs, deps.logger);
  await metrics?.close();
  await deps.limiter.close();
  await db.close();
  return 0;
}

/** Seeds the demo and prints a key; with --simulate, makes traffic until stopped (beside svc serve). */
async function demoCommand(args: string[], signals: StopSignals): Promise<number> {
  const { values } = parseArgs({ args, options: { ...SIMULATION_OPTIONS, ...DEMO_OPTIONS } });
  const simulation = simulationOf(values);
  const cfg = config(process.env, { masterKey: true });
  refuseDemoOnServer(cfg, values['allow-server-database']);
  if (simulation && !cfg.databaseUrl) {
    throw new Error(
      'svc demo --simulate needs DATABASE_URL (PostgreSQL): on the embedded database use svc serve --demo --simulate (npm start -- --simulate)',
    );
  }
  const db = await openDatabase(cfg);
  const deps = await createDeps(cfg, db).catch(async (error: unknown) => {
    await db.close().catch(() => {});
    throw error;
  });
  const demo = await prepareDemo(deps);
  console.log(JSON.stringify({ organization_id: demo.organizationId, key: demo.key }));
  if (simulation) {
    const simulator = await startSimulation({
      db,
      organizationId: demo.organizationId,
      logger: deps.logger,
      ...simulation,
    });
    await signals.next;
    await simulator.stop();
  }
  await deps.limiter.close();
  await db.close();
  return 0;
}

/**
 * `signals`: caught by bin/svc.js before the program loaded; caught here otherwise (tests), for
 * the commands that run until stopped.
 */
export async function main(
  argv: string[],
  signals: StopSignals | null = catchStopSignalsFor(argv[0]),
): Promise<number> {
  const [command, ...rest] = argv;
  const stop = () => signals ?? catchStopSignals();
  switch (command) {
    case 'serve':
      return untilStopped(stop(), (startup, caught) => serve(rest, startup, caught));
    case 'worker':
      return untilStopped(stop(), worker);
    case 'migrate': {
      const db = await openDatabase(config());
      const applied = await migrate(db);
      await db.close();
      console.log(JSON.stringify({ applied }));
      return 0;
    }
    case 'demo':
      return demoCommand(rest, stop());
    case 'admin':
      return adminCommand(rest, config());
    default:
      process.stdout.write(USAGE);
      return command === undefined || command === 'help' || command === '--help' ? 0 : 2;
  }
}

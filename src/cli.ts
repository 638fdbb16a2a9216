// svc: serve | worker | migrate | demo | admin
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { adminCommand } from './admin.js';
import { buildOperatorApp } from './apps/operator.js';
import { buildPublicApp, PUBLIC_PREFIX } from './apps/public.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { migrate } from './db/migrate.js';
import type { Worker } from './delivery/worker.js';
import { prepareDemo, printDemoBanner } from './demo/demo.js';
import { httpStoppable, type Stoppable, shutdown } from './lifecycle.js';
import { startMaintenance } from './maintenance.js';
import { createDeps, openDatabase, startDeliveryWorker } from './runtime.js';

const USAGE = `Usage: svc <command>

  serve [--demo]   public API (SVC_PORT, 8080), operator API (SVC_OPERATOR_PORT, 8081) and a
                   webhook delivery worker
                   --demo: seed the demo organization when missing and print a fresh API key
                   (embedded database only, unless --allow-server-database)
  worker           webhook delivery workers only (PostgreSQL), for scale-out beside serve
  migrate          apply database migrations and exit
  demo             seed the demo organization when missing and exit (same rule)
  admin ...        client of the operator API (svc admin help)
`;

function config(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) throw new Error(`Invalid configuration: ${error.message}`);
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

async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { demo: { type: 'boolean', default: false }, ...DEMO_OPTIONS },
  });
  const cfg = config();
  if (values.demo) refuseDemoOnServer(cfg, values['allow-server-database']);
  let operatorToken = cfg.operatorToken;
  if (!operatorToken) {
    if (!values.demo)
      throw new Error('SVC_OPERATOR_TOKEN: required (at least 32 characters) to start the operator API');
    operatorToken = randomBytes(24).toString('base64url');
  }
  const db = await openDatabase(cfg);
  const deps = await createDeps(cfg, db);
  const demo = values.demo ? await prepareDemo(deps) : null;
  const api = await buildPublicApp(deps);
  const operator = await buildOperatorApp(deps, operatorToken);
  await api.listen({ host: cfg.host, port: cfg.port });
  await operator.listen({ host: cfg.operatorHost, port: cfg.operatorPort });
  const maintenance = startMaintenance(deps);
  const worker = await startDeliveryWorker(deps);

  if (demo) {
    const address = api.server.address();
    const port = typeof address === 'object' && address ? address.port : cfg.port;
    printDemoBanner({
      baseUrl: `http://localhost:${port}${PUBLIC_PREFIX}`,
      operatorUrl: `http://${cfg.operatorHost}:${cfg.operatorPort}`,
      operatorToken: cfg.operatorToken ? null : operatorToken,
      ...demo,
    });
  }

  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  maintenance.stop();
  await shutdown(
    [httpStoppable('public API', api), httpStoppable('operator API', operator), workerStoppable(worker, cfg)],
    cfg.shutdownGraceMs,
    deps.logger,
  );
  await deps.limiter.close();
  await db.close();
  return 0;
}

/**
 * The delivery worker in the shutdown sequence: it stops claiming, gives attempts in flight the
 * same grace period and hands back the rest itself, so there is nothing left to abort.
 */
function workerStoppable(worker: Worker, cfg: Config): Stoppable {
  return { name: 'webhook worker', stop: () => worker.stop(cfg.shutdownGraceMs), abort: () => {} };
}

const untilSignal = () =>
  new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });

/** Delivery workers without the APIs; the embedded database has room for one process only. */
async function worker(): Promise<number> {
  const cfg = config();
  if (!cfg.databaseUrl) {
    throw new Error(
      'svc worker needs DATABASE_URL (PostgreSQL): on the embedded database, svc serve runs the only worker',
    );
  }
  const db = await openDatabase(cfg);
  const deps = await createDeps(cfg, db);
  const delivery = await startDeliveryWorker(deps);
  deps.logger.info('webhook delivery worker started');
  await untilSignal();
  await shutdown([workerStoppable(delivery, cfg)], cfg.shutdownGraceMs, deps.logger);
  await deps.limiter.close();
  await db.close();
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'worker':
      return worker();
    case 'migrate': {
      const db = await openDatabase(config());
      const applied = await migrate(db);
      await db.close();
      console.log(JSON.stringify({ applied }));
      return 0;
    }
    case 'demo': {
      const { values } = parseArgs({ args: rest, options: DEMO_OPTIONS });
      const cfg = config();
      refuseDemoOnServer(cfg, values['allow-server-database']);
      const db = await openDatabase(cfg);
      const deps = await createDeps(cfg, db);
      const demo = await prepareDemo(deps);
      await deps.limiter.close();
      await db.close();
      console.log(JSON.stringify({ organization_id: demo.organizationId, key: demo.key }));
      return 0;
    }
    case 'admin':
      return adminCommand(rest, config());
    default:
      process.stdout.write(USAGE);
      return command === undefined || command === 'help' || command === '--help' ? 0 : 2;
  }
}

// A small public-style app (kit + guard + Idempotency-Key) with probe routes, built on the
// database of a test service. Probes count their executions, can be held at a gate, and can fail
// on demand, so the tests see exactly how often a handler ran.
import { after } from 'node:test';
import { Type } from 'typebox';
import type { Db } from '../../src/db/db.js';
import { createIdentityCache } from '../../src/http/auth.js';
import { AppError } from '../../src/http/errors.js';
import { installGuard } from '../../src/http/guard.js';
import { installIdempotency } from '../../src/http/idempotency.js';
import { type App, createHttpApp } from '../../src/http/kit.js';
import { createMemoryStore } from '../../src/ratelimit/memory.js';
import { type Response, startService, type TestService } from '../support/context.js';
import { createTenant, type Tenant } from '../support/tenants.js';

export interface Probe {
  /** Executions of each probe handler, by route name. */
  runs: Map<string, number>;
  /** While set, handlers wait for it before answering. */
  gate: Promise<void> | null;
  /** The next execution throws an unforeseen error (a 500). */
  failNext: boolean;
}

export function newProbe(): Probe {
  return { runs: new Map(), gate: null, failNext: false };
}

/** A gate the test opens by hand. */
export function gate(probe: Probe): () => void {
  let open = () => {};
  probe.gate = new Promise<void>((resolve) => {
    open = () => {
      probe.gate = null;
      resolve();
    };
  });
  return open;
}

export const SECRET = 'whsec_TOPSECRETvalue0123456789';

const Ran = Type.Object({ name: Type.String(), run: Type.Integer() });
const Created = Type.Object({
  id: Type.String(),
  secret: Type.Union([Type.String(), Type.Null()]),
  secret_shown_once: Type.Boolean(),
});

async function execute(probe: Probe, name: string): Promise<number> {
  const run = (probe.runs.get(name) ?? 0) + 1;
  probe.runs.set(name, run);
  if (probe.gate) await probe.gate;
  if (probe.failNext) {
    probe.failNext = false;
    throw new Error('probe failure');
  }
  return run;
}

export async function buildProbeApp(svc: TestService, probe: Probe, db: Db = svc.db): Promise<App> {
  const app = createHttpApp({ name: 'public', logger: svc.deps.logger });
  installGuard(app, {
    identities: createIdentityCache(db, svc.config.authCacheTtlMs),
    limiter: createMemoryStore(),
    limits: svc.config.rateLimits,
    environment: svc.config.environment,
  });
  installIdempotency(app, {
    db,
    claimTimeoutMs: svc.config.idempotencyClaimTimeoutMs,
    retentionHours: svc.config.idempotencyRetentionHours,
  });

  app.post(
    '/probe/:name',
    {
      schema: { body: Type.Object({ reject: Type.Optional(Type.Boolean()) }), response: { 201: Ran } },
      config: { idempotency: {} },
    },
    async (request, reply) => {
      const { name } = request.params as { name: string };
      const run = await execute(probe, name);
      if (request.body.reject) throw new AppError('conflict', { field: 'reject' });
      return reply.code(201).send({ name, run });
    },
  );

  // Shaped like POST /webhooks: the secret is shown once; a replay carries null instead.
  app.post(
    '/secret',
    {
      schema: { body: Type.Object({}), response: { 201: Created } },
      config: {
        idempotency: {
          replayBody: (body) => ({ ...(body as object), secret: null, secret_shown_once: true }),
          headers: ['location'],
        },
      },
    },
    async (_request, reply) => {
      const run = await execute(probe, 'secret');
      reply.header('location', `/secret/${run}`).header('x-not-replayed', 'yes');
      return reply.code(201).send({ id: `w${run}`, secret: SECRET, secret_shown_once: false });
    },
  );

  app.post('/plain', { schema: { body: Type.Object({}), response: { 201: Ran } } }, async (_r, reply) => {
    const run = await execute(probe, 'plain');
    return reply.code(201).send({ name: 'plain', run });
  });

  await app.ready();
  return app;
}

export interface ProbeService {
  svc: TestService;
  app: App;
  probe: Probe;
  /** A fresh tenant whose key the probe routes accept. */
  tenant(): Promise<Tenant>;
}

/** A test service and a probe app on its database for the whole file, both closed after its last test. */
export async function probeService(): Promise<ProbeService> {
  const svc = await startService();
  const probe = newProbe();
  const app = await buildProbeApp(svc, probe);
  after(async () => {
    await app.close();
    await svc.close();
  });
  return { svc, app, probe, tenant: () => createTenant(svc, { scopes: ['bookings:read'] }) };
}

export async function send(
  app: App,
  key: string,
  path: string,
  body: unknown,
  idempotencyKey?: string,
): Promise<Response> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
  };
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
  const res = await app.inject({ method: 'POST', url: path, headers, payload: JSON.stringify(body) });
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.body);
  } catch {
    parsed = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body: parsed, text: res.body };
}

/** Waits (a few event-loop turns at most) until a probe has started `count` executions. */
export async function started(probe: Probe, name: string, count: number): Promise<void> {
  for (let i = 0; i < 1000; i += 1) {
    if ((probe.runs.get(name) ?? 0) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error(`probe ${name} never reached ${count} executions`);
}

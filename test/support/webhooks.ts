// Webhook fixtures: a service whose worker may deliver to the loopback test receiver (trusting the
// test CA) on a compressed retry schedule, tenants with webhooks on, and a receiver-side
// verification written from docs/webhooks.md, independent of the service's own signing code.
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { after } from 'node:test';
import type { Outcome } from '../../src/delivery/engine.js';
import type { Worker } from '../../src/delivery/worker.js';
import { startDeliveryWorker } from '../../src/runtime.js';
import type { Resolver } from '../../src/security/url-guard.js';
import { startService, type TestService } from './context.js';
import { type ReceivedRequest, type Receiver, startReceiver } from './https-receiver.js';
import { createTenant, expectOk, READ_SCOPES, type Tenant, type TenantOptions } from './tenants.js';

/** Gaps of 50 ms to 350 ms instead of 30 s to 32 min, same shape. */
/** A claimed delivery's outcome as a worker writes it after a 200. */
export const succeededOutcome = (claimed: Outcome['claimed']): Outcome => ({
  claimed,
  recorded: {
    status: 'succeeded',
    maxAttempts: 8,
    nextRetryInMs: null,
    httpStatus: 200,
    error: null,
    durationMs: 3,
    counts: true,
    blames: true,
  },
});

export const FAST_SCHEDULE = '0.05,0.1,0.15,0.2,0.25,0.3,0.35';

export interface WebhookHarness {
  svc: TestService;
  receiver: Receiver;
  worker: Worker;
}

/** A service, a receiver and a worker for one test file, closed after its last test. */
export async function webhookHarness(
  env: Record<string, string> = {},
  resolve?: Resolver,
): Promise<WebhookHarness> {
  const { svc, receiver } = await webhookService(env, resolve);
  return { svc, receiver, worker: await deliveryWorker(svc) };
}

/** The workers started on each service: stopped before its schema is dropped. */
const workersOf = new WeakMap<TestService, Set<() => Promise<void>>>();

/** Claim statements run by the delivery workers of the service's process (svc_webhook_claims_total). */
export async function claimsMade(svc: TestService): Promise<number> {
  const metric = await svc.deps.metrics.registry.getSingleMetric('svc_webhook_claims_total')?.get();
  return metric?.values[0]?.value ?? 0;
}

/**
 * A delivery worker on the service's dependencies. The service's close stops it first, whatever
 * the order of a test's own hooks: a worker still claiming while the schema is dropped deadlocks
 * with the drop, and its timers would keep the test process alive. Stopping it twice is a no-op.
 */
export async function deliveryWorker(svc: TestService): Promise<Worker> {
  const worker = await startDeliveryWorker(svc.deps);
  let stopped: Promise<void> | null = null;
  const stop = (graceMs = 100) => {
    stopped ??= worker.stop(graceMs);
    return stopped;
  };
  const set = workersOf.get(svc) ?? new Set();
  workersOf.set(svc, set);
  set.add(() => stop());
  return { wake: worker.wake, stop };
}

/**
 * The attempt time-out of webhookService: far above what a loaded machine takes to answer on
 * loopback (with two processes burning both cores, first attempts took over 1.5 s).
 */
export const WEBHOOK_TIMEOUT_MS = 5000;

/**
 * A service and a receiver its webhooks may reach, with no worker (the test starts and stops its
 * own), closed after the file's last test.
 */
export async function webhookService(
  env: Record<string, string> = {},
  resolve?: Resolver,
): Promise<{ svc: TestService; receiver: Receiver }> {
  const receiver = await startReceiver();
  const svc = await startService(
    {
      SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      SVC_WEBHOOK_CA_FILE: receiver.caFile,
      SVC_WEBHOOK_RETRY_SCHEDULE: FAST_SCHEDULE,
      SVC_WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
      SVC_WEBHOOK_LEASE_SECONDS: '7',
      ...env,
    },
    resolve,
  );
  after(async () => {
    await Promise.all([...(workersOf.get(svc) ?? [])].map((stop) => stop()));
    await receiver.close();
    await svc.close();
  });
  return { svc, receiver };
}

/** The contract's delivery body envelope, in its order. */
export const ENVELOPE_KEYS = [
  'id',
  'type',
  'version',
  'created_at',
  'organization',
  'resource',
  'changes',
  'previous_status',
  'data',
];

export const WEBHOOK_SCOPES = [...READ_SCOPES, 'webhooks:read', 'webhooks:write'];

export function webhookTenant(svc: TestService, options: TenantOptions = {}): Promise<Tenant> {
  return createTenant(svc, {
    scopes: WEBHOOK_SCOPES,
    ...options,
    flags: { webhooks_enabled: true, outbox_enabled: true, ...options.flags },
  });
}

export async function createWebhook(
  svc: TestService,
  t: Tenant,
  url: string,
  events: string[] = ['*'],
): Promise<{ id: string; secret: string; url: string }> {
  return expectOk(await svc.call('POST', '/webhooks', { key: t.key, body: { url, events } }), 201);
}

/** What a receiver does (docs/webhooks.md): every v1 signature of the header, checked in constant time. */
export function signatureMatches(secret: string, headers: Record<string, string>, body: string): boolean {
  const signed = `${headers['x-svc-timestamp']}.${body}`;
  const expected = Buffer.from(`v1=${createHmac('sha256', secret).update(signed).digest('hex')}`);
  return (headers['x-svc-signature'] ?? '')
    .split(',')
    .map((s) => Buffer.from(s.trim()))
    .some((given) => given.length === expected.length && timingSafeEqual(given, expected));
}

export interface DeliveryView {
  id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempt: number;
  max_attempts: number;
  next_retry_at: string | null;
  last_status: number | null;
  last_error: string | null;
  last_duration_ms: number;
  delivered_at: string | null;
  created_at: string;
}

/** Polls GET /webhooks/{id}/deliveries until `done` holds (bounded). */
export async function deliveriesUntil(
  svc: TestService,
  t: Tenant,
  webhookId: string,
  done: (deliveries: DeliveryView[]) => boolean,
  timeoutMs = 30_000,
): Promise<DeliveryView[]> {
  const until = Date.now() + timeoutMs;
  // Polls soon at first, then less often: a long wait stays well inside the key's rate limit.
  let pause = 25;
  for (;;) {
    const res = await svc.call('GET', `/webhooks/${webhookId}/deliveries?limit=100`, { key: t.key });
    assert.equal(res.status, 200, res.text);
    const data = res.body.data as DeliveryView[];
    if (done(data)) return data;
    if (Date.now() > until)
      assert.fail(`deliveries never reached the expected state: ${JSON.stringify(data)}`);
    await new Promise((r) => setTimeout(r, pause));
    pause = Math.min(pause * 1.5, 250);
  }
}

export const requestsTo = (receiver: Receiver, path: string): ReceivedRequest[] =>
  receiver.requests.filter((r) => r.path === path);

/**
 * The most requests that were in flight at once among `arrivals`: at each arrival, those that had
 * arrived and were not answered yet. Every one must have been answered.
 */
export const mostInFlight = (arrivals: readonly ReceivedRequest[]): number =>
  Math.max(
    ...arrivals.map(
      (r) =>
        arrivals.filter((q) => q.receivedAt <= r.receivedAt && (q.answeredAt as number) > r.receivedAt)
          .length,
    ),
  );

/** Waits (bounded) until `count` requests reached `path`; returns them in arrival order. */
export async function arrivalsAt(receiver: Receiver, path: string, count: number, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  while (requestsTo(receiver, path).length < count) {
    if (Date.now() > until) {
      assert.fail(`only ${requestsTo(receiver, path).length} of ${count} requests reached ${path}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  return requestsTo(receiver, path);
}

// What the webhook benchmark drives and observes: organizations with webhooks on the receiver
// (through the operator and public APIs), the feed of booking creations (each one event to each of
// the organization's webhooks), a backlog queued while nothing delivers and its drain, the arrivals
// of a phase, and the CPU a phase cost.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { Pool } from 'undici';
import { bookingBody } from '../../test/support/feed.js';
import {
  type Child,
  call,
  cpuMs,
  createIntegration,
  machineCpuMs,
  type Service,
  startServe,
} from './proc.js';
import type { Arrival, Receiver } from './receiver.js';
import { log, round, sleep } from './report.js';

/** What every scenario works with. */
export interface Bench {
  url: string;
  service: Service;
  receiver: Receiver;
  /** The engine's feed. */
  feed: Feed;
  client: pg.Client;
}

/** An organization with webhooks: their receiver paths (every event goes to each), a key of its first integration. */
export type Tenant = Awaited<ReturnType<typeof createTenant>>;

const SCOPES = ['bookings:read', 'webhooks:read', 'webhooks:write', 'pricing:read', 'passengers:read'];
/** The contract's most webhooks per integration: more take more integrations. */
const WEBHOOKS_PER_INTEGRATION = 10;

/** An organization whose webhooks (every event) reach the receiver at `paths`. */
export async function createTenant(s: Service, receiver: Receiver, paths: string[], scopes = SCOPES) {
  const code = String(10_000 + Math.floor(Math.random() * 89_999));
  const body = { code, name: 'Benchmark', webhooks_enabled: true, outbox_enabled: true };
  const { id } = await s.op<{ id: string }>('/organizations', body);
  const keys: string[] = [];
  for (let first = 0; first < Math.max(1, paths.length); first += WEBHOOKS_PER_INTEGRATION) {
    const { key } = await createIntegration(s, id, 'erp', scopes);
    keys.push(key);
    for (const path of paths.slice(first, first + WEBHOOKS_PER_INTEGRATION))
      await call(`${s.baseUrl}/webhooks`, 'POST', key, { url: receiver.url(path), events: ['*'] });
  }
  return { organizationId: id, code, paths, key: keys[0]! };
}

/** One platform write: resolves to 201 once the event is committed, anything else when it failed. */
export type Write = (tenant: Tenant, bookingId: string, reference: string) => Promise<number>;

/** The engine's feed: `PUT /operator/v1/organizations/{org}/bookings/{id}` on serve. */
export function engineWrite(s: Service): Write & { close(): Promise<void> } {
  const pool = new Pool(new URL(s.operatorUrl).origin, { connections: 64 });
  const base = new URL(s.operatorUrl).pathname;
  const headers = { authorization: `Bearer ${s.operatorToken}`, 'content-type': 'application/json' };
  const write: Write = async (tenant, id, reference) => {
    const path = `${base}/organizations/${tenant.organizationId}/bookings/${id}`;
    const body = JSON.stringify(bookingBody({ reference }));
    const res = await pool.request({ path, method: 'PUT', headers, body }).catch(() => null);
    await res?.body.dump();
    return res?.statusCode ?? -1;
  };
  return Object.assign(write, { close: () => pool.close() });
}

/** Open model: `send(i)` every 1000/rate ms whatever the answers, for `seconds`; resolves once all are answered. */
export async function openLoop(rate: number, seconds: number, send: (i: number) => Promise<unknown>) {
  const total = Math.floor(rate * seconds);
  const start = performance.now();
  const sent: Promise<unknown>[] = [];
  while (sent.length < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
    while (sent.length < due) sent.push(send(sent.length));
    await sleep(1);
  }
  await Promise.all(sent);
}

/** Booking creations, each recorded by booking id with when it was sent and answered. */
export class Feed {
  sent = new Map<string, { tenant: Tenant; sentAt: number; answeredAt: number; status: number }>();
  private seq = 0;

  constructor(public write: Write) {}

  async put(tenant: Tenant): Promise<void> {
    const id = randomUUID();
    const record = { tenant, sentAt: performance.now(), answeredAt: 0, status: 0 };
    this.sent.set(id, record);
    this.seq += 1;
    record.status = await this.write(tenant, id, `${tenant.code}${String(this.seq).padStart(8, '0')}`);
    record.answeredAt = performance.now();
  }

  /** `perTenant` events for each tenant, taking turns, 16 writes in flight. */
  async burst(tenants: Tenant[], perTenant: number): Promise<void> {
    let next = 0;
    const writer = async () => {
      while (next < tenants.length * perTenant) await this.put(tenants[next++ % tenants.length]!);
    };
    await Promise.all(Array.from({ length: 16 }, writer));
  }

  /** Deliveries the writes so far should cause (a failed write causes none, and is logged). */
  expected(): number {
    const sent = [...this.sent.values()];
    const failed = sent.filter((s) => s.status !== 201).map((s) => s.status);
    if (failed.length > 0)
      log(`  ${failed.length} of ${sent.length} feed writes failed: ${[...new Set(failed)]}`);
    return sent.reduce((n, s) => n + (s.status === 201 ? s.tenant.paths.length : 0), 0);
  }

  forget(): void {
    this.sent = new Map();
  }
}

const key = (a: Arrival) => `${a.path} ${a.eventId}`;

/** A count of the distinct (webhook, event) pairs that arrived since the receiver's reset. */
export function distinct(receiver: Receiver): () => number {
  let seen = new Set<string>();
  let list = receiver.arrivals;
  let next = 0;
  return () => {
    if (list !== receiver.arrivals) [seen, list, next] = [new Set(), receiver.arrivals, 0];
    for (; next < list.length; next++) seen.add(key(list[next]!));
    return seen.size;
  };
}

/**
 * Waits until `expected` distinct deliveries arrived, or `stallMs` passed without an arrival; the
 * first arrival of each (webhook, event) since the receiver's reset, oldest first.
 */
export async function arrivalsOf(receiver: Receiver, expected: number, stallMs = 30_000): Promise<Arrival[]> {
  const count = distinct(receiver);
  for (;;) {
    const before = receiver.arrivals.length;
    const complete = await receiver.until(() => count() >= expected, stallMs);
    if (complete || receiver.arrivals.length === before) break;
  }
  const seen = new Set<string>();
  return receiver.arrivals.filter((a) => !seen.has(key(a)) && seen.add(key(a)));
}

/**
 * Queues `perTenant` events of each tenant while nothing delivers, through `serve` with its worker
 * off when `serveEnv` is given (left running), else straight through `feed`. Before, the database is
 * vacuumed: these machines run PostgreSQL with autovacuum off, and without it each drain meets the
 * dead row versions of the drains before it in the queue's indexes (whichever runs last looks slowest).
 */
export async function queue(
  b: Bench,
  feed: Feed,
  tenants: Tenant[],
  perTenant: number,
  serveEnv: NodeJS.ProcessEnv | null,
) {
  await b.client.query('VACUUM (ANALYZE)');
  const serve = serveEnv && (await startServe(b.service, { SVC_WEBHOOK_WORKER: 'off', ...serveEnv }));
  feed.forget();
  const started = performance.now();
  await feed.burst(tenants, perTenant);
  const expected = feed.expected();
  log(`backlog: ${expected} deliveries queued in ${round((performance.now() - started) / 1000)} s`);
  b.receiver.reset();
  return { serve, expected };
}

/** µs per delivery of the service's Node processes and of PostgreSQL's backends; the share of the
 * machine's cores busy over the window (every process, not only these). */
export type CpuFigures = { nodeUs: number; postgresUs: number; machineBusy: number };

/** CPU used so far by `children`, PostgreSQL's backends of the database, the machine. */
async function cpuSnapshot(children: Child[], client: pg.Client) {
  const node = await Promise.all(children.map((c) => c.cpuMs()));
  const { rows } = await client.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  const postgres = new Map<number, number>();
  for (const { pid } of rows) postgres.set(pid, (await cpuMs(pid)) ?? 0);
  return { node: node.reduce<number>((a, b) => a + (b ?? 0), 0), postgres, machine: await machineCpuMs() };
}

export type Drain = Awaited<ReturnType<typeof drain>>;

/**
 * Waits for the `expected` deliveries of a backlog that `children` (just started) drain: the rate,
 * and the CPU each delivery cost, from `from` to the last arrival. From the first arrival, or from
 * the moment every process was ready (arrivals before it not counted). A backend born in between
 * counts whole.
 */
export async function drain(b: Bench, expected: number, children: Child[], from: 'first arrival' | 'ready') {
  let start = performance.now();
  if (from === 'first arrival') await b.receiver.until(() => b.receiver.arrivals.length > 0, 60_000);
  const before = await cpuSnapshot(children, b.client);
  if (from === 'first arrival') start = b.receiver.arrivals[0]?.at ?? start;
  const arrived = await arrivalsOf(b.receiver, expected);
  const after = await cpuSnapshot(children, b.client);
  const counted = arrived.filter((a) => a.at >= start).length;
  const seconds = ((arrived.at(-1)?.at ?? start) - start) / 1000;
  let postgres = 0;
  for (const [pid, ms] of after.postgres) postgres += ms - (before.postgres.get(pid) ?? 0);
  const per = (ms: number) => round((ms * 1000) / Math.max(1, counted), 0);
  const total = Math.max(1, after.machine.total - before.machine.total);
  return {
    deliveries: arrived.length,
    missing: expected - arrived.length,
    // From the first arrival, n arrivals span n - 1 intervals.
    perSecond: seconds > 0 ? round((counted - (from === 'ready' ? 0 : 1)) / seconds, 0) : 0,
    cpu: {
      nodeUs: per(after.node - before.node),
      postgresUs: per(postgres),
      machineBusy: round((after.machine.busy - before.machine.busy) / total, 3),
    },
  };
}

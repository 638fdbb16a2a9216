// What the webhook benchmark drives and observes: organizations with webhooks on the receiver
// (through the operator and public APIs), the feed of booking creations (each one event to each of
// the organization's webhooks), the arrivals of a phase, and the CPU a phase cost.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { Pool } from 'undici';
import { bookingBody } from '../../test/support/feed.js';
import { type Child, call, cpuMs, machineCpuMs, type Service } from './proc.js';
import type { Arrival, Receiver } from './receiver.js';
import { log, round } from './report.js';

/** What every scenario works with. */
export interface Bench {
  root: string;
  url: string;
  service: Service;
  receiver: Receiver;
  /** The engine's feed. */
  feed: Feed;
  client: pg.Client;
}

export interface Tenant {
  organizationId: string;
  code: string;
  /** Receiver paths of its webhooks (every event goes to each). */
  paths: string[];
  /** A key of its (first) integration. */
  key: string;
}

const SCOPES = ['bookings:read', 'webhooks:read', 'webhooks:write', 'pricing:read', 'passengers:read'];
/** The contract's most webhooks per integration: more take more integrations. */
const WEBHOOKS_PER_INTEGRATION = 10;
const STALL_MS = 30_000;

/** An organization whose webhooks (every event) reach the receiver at `paths`. */
export async function createTenant(
  s: Service,
  receiver: Receiver,
  paths: string[],
  scopes = SCOPES,
): Promise<Tenant> {
  const op = <T>(path: string, body: unknown) =>
    call<T>(`${s.operatorUrl}${path}`, 'POST', s.operatorToken, body);
  const code = String(10_000 + Math.floor(Math.random() * 89_999));
  const org = await op<{ id: string }>('/organizations', {
    code,
    name: 'Benchmark',
    webhooks_enabled: true,
    outbox_enabled: true,
  });
  const keys: string[] = [];
  for (let first = 0; first < Math.max(1, paths.length); first += WEBHOOKS_PER_INTEGRATION) {
    const integration = await op<{ id: string }>(`/organizations/${org.id}/integrations`, {
      name: `Benchmark ${first}`,
      kind: 'erp',
      scopes,
    });
    const { key } = await op<{ key: string }>(`/integrations/${integration.id}/keys`, {
      name: 'benchmark',
      scopes,
      environment: 'live',
    });
    keys.push(key);
    for (const path of paths.slice(first, first + WEBHOOKS_PER_INTEGRATION))
      await call(`${s.baseUrl}/webhooks`, 'POST', key, { url: receiver.url(path), events: ['*'] });
  }
  return { organizationId: org.id, code, paths, key: keys[0] as string };
}

/** One platform write: resolves to 201 once the event is committed, anything else when it failed. */
export type Write = (tenant: Tenant, bookingId: string, reference: string) => Promise<number>;

/** The engine's feed: `PUT /operator/v1/organizations/{org}/bookings/{id}` on serve. */
export function engineWrite(s: Service): Write & { close(): Promise<void> } {
  const pool = new Pool(new URL(s.operatorUrl).origin, { connections: 64 });
  const base = new URL(s.operatorUrl).pathname;
  const headers = { authorization: `Bearer ${s.operatorToken}`, 'content-type': 'application/json' };
  const write: Write = async (tenant, id, reference) => {
    try {
      const path = `${base}/organizations/${tenant.organizationId}/bookings/${id}`;
      const body = JSON.stringify(bookingBody({ reference }));
      const res = await pool.request({ path, method: 'PUT', headers, body });
      await res.body.dump();
      return res.statusCode;
    } catch {
      return -1;
    }
  };
  return Object.assign(write, { close: () => pool.close() });
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
    const total = tenants.length * perTenant;
    const writer = async () => {
      while (next < total) await this.put(tenants[next++ % tenants.length] as Tenant);
    };
    await Promise.all(Array.from({ length: 16 }, writer));
  }

  /** Open model: a write every 1000/rate ms whatever the answers, for `seconds`. */
  async steady(tenant: Tenant, rate: number, seconds: number): Promise<void> {
    const start = performance.now();
    const inFlight: Promise<void>[] = [];
    while (inFlight.length < rate * seconds) {
      const due = Math.min(rate * seconds, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
      while (inFlight.length < due) inFlight.push(this.put(tenant));
      await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(inFlight);
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
    for (; next < list.length; next++) seen.add(key(list[next] as Arrival));
    return seen.size;
  };
}

/** The first arrival of each (webhook, event) since the receiver's reset, oldest first. */
export function firstArrivals(receiver: Receiver): Arrival[] {
  const seen = new Set<string>();
  return receiver.arrivals.filter((a) => !seen.has(key(a)) && seen.add(key(a)));
}

/** Waits until `expected` distinct deliveries arrived, or 30 s passed without an arrival. */
export async function arrivalsOf(
  receiver: Receiver,
  expected: number,
  stallMs = STALL_MS,
): Promise<Arrival[]> {
  const count = distinct(receiver);
  for (;;) {
    const before = receiver.arrivals.length;
    const complete = await receiver.until(() => count() >= expected, stallMs);
    if (complete || receiver.arrivals.length === before) return firstArrivals(receiver);
  }
}

/**
 * What autovacuum would have done between two phases (these machines run PostgreSQL with it off):
 * without it each drain meets the dead row versions of the drains before it in the queue's indexes,
 * and whichever configuration runs last looks slowest.
 */
export async function vacuum(client: pg.Client): Promise<void> {
  await client.query('VACUUM (ANALYZE)');
}

/** CPU used so far by the Node processes, PostgreSQL's backends of the database, the machine. */
export interface CpuSnapshot {
  node: number;
  postgres: Map<number, number>;
  machine: { busy: number; total: number };
  bench: number;
}

export async function cpuSnapshot(children: Child[], client: pg.Client): Promise<CpuSnapshot> {
  const node = await Promise.all(children.map((c) => c.cpuMs()));
  const { rows } = await client.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  const postgres = new Map<number, number>();
  for (const { pid } of rows) postgres.set(pid, (await cpuMs(pid)) ?? 0);
  const usage = process.cpuUsage();
  const machine = await machineCpuMs();
  return {
    node: node.reduce<number>((a, b) => a + (b ?? 0), 0),
    postgres,
    machine,
    bench: (usage.user + usage.system) / 1000,
  };
}

export interface CpuFigures {
  /** µs per delivery: the service's Node processes, PostgreSQL's backends, this process (receiver). */
  nodeUs: number;
  postgresUs: number;
  benchUs: number;
  /** Share of the machine's cores busy over the window (every process, not only these). */
  machineBusy: number;
}

/** CPU between two snapshots per delivery; a backend born in between counts whole. */
export function cpuPerDelivery(a: CpuSnapshot, b: CpuSnapshot, deliveries: number): CpuFigures {
  let postgres = 0;
  for (const [pid, ms] of b.postgres) postgres += ms - (a.postgres.get(pid) ?? 0);
  const per = (ms: number) => round((ms * 1000) / Math.max(1, deliveries), 0);
  const machineBusy = (b.machine.busy - a.machine.busy) / Math.max(1, b.machine.total - a.machine.total);
  return {
    nodeUs: per(b.node - a.node),
    postgresUs: per(postgres),
    benchUs: per(b.bench - a.bench),
    machineBusy: round(machineBusy, 3),
  };
}

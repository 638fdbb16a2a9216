// The engine's statements, one call each to the functions of src/db/engine.sql (read that file for
// what each does). This module only shapes their parameters and answers.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/db.js';
import { CONSECUTIVE_FAILURES_TO_DISABLE } from './policy.js';

/** Everything one attempt needs, read at the claim (scopes, url and secrets may change between attempts). */
export interface AttemptContext {
  organization_id: string;
  integration_id: string;
  webhook_active: boolean;
  url: string;
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_valid: boolean;
  integration_active: boolean;
  scopes: string[];
  webhooks_enabled: boolean;
  event_type: string;
  event_created_at: Date;
  resource_type: string;
  resource_id: string;
  changes: string[];
  previous_status: string | null;
  booking: Record<string, unknown> | null;
  link_external_id: string | null;
}

export interface Claimed extends AttemptContext {
  id: string;
  webhook_id: string;
  event_id: string;
  /** The number of the attempt about to be made (X-SVC-Attempt). */
  attempt: number;
  /** The attempt a replay started again from: the retry schedule counts from here. */
  replayed_from: number;
  /** The lease of this claim: its outcome is written only while the lease holds. */
  lease_token: string;
  /** The database has heard that it is sent next (a slot of its webhook was free). */
  armed: boolean;
  /** Attempts of other workers in flight at its webhook when it was claimed (a previous owner's). */
  others_sent: number;
}

export interface Recorded {
  status: 'succeeded' | 'failed' | 'dead';
  maxAttempts: number;
  nextRetryInMs: number | null;
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
  /** The attempt counts as one of the delivery's (false only when nothing was sent: webhook or integration inactive). */
  counts: boolean;
  /** The receiver answered it: it moves the webhook's failure count (false for a fault of the service's own). */
  blames: boolean;
}

export interface Outcome {
  claimed: Pick<Claimed, 'id' | 'lease_token'>;
  recorded: Recorded;
}

/** A webhook whose failure count an exchange's outcomes changed. */
export interface Tally {
  webhookId: string;
  organizationId: string;
  integrationId: string;
  active: boolean;
  failures: number;
  failuresBefore: number;
}

export interface ClaimRequest {
  worker: string;
  leaseMs: number;
  /** Leases the worker sends next: a lease given back counts as an attempt only once armed. */
  armed: readonly string[];
  /** Leases claimed ahead that were not sent: back to the queue uncounted. */
  released: readonly string[];
  /** The partitions the worker owns (its assignment). */
  partitions: readonly number[];
  /** Deliveries wanted at most. */
  take: number;
  /** Leases of one webhook at most. */
  hold: number;
  /** Attempts in flight of one webhook at most: the claim arms what its free slots take. */
  bound: number;
  /** Webhooks whose attempts ended since the last exchange: the claim arms all it takes of them. */
  answering: readonly string[];
  /** Webhooks where other workers had attempts in flight: their count now is answered. */
  shared: readonly string[];
  /** The leases the worker may hold in all (its organizations' fair shares are of this). */
  budget: number;
  /** The leases the worker holds, by organization. */
  busy: ReadonlyMap<string, number>;
}

export interface Exchanged {
  claimed: Claimed[];
  /** The outcomes written (the others' leases had ended). */
  written: Set<string>;
  tallies: Tally[];
  /** The partitions walked where deliveries are still due after the claim (they wait for room). */
  backlog: number[];
  /** Of the webhooks `shared`, the attempts other workers have in flight at each. */
  shared: Map<string, number>;
  /** Of the leases `armed`, those not armed: no longer the worker's, or their partition not (it lets them go). */
  unarmed: Set<string>;
}

/** A webhook's partition, as webhook_partition() in the database computes it: its id's last byte modulo 64. */
export const partitionOf = (webhookId: string): number => Number.parseInt(webhookId.slice(-2), 16) % 64;

/** The exchange's last row: what it wrote and found besides the deliveries claimed. */
interface Summary {
  written: string[];
  tallies: Tally[];
  shared: Record<string, number>;
  backlog: number[];
  unarmed: string[];
}

/** Bytes as a Buffer: the embedded database answers bytea with a plain Uint8Array. */
const bytes = (b: Uint8Array | null): Buffer | null =>
  b === null ? null : Buffer.from(b.buffer, b.byteOffset, b.length);

/** Writes the outcomes, then claims: one statement, one transaction (delivery_exchange). */
export async function exchange(
  q: Queryable,
  outcomes: readonly Outcome[],
  r: ClaimRequest,
): Promise<Exchanged> {
  const written = outcomes.map((o, i) => ({
    id: o.claimed.id,
    token: o.claimed.lease_token,
    status: o.recorded.status,
    max_attempts: o.recorded.maxAttempts,
    retry_ms: o.recorded.nextRetryInMs,
    http_status: o.recorded.httpStatus,
    error: o.recorded.error,
    duration_ms: o.recorded.durationMs,
    counts: o.recorded.counts,
    blames: o.recorded.blames,
    ord: i + 1,
  }));
  const token = randomUUID();
  const rows = await q.query<Claimed & { summary: Summary | null }>(
    'SELECT * FROM delivery_exchange($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)',
    [
      r.worker,
      token,
      r.leaseMs,
      `{${r.armed.join(',')}}`,
      `{${r.released.join(',')}}`,
      JSON.stringify(written),
      CONSECUTIVE_FAILURES_TO_DISABLE,
      `{${r.partitions.join(',')}}`,
      r.take,
      r.hold,
      r.bound,
      `{${r.answering.join(',')}}`,
      `{${r.shared.join(',')}}`,
      r.budget,
      `{${[...r.busy.keys()].join(',')}}`,
      `{${[...r.busy.values()].join(',')}}`,
    ],
  );
  const summary = rows.pop()?.summary as Summary;
  for (const row of rows) {
    row.secret = bytes(row.secret) as Buffer;
    row.previous_secret = bytes(row.previous_secret);
    row.lease_token = token;
  }
  return {
    claimed: rows,
    written: new Set(summary.written),
    tallies: summary.tallies,
    backlog: summary.backlog,
    shared: new Map(Object.entries(summary.shared)),
    unarmed: new Set(summary.unarmed),
  };
}

export interface WorkerIdentity {
  id: string;
  host: string;
  pid: number;
  /** The last migration this code knows (`svc migrate` names it when it refuses). */
  build: string;
}

/** A beat (delivery_worker_beat): the partitions this worker owns now. */
export async function beat(q: Queryable, w: WorkerIdentity, leaseMs: number): Promise<number[]> {
  const [row] = await q.query<{ parts: number[] }>(
    'SELECT delivery_worker_beat($1, $2, $3, $4, $5) AS parts',
    [w.id, w.host, w.pid, w.build, leaseMs],
  );
  return row?.parts ?? [];
}

/** A worker stopping frees its partitions at once. */
export async function leave(q: Queryable, worker: string): Promise<void> {
  await q.query('SELECT delivery_worker_leave($1)', [worker]);
}

/**
 * Gives back this worker's leases of `ids` (a worker stopping with attempts still in flight): the
 * attempts count when they were sent, the deliveries are due again at once.
 */
export async function giveBack(q: Queryable, worker: string, ids: readonly string[], why: string) {
  if (ids.length === 0) return 0;
  const [row] = await q.query<{ n: number }>(
    `SELECT delivery_give_back(ARRAY(SELECT q.id FROM delivery_queue q
                                     WHERE q.id = ANY ($1::uuid[]) AND q.lease_owner = $2), $3) AS n`,
    [`{${ids.join(',')}}`, worker, why],
  );
  return row?.n ?? 0;
}

/**
 * Leases past their end go back to the queue, the attempt counted (every beat does this too):
 * answers how many.
 */
export async function releaseExpiredLeases(q: Queryable): Promise<number> {
  const [row] = await q.query<{ n: number }>('SELECT delivery_housekeeping() AS n');
  return row?.n ?? 0;
}

/** Deliveries due and not leased, and how long the oldest of them has waited (for the metrics). */
export async function backlog(q: Queryable): Promise<{ due: number; oldestDueSeconds: number }> {
  const [row] = await q.query<{ due: number; oldest: number | null }>(
    `SELECT count(*)::int AS due, extract(epoch FROM now() - min(next_retry_at))::float8 AS oldest
     FROM delivery_queue WHERE lease_owner IS NULL AND next_retry_at <= now()`,
  );
  return { due: row?.due ?? 0, oldestDueSeconds: Math.max(0, row?.oldest ?? 0) };
}

/** Queue depth by state, for the metrics. */
export function deliveryCounts(q: Queryable): Promise<{ status: string; n: number }[]> {
  return q.query(
    `SELECT s.status, count(*)::int AS n FROM delivery_queue q JOIN delivery_states s ON s.id = q.id
     GROUP BY s.status`,
  );
}

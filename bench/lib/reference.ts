// The reference of the delivery benchmark, seen from the harness: its schemas in the benchmark
// database (reset on every run), its feed (one transaction per event that writes the event's row and
// adds one graphile-worker job per webhook, as the platform's write adds the event to the outbox),
// the event bodies, and the configuration of its worker process (bench/webhook-reference.ts).
import { randomUUID } from 'node:crypto';
import { runMigrations } from 'graphile-worker';
import pg from 'pg';
import { bookingBody } from '../../test/support/feed.js';
import type { Tenant, Write } from './feed.js';

/** graphile-worker's own schema, and the schema of the reference's event rows. */
export const REFERENCE_SCHEMA = 'bench_graphile_worker';
const EVENTS_SCHEMA = 'bench_reference';

/** What bench/webhook-reference.ts is started with. */
export interface ReferenceConfig {
  databaseUrl: string;
  /** Index -> { url, secret }: the webhooks, as a real service would cache them. */
  webhooks: { url: string; secret: string }[];
  concurrency: number;
  localQueue: number;
  timeoutMs: number;
  caFile: string;
}

/** Drops what an earlier run left and installs graphile-worker's schema afresh. */
export async function resetReference(connectionString: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${REFERENCE_SCHEMA} CASCADE`);
    await client.query(`DROP SCHEMA IF EXISTS ${EVENTS_SCHEMA} CASCADE`);
    await client.query(`CREATE SCHEMA ${EVENTS_SCHEMA}`);
    await client.query(
      `CREATE TABLE ${EVENTS_SCHEMA}.events (
         id uuid PRIMARY KEY, organization_id uuid NOT NULL, resource_id uuid NOT NULL,
         type text NOT NULL, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    );
  } finally {
    await client.end();
  }
  await runMigrations({ connectionString, schema: REFERENCE_SCHEMA });
}

/**
 * The body of a `booking.created` delivery, shaped as the engine's (the contract's envelope with the
 * booking's public fields): about 1.5 KB.
 */
function referenceEvent(organizationId: string, bookingId: string, reference: string) {
  const { internal: _internal, ...booking } = bookingBody({ reference }) as Record<string, unknown>;
  const now = new Date().toISOString();
  return {
    id: randomUUID(),
    type: 'booking.created',
    version: 1,
    created_at: now,
    organization: { id: organizationId },
    resource: { type: 'booking', id: bookingId },
    changes: [],
    previous_status: null,
    data: {
      id: bookingId,
      reference,
      ...booking,
      originator_organization_id: organizationId,
      created_at: now,
    },
  };
}

/**
 * One platform write: the event's row and one job per webhook of the tenant, in one transaction.
 * Resolves 201 when it committed, -1 when it failed.
 */
export function referenceWrite(pool: pg.Pool): Write {
  const insertEvent = `INSERT INTO ${EVENTS_SCHEMA}.events (id, organization_id, resource_id, type, body) VALUES ($1, $2, $3, $4, $5)`;
  const addJobs =
    `SELECT count(*) FROM ${REFERENCE_SCHEMA}.add_jobs(ARRAY(` +
    `SELECT ROW('deliver', json_build_object('webhook', w, 'event', $1::json), NULL, NULL, NULL, NULL, NULL, NULL)::${REFERENCE_SCHEMA}.job_spec ` +
    'FROM generate_series(0, $2::int - 1) AS w))';
  return async (tenant: Tenant, bookingId: string, reference: string): Promise<number> => {
    const event = referenceEvent(tenant.organizationId, bookingId, reference);
    const body = JSON.stringify(event);
    const client = await pool.connect().catch(() => null);
    if (!client) return -1;
    try {
      await client.query('BEGIN');
      await client.query(insertEvent, [event.id, tenant.organizationId, bookingId, event.type, body]);
      await client.query(addJobs, [body, tenant.paths.length]);
      await client.query('COMMIT');
      return 201;
    } catch {
      await client.query('ROLLBACK').catch(() => {});
      return -1;
    } finally {
      client.release();
    }
  };
}

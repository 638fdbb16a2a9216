// Prints the PostgreSQL plan of every list query of the read API over a few thousand rows, as
// Markdown (docs/query-plans.md is its output plus commentary). Uses the SQL builders of the
// routes themselves, so a change to a query shows up here.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx scripts/query-plans.ts
import { randomBytes } from 'node:crypto';
import { bookingByExternalIdSql, bookingPageSql } from '../src/api/bookings/queries.js';
import { CUSTOMERS, cataloguePageSql, DRIVERS, VEHICLES } from '../src/api/catalogue/queries.js';
import { eventPageSql } from '../src/api/events/queries.js';
import { createPostgresDb, type Db } from '../src/db/db.js';
import { migrate } from '../src/db/migrate.js';
import type { Position } from '../src/http/cursor.js';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is required');
const schema = `plans_${randomBytes(4).toString('hex')}`;
const admin = createPostgresDb({ url, max: 1 });
await admin.exec(`CREATE SCHEMA ${schema}`);
const db = createPostgresDb({ url, schema, max: 1 });

const ORGS = 4;
const BOOKINGS_PER_ORG = 3000;
const CATALOGUE_PER_ORG = 1500;

async function seed(db: Db) {
  await db.exec(`
    INSERT INTO organizations (code, name) SELECT (10 + g)::text, 'Org ' || g FROM generate_series(1, ${ORGS}) g;
    INSERT INTO customer_groups (organization_id, name)
      SELECT o.id, 'G' || g FROM organizations o, generate_series(1, 200) g;
    INSERT INTO customers (id, organization_id, name, type, active, group_id, created_at, deleted_at)
      SELECT gen_random_uuid(), o.id, 'C' || g, 'account', g % 4 <> 0,
             (SELECT id FROM customer_groups cg WHERE cg.organization_id = o.id AND cg.name = 'G' || (g % 200)),
             now() - g * interval '1 minute', CASE WHEN g % 10 = 0 THEN now() END
      FROM organizations o, generate_series(1, ${CATALOGUE_PER_ORG}) g;
    INSERT INTO drivers (id, organization_id, name, active, created_at)
      SELECT gen_random_uuid(), o.id, 'D' || g, g % 4 <> 0, now() - g * interval '1 minute'
      FROM organizations o, generate_series(1, ${CATALOGUE_PER_ORG}) g;
    INSERT INTO vehicles (id, organization_id, plate, active, created_at)
      SELECT gen_random_uuid(), o.id, 'P' || g, g % 4 <> 0, now() - g * interval '1 minute'
      FROM organizations o, generate_series(1, ${CATALOGUE_PER_ORG}) g;
    -- A third of each organization's bookings are executed by the next organization.
    INSERT INTO bookings (id, originator_organization_id, executor_organization_id, reference, status,
        service_type, pickup_at, passengers, customer_id, created_at)
      SELECT gen_random_uuid(), o.id,
             CASE WHEN g % 3 = 0 THEN (SELECT id FROM organizations n WHERE n.code = (10 + o.code::int % ${ORGS} + 1)::text) END,
             o.code || lpad(g::text, 8, '0'),
             (ARRAY['solicitada','no_segura','confirmada','en_camino','en_curso','completada','cancelada','no_show','rechazada'])[1 + g % 9],
             'transfer', now() + (g % 400) * interval '1 hour', '{"count": 1}',
             (SELECT id FROM customers c WHERE c.organization_id = o.id AND c.name = 'C' || (1 + g % 50)),
             now() - g * interval '1 minute'
      FROM organizations o, generate_series(1, ${BOOKINGS_PER_ORG}) g;
    INSERT INTO events (organization_id, type, resource_id, reference, created_at)
      SELECT b.originator_organization_id,
             (ARRAY['booking.created','booking.updated','booking.assigned','booking.cancelled'])[1 + g % 4],
             b.id, b.reference, b.created_at + g * interval '1 second'
      FROM bookings b, generate_series(1, 2) g; -- two events per booking
    ANALYZE;
  `);
  const [org] = await db.query<{ id: string }>("SELECT id FROM organizations WHERE code = '11'");
  return org!.id;
}

async function explain(title: string, q: { sql: string; params: unknown[] }) {
  const rows = await db.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) ${q.sql}`,
    q.params,
  );
  console.log(`### ${title}\n\n\`\`\`\n${rows.map((r) => r['QUERY PLAN']).join('\n')}\n\`\`\`\n`);
}

async function positionAt(sql: string, params: unknown[]): Promise<Position> {
  const [row] = await db.query<{ created_at: Date; id: string }>(sql, params);
  return { createdAt: row!.created_at, id: row!.id };
}

try {
  await migrate(db);
  const org = await seed(db);
  const counts = await db.query<{ t: string; n: number }>(
    `SELECT 'bookings' t, count(*)::int n FROM bookings UNION ALL SELECT 'customers', count(*)::int FROM customers
     UNION ALL SELECT 'events', count(*)::int FROM events`,
  );
  console.log(`<!-- rows: ${counts.map((c) => `${c.t} ${c.n}`).join(', ')} -->\n`);
  const [integration] = await db.query<{ id: string }>(
    "INSERT INTO integrations (organization_id, name, kind, scopes) VALUES ($1, 'x', 'erp', '{}') RETURNING id",
    [org],
  );
  // Every booking the organization originated has an external id of this integration.
  await db.query(
    'INSERT INTO booking_external_ids (integration_id, booking_id, external_id) SELECT $1, id, reference FROM bookings WHERE originator_organization_id = $2',
    [integration!.id, org],
  );
  await db.exec('ANALYZE booking_external_ids');
  const reader = { organizationId: org, integrationId: integration!.id };
  const take = 26;
  const deep = await positionAt(
    `SELECT created_at, id FROM bookings WHERE originator_organization_id = $1 OR executor_organization_id = $1
     ORDER BY created_at DESC, id DESC OFFSET 3000 LIMIT 1`,
    [org],
  );
  const [customer] = await db.query<{ id: string }>(
    "SELECT id FROM customers WHERE organization_id = $1 AND name = 'C7'",
    [org],
  );

  console.log('## Bookings\n');
  await explain('First page', bookingPageSql(reader, {}, null, take));
  await explain('Deep page (position 3000 of 4000)', bookingPageSql(reader, {}, deep, take));
  await explain('status', bookingPageSql(reader, { status: 'completed' }, null, take));
  await explain('customer_id', bookingPageSql(reader, { customer_id: customer!.id }, null, take));
  const day = 24 * 3600_000;
  await explain(
    'pickup_from / pickup_to (a two-day window)',
    bookingPageSql(
      reader,
      { pickup_from: new Date(Date.now() + 5 * day), pickup_to: new Date(Date.now() + 7 * day) },
      null,
      take,
    ),
  );
  await explain(
    'created_from / created_to (one day)',
    bookingPageSql(
      reader,
      { created_from: new Date(Date.now() - 2 * day), created_to: new Date(Date.now() - day) },
      null,
      take,
    ),
  );
  await explain('external_id', bookingByExternalIdSql(reader, `11${'7'.padStart(8, '0')}`, null));

  for (const table of [CUSTOMERS, DRIVERS, VEHICLES]) {
    console.log(`## ${table.list[0]!.toUpperCase()}${table.list.slice(1)}\n`);
    await explain('First page', cataloguePageSql(table, org, undefined, null, take));
    await explain('active=true', cataloguePageSql(table, org, true, null, take));
    await explain('active=false', cataloguePageSql(table, org, false, null, take));
    const pos = await positionAt(
      `SELECT created_at, id FROM ${table.list} WHERE organization_id = $1 ORDER BY created_at DESC, id DESC OFFSET 1000 LIMIT 1`,
      [org],
    );
    await explain('Deep page', cataloguePageSql(table, org, undefined, pos, take));
  }

  console.log('## Events\n');
  await explain('First page', eventPageSql(org, {}, null, take));
  const evPos = await positionAt(
    'SELECT created_at, id FROM events WHERE organization_id = $1 ORDER BY created_at DESC, id DESC OFFSET 4000 LIMIT 1',
    [org],
  );
  await explain('Deep page', eventPageSql(org, {}, evPos, take));
  await explain('type', eventPageSql(org, { type: 'booking.assigned' }, null, take));
  const [ev] = await db.query<{ resource_id: string }>(
    'SELECT resource_id FROM events WHERE organization_id = $1 LIMIT 1',
    [org],
  );
  await explain('resource_id', eventPageSql(org, { resource_id: ev!.resource_id }, null, take));
  await explain(
    'type and resource_id',
    eventPageSql(org, { type: 'booking.updated', resource_id: ev!.resource_id }, null, take),
  );
} finally {
  await db.close();
  await admin.exec(`DROP SCHEMA ${schema} CASCADE`);
  await admin.close();
}

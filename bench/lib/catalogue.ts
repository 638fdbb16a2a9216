// Organizations and their catalogue (customer groups, customers, drivers, vehicles), each table in
// one set-based statement: an organization's rows are generate_series(0, count - 1) beside it.
import type { Queryable } from '../../src/db/db.js';
import type { Plan } from './plan.js';
import { customerUuid, driverUuid, groupUuid, h, orgUuid, pick, SPAN_MS, START, vehicleUuid } from './sql.js';
import {
  COMPANY_WORDS,
  CUSTOMER_KINDS,
  DRIVER_STATUSES,
  ECO_LABELS,
  FIRST_NAMES,
  GROUP_NAMES,
  LAST_NAMES,
  PROPULSIONS,
  VEHICLE_MODELS,
} from './vocabulary.js';

/** Rows of organization t.o numbered by `k`: a row key unique over the whole table. */
const rowKey = (k: string) => `(t.o::int8 * 1000000 + ${k})`;

/** Per-organization counts as `t(o, c)`, o being the 0-based organization index. */
const PER_ORG = `(SELECT (n - 1)::int AS o, c FROM unnest($1::int[]) WITH ORDINALITY AS u(c, n)) t`;

/** Spread a row's creation over the two years (and the two months before) by its position. */
const spread = (k: string) =>
  `timestamptz '${START}' - interval '60 days' + ((${k})::float8 * ${SPAN_MS} / t.c) * interval '1 millisecond'`;

const ORGANIZATIONS = `
INSERT INTO organizations (id, code, name, created_at, updated_at)
SELECT ${orgUuid('t.o')}, t.code, 'Transportes ' || ${pick('$2::text[]', 't.o')} || ' ' || t.code,
  timestamptz '${START}' - interval '1 day' * (90 + t.o % 300),
  timestamptz '${START}' - interval '1 day' * (90 + t.o % 300)
FROM (SELECT code, (n - 1)::int AS o FROM unnest($1::text[]) WITH ORDINALITY AS u(code, n)) t`;

const GROUPS = `
INSERT INTO customer_groups (id, organization_id, name)
SELECT ${groupUuid('t.o', 'j')}, ${orgUuid('t.o')}, ($2::text[])[1 + j % cardinality($2::text[])] || ' ' || (j + 1)
FROM ${PER_ORG}, LATERAL generate_series(0, t.c - 1) AS j`;

const CUSTOMERS = `
INSERT INTO customers (id, organization_id, external_id, name, type, active, group_id, created_at, updated_at,
  deleted_at)
SELECT ${customerUuid('t.o', 'k')}, ${orgUuid('t.o')},
  CASE WHEN ${h(rowKey('k'), 1)} % 2 = 0 THEN 'CRM-' || lpad(k::text, 6, '0') END,
  CASE WHEN k = 0 THEN 'Motor público'
    ELSE ${pick('$3::text[]', h(rowKey('k'), 2))} || ' ' || ${pick('$4::text[]', h(rowKey('k'), 3))} || ' ' || k END,
  CASE WHEN k = 0 THEN 'public_engine' ELSE 'account' END,
  k = 0 OR ${h(rowKey('k'), 4)} % 100 < 90,
  CASE WHEN k > 0 AND ${h(rowKey('k'), 5)} % 100 < 60
    THEN ${groupUuid('t.o', `(${h(rowKey('k'), 6)} % ($2::int[])[t.o + 1])`)} END,
  ${spread('k')}, ${spread('k')} + interval '1 day' * (${h(rowKey('k'), 7)} % 30),
  CASE WHEN k > 0 AND ${h(rowKey('k'), 8)} % 100 < 2 THEN ${spread('k')} + interval '90 days' END
FROM ${PER_ORG}, LATERAL generate_series(0, t.c - 1) AS k`;

const DRIVERS = `
INSERT INTO drivers (id, organization_id, external_id, name, nickname, phone, active, status, has_app_access,
  created_at, updated_at)
SELECT ${driverUuid('t.o', 'k')}, ${orgUuid('t.o')},
  CASE WHEN ${h(rowKey('k'), 11)} % 100 < 30 THEN 'EMP-' || lpad(k::text, 5, '0') END,
  d.first || ' ' || ${pick('$3::text[]', h(rowKey('k'), 12))}, d.first,
  '+346' || lpad((${h(rowKey('k'), 13)} % 100000000)::text, 8, '0'),
  ${h(rowKey('k'), 14)} % 100 < 92,
  ${pick('$4::text[]', h(rowKey('k'), 15))},
  ${h(rowKey('k'), 16)} % 100 < 85,
  ${spread('k')}, ${spread('k')} + interval '1 day' * (${h(rowKey('k'), 17)} % 30)
FROM ${PER_ORG}, LATERAL generate_series(0, t.c - 1) AS k,
  LATERAL (SELECT ${pick('$2::text[]', h(rowKey('k'), 10))} AS first) d`;

const VEHICLES = `
INSERT INTO vehicles (id, organization_id, external_id, plate, model, nickname, category, seats, luggage,
  wheelchair_adapted, eco_label, propulsion, active, created_at, updated_at)
SELECT ${vehicleUuid('t.o', 'k')}, ${orgUuid('t.o')},
  CASE WHEN ${h(rowKey('k'), 21)} % 100 < 30 THEN 'FLT-' || lpad(k::text, 5, '0') END,
  lpad((${h(rowKey('k'), 22)} % 10000)::text, 4, '0')
    || substr('BCDFGHJKLMNPRSTVWXYZ', (1 + ${h(rowKey('k'), 23)} % 20)::int, 1)
    || substr('BCDFGHJKLMNPRSTVWXYZ', (1 + ${h(rowKey('k'), 24)} % 20)::int, 1)
    || substr('BCDFGHJKLMNPRSTVWXYZ', (1 + ${h(rowKey('k'), 25)} % 20)::int, 1),
  ($2::text[])[v.m], left(($2::text[])[v.m], 1) || (k + 1), ($3::text[])[v.m], ($4::int[])[v.m],
  ($5::int[])[v.m], ($3::text[])[v.m] LIKE 'van%' AND ${h(rowKey('k'), 26)} % 100 < 10,
  ($6::text[])[v.p], ($7::text[])[v.p], ${h(rowKey('k'), 27)} % 100 < 94,
  ${spread('k')}, ${spread('k')} + interval '1 day' * (${h(rowKey('k'), 28)} % 30)
FROM ${PER_ORG}, LATERAL generate_series(0, t.c - 1) AS k,
  LATERAL (SELECT 1 + ${h(rowKey('k'), 20)} % cardinality($2::text[]) AS m,
    1 + ${h(rowKey('k'), 29)} % cardinality($6::text[]) AS p) v`;

export async function loadCatalogue(db: Queryable, plan: Plan): Promise<void> {
  const orgs = plan.organizations;
  const of = (field: 'groups' | 'customers' | 'drivers' | 'vehicles') => orgs.map((o) => o[field]);
  await db.query(ORGANIZATIONS, [orgs.map((o) => o.code), COMPANY_WORDS]);
  await db.query(GROUPS, [of('groups'), GROUP_NAMES]);
  await db.query(CUSTOMERS, [of('customers'), of('groups'), CUSTOMER_KINDS, COMPANY_WORDS]);
  await db.query(DRIVERS, [of('drivers'), FIRST_NAMES, LAST_NAMES, DRIVER_STATUSES]);
  await db.query(VEHICLES, [
    of('vehicles'),
    VEHICLE_MODELS.map((v) => v.model),
    VEHICLE_MODELS.map((v) => v.category),
    VEHICLE_MODELS.map((v) => v.seats),
    VEHICLE_MODELS.map((v) => v.luggage),
    ECO_LABELS,
    PROPULSIONS,
  ]);
}

// The catalogue the platform pushes: customers (soft-deleted, so bookings keep pointing at them),
// drivers and vehicles (hard-deleted; their bookings lose the assignment through the foreign key,
// which the event trigger announces as booking.assigned). Each function runs inside the caller's
// transaction, so checks and write are one unit.
import type { Queryable } from '../../db/db.js';
import { AppError, notFound } from '../../http/errors.js';
import { findOrganization } from '../organizations.js';
import type {
  CustomerInput,
  CustomerRow,
  DriverInput,
  DriverRow,
  VehicleInput,
  VehicleRow,
} from './schemas.js';

export interface Written<T> {
  row: T;
  /** true when the row did not exist for the public API before (201), false on a replace (200). */
  created: boolean;
}

export const idOfAnotherOrganization = () =>
  new AppError('conflict', { field: 'id' }, 'El id ya pertenece a otra organización.');

async function upsertGroup(q: Queryable, organizationId: string, group: { id: string; name: string }) {
  const [row] = await q.query<{ id: string }>(
    `INSERT INTO customer_groups (id, organization_id, name) VALUES ($1, $2, $3)
     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name
       WHERE customer_groups.organization_id = EXCLUDED.organization_id
     RETURNING id`,
    [group.id, organizationId, group.name],
  );
  if (!row) throw new AppError('conflict', { field: 'group.id' }, 'El grupo pertenece a otra organización.');
  return row.id;
}

async function readCustomer(q: Queryable, id: string): Promise<CustomerRow> {
  const [row] = await q.query<CustomerRow>(
    `SELECT c.id, c.external_id, c.name, c.type, c.active, c.created_at,
       CASE WHEN g.id IS NULL THEN NULL ELSE json_build_object('id', g.id, 'name', g.name) END AS "group"
     FROM customers c LEFT JOIN customer_groups g ON g.id = c.group_id
     WHERE c.id = $1`,
    [id],
  );
  if (!row) throw notFound();
  return row;
}

/** Creates or replaces a customer; a PUT on a deleted customer brings it back. */
export async function upsertCustomer(
  q: Queryable,
  organizationId: string,
  customerId: string,
  b: CustomerInput,
): Promise<Written<CustomerRow>> {
  await findOrganization(q, organizationId);
  const [current] = await q.query<{ organization_id: string; deleted_at: Date | null }>(
    'SELECT organization_id, deleted_at FROM customers WHERE id = $1 FOR UPDATE',
    [customerId],
  );
  if (current && current.organization_id !== organizationId) throw idOfAnotherOrganization();
  const groupId = b.group ? await upsertGroup(q, organizationId, b.group) : null;
  const values = [
    customerId,
    b.created_at ?? null,
    b.external_id ?? null,
    b.name ?? null,
    b.type,
    b.active ?? true,
    groupId,
  ];
  if (current) {
    await q.query(
      `UPDATE customers SET external_id = $3, name = $4, type = $5, active = $6, group_id = $7,
         created_at = coalesce($2::timestamptz, created_at), updated_at = now(), deleted_at = NULL
       WHERE id = $1`,
      values,
    );
  } else {
    await q.query(
      `INSERT INTO customers (id, created_at, external_id, name, type, active, group_id, organization_id)
       VALUES ($1, coalesce($2::timestamptz, now()), $3, $4, $5, $6, $7, $8)`,
      [...values, organizationId],
    );
  }
  return { row: await readCustomer(q, customerId), created: !current || current.deleted_at !== null };
}

/** Soft delete: the customer leaves the public API, its bookings keep it. */
export async function deleteCustomer(q: Queryable, organizationId: string, customerId: string) {
  const rows = await q.query(
    `UPDATE customers SET deleted_at = now(), updated_at = now()
     WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL RETURNING id`,
    [customerId, organizationId],
  );
  if (rows.length === 0) throw notFound();
}

type OwnedTable = 'drivers' | 'vehicles';

/** Creates or replaces a row of an organization-owned table whose columns are all in the body. */
async function upsertOwned<T>(
  q: Queryable,
  table: OwnedTable,
  organizationId: string,
  id: string,
  createdAt: string | undefined,
  columns: Record<string, unknown>,
): Promise<Written<T>> {
  await findOrganization(q, organizationId);
  const [current] = await q.query<{ organization_id: string }>(
    `SELECT organization_id FROM ${table} WHERE id = $1 FOR UPDATE`,
    [id],
  );
  if (current && current.organization_id !== organizationId) throw idOfAnotherOrganization();
  const names = Object.keys(columns);
  const values = [id, createdAt ?? null, ...Object.values(columns)];
  const returning = ['id', ...names, 'created_at'].join(', ');
  const [row] = current
    ? await q.query<T>(
        `UPDATE ${table} SET ${names.map((n, i) => `${n} = $${i + 3}`).join(', ')},
           created_at = coalesce($2::timestamptz, created_at), updated_at = now()
         WHERE id = $1 RETURNING ${returning}`,
        values,
      )
    : await q.query<T>(
        `INSERT INTO ${table} (id, created_at, ${names.join(', ')}, organization_id)
         VALUES ($1, coalesce($2::timestamptz, now()), ${names.map((_, i) => `$${i + 3}`).join(', ')},
           $${names.length + 3})
         RETURNING ${returning}`,
        [...values, organizationId],
      );
  return { row: row as T, created: !current };
}

async function deleteOwned(q: Queryable, table: OwnedTable, organizationId: string, id: string) {
  const rows = await q.query(`DELETE FROM ${table} WHERE id = $1 AND organization_id = $2 RETURNING id`, [
    id,
    organizationId,
  ]);
  if (rows.length === 0) throw notFound();
}

export function upsertDriver(q: Queryable, organizationId: string, driverId: string, b: DriverInput) {
  return upsertOwned<DriverRow>(q, 'drivers', organizationId, driverId, b.created_at, {
    external_id: b.external_id ?? null,
    name: b.name ?? null,
    nickname: b.nickname ?? null,
    phone: b.phone ?? null,
    active: b.active ?? true,
    status: b.status ?? null,
    has_app_access: b.has_app_access ?? false,
  });
}

export function upsertVehicle(q: Queryable, organizationId: string, vehicleId: string, b: VehicleInput) {
  return upsertOwned<VehicleRow>(q, 'vehicles', organizationId, vehicleId, b.created_at, {
    external_id: b.external_id ?? null,
    plate: b.plate ?? null,
    model: b.model ?? null,
    nickname: b.nickname ?? null,
    category: b.category ?? null,
    seats: b.seats ?? null,
    luggage: b.luggage ?? null,
    wheelchair_adapted: b.wheelchair_adapted ?? false,
    eco_label: b.eco_label ?? null,
    propulsion: b.propulsion ?? null,
    active: b.active ?? true,
  });
}

/** Bookings that had the driver keep existing without it (booking.assigned is announced). */
export const deleteDriver = (q: Queryable, organizationId: string, driverId: string) =>
  deleteOwned(q, 'drivers', organizationId, driverId);

export const deleteVehicle = (q: Queryable, organizationId: string, vehicleId: string) =>
  deleteOwned(q, 'vehicles', organizationId, vehicleId);

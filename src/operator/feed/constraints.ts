// The feed checks every reference before it writes, inside the same transaction; a constraint can
// still refuse the write when two requests race. That refusal is the client's 400 or 409 naming
// the field, never a 500.
import { PgCode, pgConstraint, pgErrorCode } from '../../db/db.js';
import { AppError } from '../../http/errors.js';

const CONFLICTS: Record<string, string> = {
  bookings_pkey: 'id',
  bookings_reference_key: 'reference',
  customers_pkey: 'id',
  drivers_pkey: 'id',
  vehicles_pkey: 'id',
  customer_groups_pkey: 'group.id',
};

const INVALID: Record<string, string> = {
  bookings_customer_id_fkey: 'customer_id',
  bookings_driver_id_fkey: 'driver_id',
  bookings_vehicle_id_fkey: 'vehicle_id',
  bookings_executor_organization_id_fkey: 'executor_organization_id',
  bookings_check: 'executor_organization_id',
  customers_group_id_fkey: 'group.id',
};

// The organization itself vanished while the request ran.
const GONE = new Set([
  'bookings_originator_organization_id_fkey',
  'customers_organization_id_fkey',
  'drivers_organization_id_fkey',
  'vehicles_organization_id_fkey',
  'customer_groups_organization_id_fkey',
]);

/** Rethrows a constraint violation as the client error it stands for; anything else unchanged. */
export function constraintToClientError(error: unknown): never {
  const code = pgErrorCode(error);
  const name = pgConstraint(error) ?? '';
  if (code === PgCode.uniqueViolation) {
    const field = CONFLICTS[name];
    throw new AppError(
      'conflict',
      field ? { field } : undefined,
      'Otra escritura simultánea ha usado el mismo valor; repita la petición.',
    );
  }
  // Class 22, data exception: a value the schema let through that PostgreSQL cannot store, such
  // as the character U+0000 in a string.
  if (code?.startsWith('22')) {
    throw new AppError(
      'validation_error',
      { field: 'body' },
      'Algún valor no se puede guardar (por ejemplo, el carácter U+0000).',
    );
  }
  if (code === PgCode.foreignKeyViolation && GONE.has(name)) throw new AppError('not_found');
  if (code === PgCode.foreignKeyViolation || code === PgCode.checkViolation) {
    const field = INVALID[name];
    throw new AppError(
      'validation_error',
      field ? { field } : undefined,
      field ? `${field} no es válido.` : undefined,
    );
  }
  throw error;
}

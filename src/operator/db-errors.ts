import { PgCode, pgErrorCode } from '../db/db.js';
import { AppError } from '../http/errors.js';

/** A unique index that refuses a write becomes a 409 naming the field, never a 500. */
export function uniqueViolationTo(field: string, message: string) {
  return (error: unknown): never => {
    if (pgErrorCode(error) === PgCode.uniqueViolation) throw new AppError('conflict', { field }, message);
    throw error;
  };
}

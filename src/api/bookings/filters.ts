// From the validated query of GET /bookings to the filters the SQL uses. The schema has already
// checked the date-time format; what is left is what the format admits but the database refuses
// or reads differently.

import type { BookingStatus } from '../../domain/bookings.js';
import { invalidParam } from '../../http/errors.js';
import type { BookingListQuery } from './schemas.js';

export interface BookingFilters {
  status?: BookingStatus;
  customer_id?: string;
  pickup_from?: Date;
  pickup_to?: Date;
  created_from?: Date;
  created_to?: Date;
}

const FRACTION = /[.,](\d+)/;

/**
 * An inclusive bound as a Date. Stored times have millisecond precision, so a finer lower bound is
 * rounded up and a finer upper bound down: the same rows match as with the exact value.
 */
export function timeBound(param: string, value: string, side: 'from' | 'to'): Date {
  const ms = Date.parse(value);
  const year = Number.isNaN(ms) ? 0 : new Date(ms).getUTCFullYear();
  // Year 0 and leap seconds pass the format check but name no instant the database can store.
  if (year < 1 || year > 9999) {
    throw invalidParam(param, `${param} no es una fecha y hora válida.`);
  }
  const digits = FRACTION.exec(value.slice(value.search(/[Tt ]/)))?.[1] ?? '';
  const finer = digits.length > 3 && /[1-9]/.test(digits.slice(3));
  return new Date(side === 'from' && finer ? ms + 1 : ms);
}

export function bookingFilters(q: BookingListQuery): BookingFilters {
  const f: BookingFilters = {};
  if (q.status !== undefined) f.status = q.status;
  if (q.customer_id !== undefined) f.customer_id = q.customer_id.toLowerCase();
  if (q.pickup_from !== undefined) f.pickup_from = timeBound('pickup_from', q.pickup_from, 'from');
  if (q.pickup_to !== undefined) f.pickup_to = timeBound('pickup_to', q.pickup_to, 'to');
  if (q.created_from !== undefined) f.created_from = timeBound('created_from', q.created_from, 'from');
  if (q.created_to !== undefined) f.created_to = timeBound('created_to', q.created_to, 'to');
  return f;
}

// The booking vocabulary of the contract, shared by the public API, the platform feed and the demo:
// status names (public, and the platform's internal Spanish names, which are stored and appear in
// events' `previous_status`), service types, vehicle categories and entry channels.
export const STATUS_TO_INTERNAL = {
  requested: 'solicitada',
  unconfirmed: 'no_segura',
  confirmed: 'confirmada',
  en_route: 'en_camino',
  in_progress: 'en_curso',
  completed: 'completada',
  cancelled: 'cancelada',
  no_show: 'no_show',
  rejected: 'rechazada',
} as const;

export type BookingStatus = keyof typeof STATUS_TO_INTERNAL;
export type InternalStatus = (typeof STATUS_TO_INTERNAL)[BookingStatus];

export const BOOKING_STATUSES = Object.keys(STATUS_TO_INTERNAL) as BookingStatus[];
export const INTERNAL_STATUSES = Object.values(STATUS_TO_INTERNAL) as InternalStatus[];

export const SERVICE_TYPES = ['transfer', 'hourly'] as const;
export const VEHICLE_CATEGORIES = ['sedan', 'van', 'sedan_vip', 'van_vip'] as const;
export const BOOKING_CHANNELS = [
  'customer_engine',
  'public_engine',
  'manual',
  'bulk_upload',
  'recurring',
  'api',
] as const;

const TO_PUBLIC = new Map<string, BookingStatus>(
  BOOKING_STATUSES.map((status) => [STATUS_TO_INTERNAL[status], status]),
);

export function publicStatus(internal: string): BookingStatus {
  const status = TO_PUBLIC.get(internal);
  // The table's CHECK admits only the nine internal names, so this is a broken invariant.
  if (!status) throw new Error(`unknown internal booking status ${internal}`);
  return status;
}

// SQL fragments the generator composes. Every generated value is a function of a row number,
// so a data set is reproduced exactly by running the same statements again.

/** The first moment of the data set; everything is created in the two years that follow. */
export const START = '2024-01-01T00:00:00Z';
export const SPAN_DAYS = 730;
export const SPAN_MS = SPAN_DAYS * 86_400_000;
/** The data set's "now": bookings picked up before it are past, after it upcoming. */
export const NOW_SQL = `(timestamptz '${START}' + interval '${SPAN_DAYS} days')`;

/** A non-negative 31-bit hash of `row` under `salt`: independent values per salt. */
export function h(row: string, salt: number): string {
  return `(hashint8extended(${row}::int8, ${salt}) & 2147483647)`;
}

/** A stable UUID (version 4 layout) from a text expression. */
export function uuidOf(text: string): string {
  return `(overlay(overlay(md5(${text}) placing '4' from 13) placing '8' from 17)::uuid)`;
}

/** One element of a text[] parameter chosen by a hash. */
export function pick(arrayParam: string, hash: string): string {
  return `(${arrayParam})[1 + ${hash} % cardinality(${arrayParam})]`;
}

/** An ISO 8601 string with milliseconds in UTC, the way the API writes date-times. */
export function iso(ts: string): string {
  return `to_char((${ts}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

export const orgUuid = (o: string) => uuidOf(`'o:' || ${o}`);
export const groupUuid = (o: string, j: string) => uuidOf(`'g:' || ${o} || ':' || ${j}`);
export const customerUuid = (o: string, k: string) => uuidOf(`'c:' || ${o} || ':' || ${k}`);
export const driverUuid = (o: string, k: string) => uuidOf(`'d:' || ${o} || ':' || ${k}`);
export const vehicleUuid = (o: string, k: string) => uuidOf(`'v:' || ${o} || ':' || ${k}`);
export const bookingUuid = (i: string) => uuidOf(`'b:' || ${i}`);

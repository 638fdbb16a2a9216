// timestamptz values as PostgreSQL writes them in text (DateStyle ISO), read into Dates without the
// regular expressions of pg's general parser: a page of 25 bookings holds about a hundred of them,
// and pg's parser took longer over them than the booking view over the whole page. Anything but the
// plain form (a year before 100 or after 9999, BC, infinity) goes to pg's own parser.
import pg from 'pg';

const TIMESTAMPTZ = 1184;
const general = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => Date | string;

const digit = (text: string, i: number) => text.charCodeAt(i) - 48;
const two = (text: string, i: number) => digit(text, i) * 10 + digit(text, i + 1);

/** `2025-03-04 10:11:12.345678+01` (minutes and seconds of the offset optional) to a Date. */
export function parseTimestamptz(text: string): Date {
  const n = text.length;
  // Fixed positions: YYYY-MM-DD HH:MM:SS
  if (
    n < 22 ||
    text.charCodeAt(4) !== 45 ||
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 32 ||
    text.charCodeAt(13) !== 58 ||
    text.charCodeAt(16) !== 58 ||
    text.charCodeAt(n - 1) === 67 // ...BC
  ) {
    return general(text) as Date;
  }
  const year = two(text, 0) * 100 + two(text, 2);
  let i = 19;
  let ms = 0;
  if (text.charCodeAt(i) === 46) {
    // Fraction: the first three digits are milliseconds; finer digits are cut, as pg's parser does.
    i += 1;
    let scale = 100;
    while (i < n) {
      const d = digit(text, i);
      if (d < 0 || d > 9) break;
      ms += d * scale;
      scale /= 10;
      i += 1;
    }
    ms = Math.floor(ms);
  }
  const sign = text.charCodeAt(i);
  if (year < 100 || (sign !== 43 && sign !== 45)) return general(text) as Date;
  let offset = two(text, i + 1) * 3600;
  if (i + 3 < n) offset += two(text, i + 4) * 60;
  if (i + 6 < n) offset += two(text, i + 7);
  const utc = Date.UTC(year, two(text, 5) - 1, two(text, 8), two(text, 11), two(text, 14), two(text, 17), ms);
  const value = new Date(utc - (sign === 45 ? -offset : offset) * 1000);
  return Number.isNaN(value.getTime()) ? (general(text) as Date) : value;
}

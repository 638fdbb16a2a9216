import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import pg from 'pg';
import { parseTimestamptz } from './timestamps.js';

const general = pg.types.getTypeParser(1184, 'text') as (text: string) => Date;
const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** A timestamptz as PostgreSQL writes it in text under DateStyle ISO. */
const timestamptz = fc
  .record({
    year: fc.integer({ min: 1, max: 9999 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 28 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    fraction: fc.option(fc.stringMatching(/^[0-9]{1,6}$/), { nil: undefined }),
    sign: fc.constantFrom('+', '-'),
    offsetHours: fc.integer({ min: 0, max: 15 }),
    offsetMinutes: fc.option(fc.constantFrom(0, 15, 30, 45), { nil: undefined }),
    offsetSeconds: fc.option(fc.integer({ min: 1, max: 59 }), { nil: undefined }),
  })
  .map(
    (t) =>
      `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)} ${pad(t.hour)}:${pad(t.minute)}:${pad(t.second)}` +
      `${t.fraction === undefined ? '' : `.${t.fraction}`}${t.sign}${pad(t.offsetHours)}` +
      `${t.offsetMinutes === undefined ? '' : `:${pad(t.offsetMinutes)}`}` +
      `${t.offsetMinutes !== undefined && t.offsetSeconds !== undefined ? `:${pad(t.offsetSeconds)}` : ''}`,
  );

test('reads every timestamptz text to the instant pg reads', () => {
  fc.assert(
    fc.property(timestamptz, (text) => {
      assert.equal(parseTimestamptz(text).getTime(), general(text).getTime(), text);
    }),
    { numRuns: 5000 },
  );
});

test('the forms outside the plain one read as pg reads them', () => {
  for (const text of [
    '2025-03-04 10:11:12+00',
    '2025-03-04 10:11:12.5+00',
    '0099-12-31 23:59:59+00',
    '0001-01-01 00:00:00+00 BC',
    '12345-01-01 00:00:00+00',
    'infinity',
    '-infinity',
  ]) {
    const ours = parseTimestamptz(text);
    const theirs = general(text);
    assert.equal(String(ours), String(theirs), text);
  }
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_RETRY_GAPS_S } from '../config.js';
import { isPermanent, outcomeOf } from './policy.js';

const GAPS = DEFAULT_RETRY_GAPS_S.map((s) => s * 1000);
const noJitter = () => 0;

test('a 2xx succeeds on any attempt', () => {
  for (const status of [200, 201, 204, 299]) {
    assert.deepEqual(outcomeOf(5, status, GAPS, noJitter), { status: 'succeeded', maxAttempts: 8 });
  }
});

test('failures wait 30 s, 1, 2, 4, 8, 16, 32 min, and the eighth is final', () => {
  const waits = [1, 2, 3, 4, 5, 6, 7].map((attempt) => {
    const o = outcomeOf(attempt, 500, GAPS, noJitter);
    assert.equal(o.status, 'failed');
    return o.status === 'failed' ? o.retryInMs / 1000 : -1;
  });
  assert.deepEqual(waits, [30, 60, 120, 240, 480, 960, 1920]);
  assert.deepEqual(outcomeOf(8, 500, GAPS, noJitter), { status: 'dead', maxAttempts: 8 });
  assert.deepEqual(outcomeOf(8, null, GAPS, noJitter), { status: 'dead', maxAttempts: 8 }, 'time-out');
  // A little over an hour in all, as the contract says.
  assert.equal(
    waits.reduce((a, b) => a + b, 0),
    3810,
  );
});

test('jitter only stretches a gap, by at most 10 %', () => {
  const o = outcomeOf(1, 503, GAPS, () => 0.999);
  assert.ok(o.status === 'failed' && o.retryInMs >= 30_000 && o.retryInMs <= 33_000);
});

test('a permanent 4xx stops at the third attempt; 408, 409, 425 and 429 do not', () => {
  for (const status of [400, 401, 403, 404, 410, 413, 422, 451]) {
    assert.equal(isPermanent(status), true, String(status));
    assert.equal(outcomeOf(2, status, GAPS, noJitter).status, 'failed');
    assert.deepEqual(outcomeOf(3, status, GAPS, noJitter), { status: 'dead', maxAttempts: 3 });
  }
  for (const status of [408, 409, 425, 429, 500, 502, 301, null]) {
    assert.equal(isPermanent(status), false, String(status));
    assert.equal(outcomeOf(3, status, GAPS, noJitter).status, 'failed');
  }
});

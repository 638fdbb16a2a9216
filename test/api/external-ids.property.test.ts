// Arbitrary input at PUT /bookings/{id}/external-id never makes the server fail: whatever the
// external_id or the Idempotency-Key, the answer is a 200, 400, 404 or 409, never a 5xx.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { startService, type TestService } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import type { Tenant } from '../support/tenants.js';
import { bookedTenant, linkPath } from './external-ids.fixture.js';

let svc: TestService;
let tenant: Tenant;
let bookings: string[];
before(async () => {
  // Hundreds of calls from one key: the rate limits are not what this file tests.
  const roomy = '1000000';
  svc = await startService({
    SVC_RATE_PER_KEY: roomy,
    SVC_RATE_PER_ORGANIZATION: roomy,
    SVC_RATE_PER_ENDPOINT: roomy,
  });
  const booked = await bookedTenant(svc);
  tenant = booked.tenant;
  const second = randomUUID();
  await putBooking(svc, tenant.organization.id, {}, second);
  // Two bookings (values collide: 409) and one that does not exist (404).
  bookings = [booked.bookingId, second, randomUUID()];
});
after(() => svc.close());

const RUNS = { numRuns: 200, seed: 20260601, endOnFailure: true };
const ALLOWED = new Set([200, 400, 404, 409]);

const controlAndAscii = fc.string({
  unit: fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)),
  maxLength: 260,
});

/** Strings of every kind: full Unicode with lone surrogates, control characters, near and far over the limits. */
const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ unit: 'grapheme', maxLength: 120 }),
  controlAndAscii,
  fc.string({ unit: 'binary-ascii', minLength: 190, maxLength: 270 }),
  fc.string({ unit: 'binary', minLength: 2000, maxLength: 20_000 }),
  fc.constantFrom('', ' ', '\u0000', '\ud800', '\udfff', 'a\r\nX-Injected: 1', '🚕'.repeat(100), ' x', 'x '),
);

const status = async (bookingId: string, body: unknown, idempotencyKey?: string) => {
  const res = await svc.call('PUT', linkPath(bookingId), {
    key: tenant.key,
    body,
    headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
  });
  assert.ok(ALLOWED.has(res.status), `${res.status} ${res.text}`);
  if (res.status !== 200) assert.equal(typeof res.body.error.code, 'string');
  return res.status;
};

describe('PUT external-id under arbitrary input', () => {
  test('any external_id (and any JSON in its place) answers 200, 400, 404 or 409', async () => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(0, 0, 1, 2),
        fc.oneof({ weight: 5, arbitrary: anyString }, { weight: 1, arbitrary: fc.jsonValue() }),
        async (which, value) => {
          seen.add(await status(bookings[which]!, { external_id: value }));
        },
      ),
      RUNS,
    );
    assert.ok(seen.has(200) && seen.has(400), `statuses seen: ${[...seen]}`);
  });

  test('any Idempotency-Key answers 200, 400, 404 or 409', async () => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(0, 1, 2),
        anyString,
        fc.constantFrom('K-1', 'K-2', 'shared'),
        async (which, key, value) => {
          seen.add(await status(bookings[which]!, { external_id: value }, key));
        },
      ),
      RUNS,
    );
    assert.ok(seen.has(400), `statuses seen: ${[...seen]}`);
  });

  test('valid keys reused with other bodies answer 409 idempotency_conflict, never a 5xx', async () => {
    const codes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(0, 1),
        fc.constantFrom('reuse-a', 'reuse-b', 'reuse-c'),
        fc.constantFrom('V-1', 'V-2', 'V-3'),
        async (which, key, value) => {
          const res = await svc.call('PUT', linkPath(bookings[which]!), {
            key: tenant.key,
            body: { external_id: value },
            headers: { 'idempotency-key': key },
          });
          assert.ok(ALLOWED.has(res.status), `${res.status} ${res.text}`);
          if (res.status === 409) codes.add(res.body.error.code);
        },
      ),
      { ...RUNS, numRuns: 60 },
    );
    assert.ok(codes.has('idempotency_conflict'), [...codes].join(','));
  });
});

// The plan decides every booking's organization and number; the SQL trusts these properties.
// Not part of `npm test` (bench/ is not collected): node scripts/test.mjs bench/lib/plan.test.ts
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apportion, makePlan, type Plan } from './plan.js';

/** Booking i's organization and its number there, exactly as lib/bookings.ts computes them. */
function numbering(plan: Plan): Map<number, number[]> {
  const byOrg = new Map<number, number[]>();
  for (let i = 0; i < plan.bookings; i++) {
    const slot = i % plan.slots;
    const o = plan.slotOrg[slot] as number;
    const k = Math.floor(i / plan.slots) * (plan.weight[o] as number) + (plan.slotRank[slot] as number);
    byOrg.set(o, [...(byOrg.get(o) ?? []), k]);
  }
  return byOrg;
}

test('the default data set gives the largest organization exactly 100,000 of 1,000,000', () => {
  const plan = makePlan({ bookings: 1_000_000, organizations: 200 });
  const counts = plan.organizations.map((o) => o.bookings);
  assert.equal(
    counts.reduce((a, b) => a + b, 0),
    1_000_000,
  );
  assert.equal(counts[0], 100_000);
  assert.ok(counts.slice(1).every((c) => c < 100_000 && c > 0));
  assert.deepEqual(
    [...counts.slice(1)].sort((a, b) => b - a),
    counts.slice(1),
    'a tail, largest first',
  );
});

test('every organization numbers its bookings 0..n-1 with no gap or repeat', () => {
  for (const [bookings, organizations] of [
    [2500, 12],
    [3001, 3],
    [999, 1],
  ] as const) {
    const plan = makePlan({ bookings, organizations });
    const byOrg = numbering(plan);
    plan.organizations.forEach((org) => {
      const ks = [...(byOrg.get(org.index) ?? [])].sort((a, b) => a - b);
      assert.deepEqual(
        ks,
        Array.from({ length: org.bookings }, (_, k) => k),
        `organization ${org.index} of ${organizations}`,
      );
    });
  }
});

test('organizations interleave in time instead of coming one after another', () => {
  const plan = makePlan({ bookings: 1000, organizations: 200 });
  const firstHundred = new Set(plan.slotOrg.slice(0, 100));
  assert.ok(firstHundred.size > 30, `only ${firstHundred.size} organizations in the first 100 bookings`);
});

test('the plan is deterministic and codes share one width', () => {
  assert.deepEqual(
    makePlan({ bookings: 5000, organizations: 200 }),
    makePlan({ bookings: 5000, organizations: 200 }),
  );
  const codes = makePlan({ bookings: 5000, organizations: 200 }).organizations.map((o) => o.code);
  assert.equal(new Set(codes.map((c) => c.length)).size, 1);
  assert.ok(codes.every((c) => /^[1-9][0-9]{1,5}$/.test(c)));
});

test('apportion keeps the total and the minimum', () => {
  const parts = apportion(900, [1 / 3, 1 / 4, 1 / 5, 1 / 6], 1);
  assert.equal(
    parts.reduce((a, b) => a + b, 0),
    900,
  );
  assert.ok(parts.every((p) => p >= 1));
  assert.throws(() => apportion(3, [1, 1, 1, 1], 1));
});

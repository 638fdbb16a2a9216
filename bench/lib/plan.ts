// The shape of the data set, decided in JavaScript before any SQL runs: how many bookings each
// organization gets and how they interleave in time. Pure and deterministic (no I/O, no Math.random),
// so the same options always describe the same data set.

import { seededRandom } from '../../src/demo/random.js';

export interface PlanOptions {
  bookings: number;
  organizations: number;
}

export interface OrganizationPlan {
  /** 0-based; organization 0 is the largest. */
  index: number;
  code: string;
  bookings: number;
  customers: number;
  groups: number;
  drivers: number;
  vehicles: number;
}

export interface Plan {
  bookings: number;
  organizations: OrganizationPlan[];
  /**
   * Bookings are numbered 0..bookings-1 in creation order. Booking i belongs to organization
   * slotOrg[i % slots] and is that organization's number (i div slots) * weight + slotRank[i % slots]
   * (0-based), so every organization gets a dense run of numbers and the organizations interleave
   * in time as they would in production.
   */
  slots: number;
  slotOrg: number[];
  slotRank: number[];
  /** Slots each organization holds. */
  weight: number[];
}

/** The largest organization holds this share of all bookings. */
const LARGEST_SHARE = 0.1;

/** Largest-remainder rounding of `total` over `weights`, each part at least `min`. */
export function apportion(total: number, weights: readonly number[], min: number): number[] {
  const spare = total - min * weights.length;
  if (spare < 0) throw new Error(`cannot give ${weights.length} parts at least ${min} out of ${total}`);
  const sum = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((w) => (spare * w) / sum);
  const parts = exact.map((x) => Math.floor(x));
  let left = spare - parts.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, r: x - Math.floor(x) })).sort((a, b) => b.r - a.r || a.i - b.i);
  for (const { i } of order) {
    if (left === 0) break;
    parts[i] = (parts[i] as number) + 1;
    left -= 1;
  }
  return parts.map((p) => p + min);
}

/** Organization codes: same width for every organization, so booking numbers never collide. */
function codeOf(index: number, organizations: number): string {
  const width = Math.max(3, String(organizations).length + 1);
  return String(10 ** (width - 1) + index);
}

export function makePlan(options: PlanOptions): Plan {
  const { bookings, organizations: n } = options;
  if (!Number.isSafeInteger(bookings) || bookings < 1) throw new Error('bookings must be a positive integer');
  if (!Number.isSafeInteger(n) || n < 1 || n > 99_999) throw new Error('organizations must be 1 to 99999');

  // 1,000 slots (or ten per organization): the largest organization holds a tenth of them, the
  // others share the rest on a long tail (weight 1/(rank+2)), each at least one slot. A handful of
  // organizations cannot make a tenth the largest share, so they follow a plain Zipf law instead.
  const slots = Math.max(1000, n * 10);
  const largest = Math.round(slots * LARGEST_SHARE);
  const zipf = (count: number, first: number) => Array.from({ length: count }, (_, r) => 1 / (r + first));
  const weight =
    n <= 10 ? apportion(slots, zipf(n, 1), 1) : [largest, ...apportion(slots - largest, zipf(n - 1, 3), 1)];

  const slotOrg = weight.flatMap((w, o) => Array.from({ length: w }, () => o));
  const random = seededRandom(20_240_101).next;
  for (let i = slotOrg.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [slotOrg[i], slotOrg[j]] = [slotOrg[j] as number, slotOrg[i] as number];
  }
  const seen = new Array<number>(n).fill(0);
  const slotRank = slotOrg.map((o) => {
    const rank = seen[o] as number;
    seen[o] = rank + 1;
    return rank;
  });

  // Exact booking count per organization: full rounds of the slot table, then the partial round.
  const counts = weight.map((w) => w * Math.floor(bookings / slots));
  for (let s = 0; s < bookings % slots; s++) {
    const o = slotOrg[s] as number;
    counts[o] = (counts[o] as number) + 1;
  }

  const organizations = counts.map((count, index) => {
    const customers = Math.max(5, Math.round(count / 50));
    return {
      index,
      code: codeOf(index, n),
      bookings: count,
      customers,
      groups: Math.max(1, Math.round(customers / 25)),
      drivers: Math.max(3, Math.round(count / 400)),
      vehicles: Math.max(3, Math.round(count / 450)),
    };
  });
  return { bookings, organizations, slots, slotOrg, slotRank, weight };
}

// A worker's local queue: what starts, in what order, within which limits, and what it lets go.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Claimed } from './engine.js';
import { localQueue } from './local-queue.js';

let n = 0;
const delivery = (org: string, webhook: string, armed = true, others_sent = 0) =>
  ({ id: `d${++n}`, organization_id: org, webhook_id: webhook, armed, others_sent }) as Claimed;

const queue = (budget = 8, bound = 2) => localQueue({ budget, bound, startWithinMs: 1000 });

/** Takes every delivery that may start at `now`: their ids. */
function drain(q: ReturnType<typeof queue>, now = 0): string[] {
  const ids: string[] = [];
  for (let h = q.take(now); h !== null; h = q.take(now)) ids.push(h.claimed.id);
  return ids;
}

test('a webhook runs at most its bound, in claim order; the next starts when one ends', () => {
  const q = queue(8, 2);
  const ds = [1, 2, 3].map(() => delivery('o1', 'w1'));
  for (const d of ds) q.hold(d, 60_000);
  assert.deepEqual(drain(q), [ds[0]?.id, ds[1]?.id]);
  assert.equal(q.running, 2);
  assert.equal(q.queued, 1);
  q.end(ds[0] as Claimed);
  assert.deepEqual(drain(q), [ds[2]?.id]);
  assert.equal(q.room(), 32 - 2, 'four times the budget, less what it holds');
});

test('only armed deliveries start; an exchange arms all of a webhook that answers, one per free slot of others', () => {
  const q = queue(8, 2);
  const ds = [1, 2, 3, 4, 5].map((i) => delivery('o1', 'w1', i <= 2));
  for (const d of ds) q.hold(d, 60_000);
  assert.equal(drain(q).length, 2);
  assert.deepEqual(
    q.toArm().ids,
    [],
    'both slots busy, nothing ended: a hanging receiver gets nothing armed',
  );
  q.end(ds[0] as Claimed);
  assert.deepEqual(drain(q), [], 'the next is not armed yet');
  const arming = q.toArm().ids;
  assert.deepEqual(arming, [ds[2]?.id, ds[3]?.id, ds[4]?.id], 'an attempt ended: all it holds');
  assert.deepEqual(drain(q), [], 'armed only once the exchange is written');
  q.armed(arming);
  assert.deepEqual(drain(q), [ds[2]?.id]);
  q.end(ds[1] as Claimed);
  assert.deepEqual(drain(q), [ds[3]?.id], 'armed ahead: starts as its slot frees, with no exchange');
  const quiet = queue(8, 2);
  const qs = [1, 2, 3, 4].map(() => delivery('o2', 'w2', false));
  for (const d of qs) quiet.hold(d, 60_000);
  assert.deepEqual(quiet.toArm().ids, [qs[0]?.id, qs[1]?.id], 'nothing ended: one per free slot');
});

test('the budget is shared in turns, no organization above its fair share while another holds work', () => {
  const q = queue(4, 4);
  const big = [1, 2, 3, 4, 5, 6].map(() => delivery('big', 'w1'));
  const small = [1, 2].map(() => delivery('small', 'w2'));
  for (const d of [...big, ...small]) q.hold(d, 60_000);
  const started = drain(q);
  assert.equal(started.length, 4);
  assert.equal(started.filter((id) => small.some((d) => d.id === id)).length, 2, 'two each');
  // Alone, an organization keeps an eighth of the budget free for a newcomer.
  const alone = queue(8, 8);
  for (let i = 0; i < 10; i++) alone.hold(delivery('o', 'w'), 60_000);
  assert.equal(drain(alone).length, 7);
});

test('a webhook it held nothing of (one just taken over) goes before those that had a turn', () => {
  const q = queue(1, 4);
  const [a1, b1, a2, b2] = ['w1', 'w2', 'w1', 'w2'].map((w) => delivery('o1', w)) as Claimed[];
  for (const d of [a1, b1, a2, b2]) q.hold(d as Claimed, 60_000);
  for (const d of [a1, b1]) {
    assert.deepEqual(drain(q), [d?.id], 'the webhooks take turns');
    q.end(d as Claimed);
  }
  const gained = delivery('o1', 'taken');
  q.hold(gained, 60_000);
  assert.deepEqual(drain(q), [gained.id], 'before w1 and w2, which each had a turn');
  q.end(gained);
  assert.deepEqual(drain(q), [a2?.id], 'then the turns go on');
});

test('what it lets go is given back unsent: dropped, inactive, or too near its lease end', () => {
  const q = queue(8, 1);
  const a = delivery('o1', 'w1');
  const b = delivery('o1', 'w1');
  const c = delivery('o2', 'w2');
  q.hold(a, 60_000);
  q.hold(b, 60_000);
  q.hold(c, 1500);
  assert.deepEqual(drain(q, 600), [a.id], 'c has 900 ms of lease left, under the 1000 an attempt needs');
  assert.deepEqual(q.released(), [c.id]);
  q.drop((d) => d.webhook_id !== 'w1');
  assert.deepEqual(q.released(), [b.id], 'a queued delivery of a webhook let go; the one in flight stays');
  assert.deepEqual(q.runningIds(), [a.id]);
  q.untold([b.id]);
  assert.deepEqual(q.released(), [b.id], 'an exchange that failed lets them go at the next');
  assert.equal(q.queued, 0);
});

test('attempts a previous owner still has in flight count against the bound until an exchange says they ended', () => {
  const q = queue(8, 2);
  const ds = [1, 2, 3].map(() => delivery('o1', 'w1', true, 1));
  for (const d of ds) q.hold(d, 60_000);
  assert.deepEqual(drain(q), [ds[0]?.id], 'one of two slots: the other owner holds one');
  assert.deepEqual(q.toArm().shared, ['w1'], 'the next exchange asks again');
  q.othersInFlight(new Map([['w1', 0]]));
  assert.deepEqual(drain(q), [ds[1]?.id]);
  assert.deepEqual(q.toArm().shared, []);
});

test("nothing is armed into slots a previous owner's attempts hold; armed once they end", () => {
  const q = queue(8, 2);
  const ds = [1, 2, 3].map(() => delivery('o1', 'w1', false, 2));
  for (const d of ds) q.hold(d, 60_000);
  assert.deepEqual(q.toArm().ids, [], "both slots are the other owner's");
  assert.equal(q.othersInFlight(new Map([['w1', 2]])), false, 'nothing freed');
  assert.equal(q.othersInFlight(new Map([['w1', 1]])), true, 'a slot freed: arm at the next exchange');
  assert.deepEqual(q.toArm().ids, [ds[0]?.id]);
});

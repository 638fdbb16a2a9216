// A worker's assignment: one beat at a time, one timer for the next, none left once it has left.
// The database's side (delivery_worker_beat, _leave) is tested in test/webhooks/engine.test.ts;
// here a table of the statements it was sent stands for it, each beat answered when the test says.
// A process of its own: it counts the process's timers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Queryable } from '../db/db.js';
import { assignment } from './assignment.js';

/** Beats wait until `answer` is called; leaves answer at once. */
function database() {
  const sent: string[] = [];
  const waiting: (() => void)[] = [];
  let parts = [1, 2];
  const q: Queryable = {
    async query<T>(sql: string) {
      const beat = sql.includes('delivery_worker_beat');
      sent.push(beat ? 'beat' : 'leave');
      if (beat) await new Promise<void>((resolve) => waiting.push(resolve));
      return [{ parts }] as T[];
    },
    exec: async () => {},
  };
  return {
    q,
    sent,
    /** Answers the beat in flight (waiting for it to be sent), giving `next` as its partitions. */
    async answer(next = parts) {
      parts = next;
      while (waiting.length === 0) await new Promise((r) => setImmediate(r));
      waiting.shift()?.();
      await new Promise((r) => setImmediate(r));
    },
  };
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
const worker = { id: 'w1', host: 'test', pid: 1, build: 'test' };

test('a beat asked for during a beat runs once after it; after leave no timer holds the process', async () => {
  const db = database();
  const before = timers();
  const a = assignment(db.q, worker, { beatMs: 60_000, leaseMs: 180_000 });
  let changes = 0;
  const started = a.start(
    () => changes++,
    (e) => assert.fail(String(e)),
  );
  while (db.sent.length === 0) await new Promise((r) => setImmediate(r));
  a.soon();
  a.soon();
  await db.answer();
  await started;
  assert.deepEqual(a.partitions, [1, 2]);
  assert.ok(a.owns(2) && !a.owns(3));
  await db.answer([3]);
  assert.deepEqual(db.sent, ['beat', 'beat'], 'two calls during the first beat: one more beat');
  assert.equal(changes, 2);
  assert.ok(a.owns(3) && !a.owns(1));
  assert.equal(timers(), before + 1, 'one timer for the next beat, not one per beat');
  await a.leave();
  assert.deepEqual(db.sent, ['beat', 'beat', 'leave']);
  assert.deepEqual(a.partitions, []);
  assert.equal(timers(), before, 'nothing left to hold the process up');
  a.soon();
  assert.deepEqual(db.sent, ['beat', 'beat', 'leave'], 'no beat after leaving');
});

// The engine's functions (src/db/engine.sql), called as a worker calls them, on both databases: how
// the partitions are divided among workers, what a claim takes, and what an exchange writes.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import {
  beat,
  type ClaimRequest,
  exchange,
  giveBack,
  leave,
  type Outcome,
  partitionOf,
  releaseExpiredLeases,
} from '../../src/delivery/engine.js';
import { publishEvents } from '../../src/delivery/publish.js';
import { putBooking } from '../support/feed.js';
import { createWebhook, succeededOutcome, webhookService, webhookTenant } from '../support/webhooks.js';

const { svc, receiver } = await webhookService();
const q = svc.db;
const ALL = Array.from({ length: 64 }, (_, i) => i);

const worker = (id: string = randomUUID()) => ({ id, host: 'test', pid: 1, build: 'test' });
/** The worker the tests claim as: alone after drain(), it owns every partition. */
const lone = worker();

const claim = (over: Partial<ClaimRequest> = {}): ClaimRequest => ({
  worker: lone.id,
  leaseMs: 30_000,
  armed: [],
  released: [],
  partitions: ALL,
  take: 100,
  hold: 2,
  bound: 1,
  answering: [],
  shared: [],
  budget: 100,
  busy: new Map(),
  ...over,
});

/** A tenant with one webhook and `n` deliveries due to it. */
async function backlog(n: number) {
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url(`/e/${randomUUID()}`), ['booking.created']);
  for (let i = 0; i < n; i++) await putBooking(svc, t.organization.id);
  await publishEvents(q);
  return { t, hook };
}

/** Frees every lease and empties the queue, so each test starts from a quiet engine, owned by `lone` alone unless told. */
async function drain(owned = true) {
  await q.query('DELETE FROM delivery_queue');
  await q.query('DELETE FROM delivery_workers');
  if (owned) await beat(q, lone, 60_000);
}

/** Hands the partitions of `webhooks` (all of them by default) to `to`, as beats do once a worker joined. */
async function handOver(to: ReturnType<typeof worker>, webhooks?: string[]) {
  await beat(q, to, 60_000);
  await q.query(
    `UPDATE delivery_partitions SET owner = $1, assigned = $1
     WHERE $2::uuid[] IS NULL OR partition IN (SELECT webhook_partition(h) FROM unnest($2::uuid[]) AS h)`,
    [to.id, webhooks ? `{${webhooks.join(',')}}` : null],
  );
}

test('every function of engine.sql is defined on the database, and none of the earlier engine', async () => {
  const sql = await readFile(new URL('../../src/db/engine.sql', import.meta.url), 'utf8');
  const declared = [...sql.matchAll(/CREATE OR REPLACE FUNCTION (\w+)\(/g)].map((m) => m[1]).sort();
  const defined = await q.query<{ name: string }>(
    `SELECT DISTINCT p.proname AS name FROM pg_proc p
     WHERE p.pronamespace = current_schema()::regnamespace AND p.proname = ANY ($1::text[])`,
    [declared],
  );
  assert.deepEqual(defined.map((r) => r.name).sort(), declared);
  const gone = await q.query(
    `SELECT 1 FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
       AND proname IN ('claim_room', 'claim_slots')`,
  );
  assert.equal(gone.length, 0, 'the earlier claim functions are dropped');
});

test('every function of the engine can be called', async () => {
  await drain(false);
  const w = worker();
  assert.equal((await beat(q, w, 10_000)).length, 64, 'a lone worker owns every partition');
  const [published] = await q.query<{ busy: boolean }>('SELECT * FROM publish_outbox(10, false)');
  assert.equal(published?.busy, false);
  const [id] = await q.query<{ id: string }>('SELECT ordered_event_id(1700000000000, 3) AS id');
  assert.match(id?.id ?? '', /^[0-9a-f-]{36}$/);
  const done = await exchange(q, [], claim({ worker: w.id }));
  assert.deepEqual(done.claimed, []);
  assert.equal(await giveBack(q, w.id, [randomUUID()], 'test'), 0);
  const [kept] = await q.query<{ n: number }>('SELECT delivery_housekeeping() AS n');
  assert.equal(kept?.n, 0);
  const [p] = await q.query<{ p: number }>(
    `SELECT webhook_partition('00000000-0000-4000-8000-0000000000ff') AS p`,
  );
  assert.equal(p?.p, 255 % 64);
  await leave(q, w.id);
  const [row] = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM delivery_partitions WHERE owner IS NOT NULL',
  );
  assert.equal(row?.n, 0, 'a worker that leaves frees its partitions at once');
});

test('the partitions are divided among the live workers, each owned by one; a dead one’s are taken', async () => {
  await drain(false);
  const [a, b, c] = [worker(), worker(), worker()];
  await beat(q, a, 10_000);
  await beat(q, b, 10_000);
  await beat(q, c, 10_000);
  // a gave up partitions at its second beat; b and c took them at theirs.
  const owned = new Map<string, number[]>();
  for (let round = 0; round < 2; round++) {
    for (const w of [a, b, c]) owned.set(w.id, await beat(q, w, 10_000));
  }
  const shares = [...owned.values()].map((p) => p.length).sort();
  assert.deepEqual(shares, [21, 21, 22]);
  const all = [...owned.values()].flat().sort((x, y) => x - y);
  assert.deepEqual(all, ALL, 'every partition owned, none twice');

  // c stops beating: once its lease has passed, the next beat of another frees its partitions.
  await q.query(`UPDATE delivery_workers SET seen_at = now() - interval '11 seconds' WHERE id = $1`, [c.id]);
  const first = await beat(q, a, 10_000);
  const second = await beat(q, b, 10_000);
  const again = await beat(q, a, 10_000);
  assert.equal(first.length + second.length >= 64 - 21, true);
  assert.deepEqual(
    [...again, ...second].sort((x, y) => x - y),
    ALL,
    'the two live ones own all 64',
  );
  assert.deepEqual([again.length, second.length].sort(), [32, 32]);
});

test('the partitions are divided by the webhooks in them, and a worker joining moves few', async () => {
  await drain(false);
  await q.query('UPDATE delivery_partitions SET owner = NULL, assigned = NULL');
  // 24 webhooks, all in partitions 0 to 3: a division by the partitions' number would give them all
  // to the worker with partitions 0 to 31.
  const t = await webhookTenant(svc);
  const model = await createWebhook(svc, t, receiver.url('/division'));
  const others = await q.query<{ id: string }>(
    'UPDATE webhooks SET active = false WHERE active AND id <> $1 RETURNING id',
    [model.id],
  );
  for (let i = 1; i < 24; i++) {
    const id = `${randomUUID().slice(0, -2)}${(((i % 4) + 64 * (i % 3)) & 255).toString(16).padStart(2, '0')}`;
    await q.query(
      `INSERT INTO webhooks SELECT (jsonb_populate_record(NULL::webhooks, to_jsonb(w) || jsonb_build_object('id', $2::text))).*
       FROM webhooks w WHERE w.id = $1`,
      [model.id, id],
    );
  }
  await q.query(`UPDATE webhooks SET id = $2 WHERE id = $1`, [model.id, `${model.id.slice(0, -2)}00`]);
  const hooksOf = async (parts: number[]) => {
    const [row] = await q.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhooks WHERE active AND webhook_partition(id) = ANY ($1::smallint[])',
      [`{${parts.join(',')}}`],
    );
    return row?.n ?? 0;
  };
  const [a, b, c] = [worker(), worker(), worker()];
  const beats = async (ws: ReturnType<typeof worker>[]) => {
    const owned = new Map<string, number[]>();
    for (let round = 0; round < 2; round++) for (const w of ws) owned.set(w.id, await beat(q, w, 10_000));
    return owned;
  };
  const two = await beats([a, b]);
  assert.deepEqual(
    await Promise.all([...two.values()].map(hooksOf)),
    [12, 12],
    'each of two workers has half the webhooks',
  );
  assert.deepEqual(
    [...two.values()].flat().sort((x, y) => x - y),
    ALL,
    'every partition owned, none twice',
  );
  const three = await beats([a, b, c]);
  const hooks = await Promise.all([...three.values()].map(hooksOf));
  assert.ok(Math.max(...hooks) - Math.min(...hooks) <= 6, `at most one partition's webhooks apart: ${hooks}`);
  const moved = [a, b].reduce(
    (n, w) => n + (two.get(w.id) ?? []).filter((p) => !(three.get(w.id) ?? []).includes(p)).length,
    0,
  );
  assert.ok(moved <= 24, `a third worker takes about a third of the partitions: ${moved} moved`);
  await q.query('DELETE FROM webhooks WHERE organization_id = $1', [t.organization.id]);
  await q.query('UPDATE webhooks SET active = true WHERE id = ANY ($1::uuid[])', [
    `{${others.map((o) => o.id).join(',')}}`,
  ]);
});

test('a dead worker’s leases go back to the queue, the attempt counted only when it was sent', async () => {
  await drain(false);
  const { hook } = await backlog(2);
  const dead = worker();
  await beat(q, dead, 10_000);
  const got = await exchange(q, [], claim({ worker: dead.id }));
  assert.equal(got.claimed.length, 2, 'one to send, one claimed ahead');
  assert.deepEqual(
    got.claimed.map((c) => [c.attempt, c.armed]),
    [
      [1, true],
      [1, false],
    ],
    'the claim arms what the free slot takes (a bound of 1)',
  );
  const [sent, ahead] = got.claimed.map((c) => c.id);
  await q.query(`UPDATE delivery_workers SET seen_at = now() - interval '11 seconds' WHERE id = $1`, [
    dead.id,
  ]);
  await beat(q, worker(), 10_000);
  const rows = await q.query<{ id: string; status: string; attempt: number; last_error: string | null }>(
    'SELECT id, status, attempt, last_error FROM webhook_deliveries WHERE webhook_id = $1',
    [hook.id],
  );
  const d = rows.find((r) => r.id === sent);
  assert.equal(d?.status, 'failed');
  assert.equal(d?.attempt, 1, 'the attempt sent counts: the receiver may have had it');
  assert.match(d?.last_error ?? '', /interrumpido/);
  const unsent = rows.find((r) => r.id === ahead);
  assert.deepEqual(
    { status: unsent?.status, attempt: unsent?.attempt, last_error: unsent?.last_error },
    { status: 'pending', attempt: 0, last_error: null },
    'a lease never sent is as it was before its claim',
  );
  const queued = await q.query<{ leased: boolean; sent: boolean }>(
    'SELECT lease_owner IS NOT NULL AS leased, sent FROM delivery_queue WHERE webhook_id = $1',
    [hook.id],
  );
  assert.deepEqual(
    queued,
    [
      { leased: false, sent: false },
      { leased: false, sent: false },
    ],
    'both due again, for the new owner',
  );
});

test('leases a worker lets go unsent go back uncounted, at once and in their order', async () => {
  await drain();
  const { hook } = await backlog(2);
  const w = lone.id;
  const ids = (await exchange(q, [], claim({ worker: w }))).claimed.map((c) => c.id);
  assert.equal(ids.length, 2);
  await exchange(q, [], claim({ worker: randomUUID(), released: ids, take: 0 }));
  assert.deepEqual((await exchange(q, [], claim())).claimed, [], 'only the lease holder lets a lease go');
  await exchange(q, [], claim({ worker: w, released: ids, take: 0 }));
  const next = await exchange(q, [], claim());
  assert.deepEqual(
    next.claimed.map((c) => [c.id, c.attempt]),
    ids.map((id) => [id, 1]),
    'claimed again in the same order, still at their first attempt',
  );
  assert.equal(next.claimed[0]?.webhook_id, hook.id);
});

test('a claim tells the attempts a previous owner still has in flight at the webhook, and an exchange reads them again', async () => {
  await drain();
  const { hook } = await backlog(5);
  const previous = lone.id;
  const before = await exchange(q, [], claim({ worker: previous, take: 1 }));
  assert.equal(before.claimed[0]?.armed, true, 'the previous owner has one attempt in flight');
  const owner = worker();
  await handOver(owner);
  const next = await exchange(q, [], claim({ worker: owner.id, hold: 4 }));
  assert.deepEqual(
    next.claimed.map((c) => [c.others_sent, c.armed]),
    [
      [1, false],
      [1, false],
      [1, false],
    ],
    'it takes up to its hold of leases, arms none (the bound of 1 is taken), and is told of the other',
  );
  assert.equal(await releaseExpiredLeases(q), 0, 'leases still running are left alone');
  const [p] = await q.query<{ p: number }>('SELECT webhook_partition($1) AS p', [hook.id]);
  assert.deepEqual(next.backlog, [p?.p], 'deliveries are due there, waiting for room');
  assert.equal(partitionOf(hook.id), p?.p, 'the worker computes the partition as the database does');
  const still = await exchange(q, [], claim({ worker: owner.id, take: 0, shared: [hook.id] }));
  assert.deepEqual([...still.shared], [[hook.id, 1]]);
  // The previous owner's attempt ends: nothing of the other's is in flight any more.
  const after = await exchange(q, before.claimed.map(succeededOutcome), claim({ worker: previous, take: 0 }));
  assert.deepEqual([...after.written], [before.claimed[0]?.id]);
  const clear = await exchange(q, [], claim({ worker: owner.id, take: 0, shared: [hook.id] }));
  assert.deepEqual([...clear.shared], [[hook.id, 0]]);
});

test('a worker arms and claims nothing in a partition it no longer owns, though no beat of its own told it', async () => {
  await drain();
  const { hook } = await backlog(4);
  const got = await exchange(q, [], claim({ take: 2 }));
  assert.deepEqual(
    got.claimed.map((c) => c.armed),
    [true, false],
    'one sent, one claimed ahead (a bound of 1)',
  );
  const [sent, ahead] = got.claimed;
  assert.ok(sent && ahead);
  // Another worker joined and the beats moved the webhook's partition to it.
  const next = worker();
  await handOver(next, [hook.id]);
  const late = await exchange(
    q,
    [succeededOutcome(sent)],
    claim({ armed: [ahead.id], answering: [hook.id] }),
  );
  assert.deepEqual([...late.written], [sent.id], 'what it sent is written all the same');
  assert.deepEqual([...late.unarmed], [ahead.id], 'the lease ahead is not armed: the worker lets it go');
  assert.deepEqual(late.claimed, [], 'nothing more is claimed there');
  const [row] = await q.query<{ sent: boolean }>('SELECT sent FROM delivery_queue WHERE id = $1', [ahead.id]);
  assert.equal(row?.sent, false);
  await exchange(q, [], claim({ released: [ahead.id], take: 0 }));
  const theirs = await exchange(q, [], claim({ worker: next.id, bound: 2 }));
  assert.deepEqual(
    theirs.claimed.map((c) => [c.id === ahead.id, c.armed, c.others_sent]),
    [
      [true, true, 0],
      [false, true, 0],
    ],
    'the new owner finds no attempt of the previous one in flight, fills the bound, the lease let go first',
  );
});

/**
 * Runs `call` while `holding` holds the worker's lock in `mode` in a transaction of its own: answers
 * whether `call` had to wait for it (it asked for the lock and was not granted it), then what it
 * answered once the lock was let go.
 */
async function behindLock<T>(mode: 'shared' | 'exclusive', call: () => Promise<T>): Promise<[boolean, T]> {
  let settled = false;
  let calling: Promise<T> | undefined;
  let waited = false;
  let blocked = false;
  await svc.db.tx(async (holding) => {
    const fn = mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
    await holding.query(`SELECT ${fn}(734110906, hashtext($1::text))`, [lone.id]);
    calling = call().finally(() => {
      settled = true;
    });
    const other = mode === 'shared' ? 'ExclusiveLock' : 'ShareLock';
    while (!settled && !waited) {
      const rows = await holding.query(
        "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND mode = $1 AND NOT granted",
        [other],
      );
      waited = rows.length > 0;
      if (!waited) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // Read before the lock is let go: once it is, the call goes on.
    blocked = waited && !settled;
  });
  return [blocked, await (calling as Promise<T>)];
}

test('a worker’s exchange waits while a beat lets its partitions go: ownership never changes during one', {
  skip: q.kind === 'pglite' ? 'one connection on the embedded database' : false,
}, async () => {
  await drain();
  await backlog(1);
  // What a beat holds while it lets the worker's partitions go.
  const [waited, got] = await behindLock('exclusive', () => exchange(q, [], claim()));
  assert.equal(waited, true, 'the exchange waits for the beat');
  assert.equal(got.claimed.length, 1, 'then claims');
  // The other way round: a beat that lets the worker's partitions go waits for its exchange under
  // way. A worker joins: the division gives it a share, which the first lets go at its next beat.
  await beat(q, worker(), 60_000);
  const [beatWaited, parts] = await behindLock('shared', () => beat(q, lone, 60_000));
  assert.equal(beatWaited, true, 'the beat waits for the exchange');
  assert.ok(parts.length < 64, 'then lets the newcomer’s share go');
});

test('a claim takes only from the partitions it is given', async () => {
  await drain();
  const { hook } = await backlog(1);
  const [p] = await q.query<{ p: number }>('SELECT webhook_partition($1) AS p', [hook.id]);
  const others = ALL.filter((x) => x !== p?.p);
  const elsewhere = await exchange(q, [], claim({ partitions: others }));
  assert.equal(elsewhere.claimed.length, 0);
  assert.deepEqual(elsewhere.backlog, [], 'nothing is due in those partitions');
  assert.equal((await exchange(q, [], claim({ partitions: [p?.p as number] }))).claimed.length, 1);
});

test('no organization takes more than its fair share of a worker’s budget while another has work', async () => {
  await drain();
  const big = await backlog(6);
  const small = await backlog(2);
  // A budget of 4, two organizations with work: two each, whatever the backlogs.
  const got = await exchange(q, [], claim({ budget: 4, take: 4, hold: 10 }));
  const by = (org: string) => got.claimed.filter((c) => c.organization_id === org).length;
  assert.equal(by(big.t.organization.id), 2);
  assert.equal(by(small.t.organization.id), 2);
  // Alone, one organization takes up to seven eighths of the budget: room stays for a newcomer.
  await drain();
  const alone = await backlog(10);
  const taken = await exchange(q, [], claim({ budget: 8, take: 8, hold: 10 }));
  assert.equal(taken.claimed.length, 7);
  assert.ok(taken.claimed.every((c) => c.organization_id === alone.t.organization.id));
  // The attempts it already holds count against its share.
  await drain();
  const held = await backlog(4);
  const busy = new Map([[held.t.organization.id, 7]]);
  assert.equal((await exchange(q, [], claim({ budget: 8, take: 1, hold: 10, busy }))).claimed.length, 0);
});

test('a claim short of room goes first to the organizations and webhooks holding the fewest leases, not to the oldest deliveries', async () => {
  await drain();
  // Organizations: the first holds two leases already, the second none and only newer deliveries.
  const older = await backlog(3);
  const newer = await backlog(3);
  const busy = new Map([[older.t.organization.id, 2]]);
  const [org] = (await exchange(q, [], claim({ take: 1, hold: 10, bound: 4, busy }))).claimed;
  assert.equal(org?.organization_id, newer.t.organization.id);
  // Webhooks of one organization: the first holds two leases, the second none and only newer deliveries.
  await drain();
  const t = await webhookTenant(svc);
  const first = await createWebhook(svc, t, receiver.url(`/e/${randomUUID()}`), ['booking.created']);
  for (let i = 0; i < 3; i++) await putBooking(svc, t.organization.id);
  await publishEvents(q);
  const leased = await exchange(q, [], claim({ take: 2, hold: 10, bound: 4 }));
  assert.deepEqual(
    leased.claimed.map((c) => c.webhook_id),
    [first.id, first.id],
  );
  const second = await createWebhook(svc, t, receiver.url(`/e/${randomUUID()}`), ['booking.created']);
  for (let i = 0; i < 2; i++) await putBooking(svc, t.organization.id);
  await publishEvents(q);
  const held = new Map([[t.organization.id, 2]]);
  const [hook] = (await exchange(q, [], claim({ take: 1, hold: 10, bound: 4, busy: held }))).claimed;
  assert.equal(hook?.webhook_id, second.id, 'the webhook holding nothing goes before its older sibling');
});

test('webhooks and organizations holding equally take turns by lot, not by the age of their deliveries', async () => {
  await drain();
  // One organization, two webhooks: the first with older deliveries than the second's.
  const t = await webhookTenant(svc);
  const older = await createWebhook(svc, t, receiver.url(`/e/${randomUUID()}`), ['booking.created']);
  for (let i = 0; i < 2; i++) await putBooking(svc, t.organization.id);
  await publishEvents(q);
  const newer = await createWebhook(svc, t, receiver.url(`/e/${randomUUID()}`), ['booking.created']);
  await q.query('UPDATE webhooks SET events = $2 WHERE id = $1', [older.id, '{booking.updated}']);
  for (let i = 0; i < 2; i++) await putBooking(svc, t.organization.id);
  await publishEvents(q);
  // And another organization whose deliveries are newer still.
  const late = await backlog(2);
  // Each claim has room for one; what it took is let go again, so every claim finds the same queue.
  const taken = new Map<string, number>();
  for (let i = 0; i < 80; i++) {
    const [c] = (await exchange(q, [], claim({ take: 1, hold: 10, bound: 4 }))).claimed;
    assert.ok(c);
    taken.set(c.webhook_id, (taken.get(c.webhook_id) ?? 0) + 1);
    await exchange(q, [], claim({ released: [c.id], take: 0 }));
  }
  // Each has a chance of 1 in 4 or better at each draw: chance alone leaves one out of 80 about once in 5 billion.
  for (const hook of [older.id, newer.id, late.hook.id])
    assert.ok((taken.get(hook) ?? 0) > 0, `${hook} had a turn`);
});

test('the last final outcome of an event drops the booking kept for its bodies, in the same write', async () => {
  await drain();
  const { hook } = await backlog(1);
  const { claimed } = await exchange(q, [], claim());
  const event = claimed[0]?.event_id;
  assert.ok(event);
  assert.ok(claimed[0]?.booking, 'the claim carries the booking kept with the event');
  const kept = () => q.query('SELECT 1 FROM event_payloads WHERE event_id = $1', [event]);
  assert.equal((await kept()).length, 1);
  const failed: Outcome = {
    ...succeededOutcome(claimed[0] as Outcome['claimed']),
    recorded: {
      ...succeededOutcome(claimed[0] as Outcome['claimed']).recorded,
      status: 'failed',
      nextRetryInMs: 0,
    },
  };
  await exchange(q, [failed], claim({ take: 0 }));
  assert.equal((await kept()).length, 1, 'a retry still needs it');
  const retried = await exchange(q, [], claim());
  assert.equal(retried.claimed[0]?.webhook_id, hook.id);
  await exchange(q, retried.claimed.map(succeededOutcome), claim({ take: 0 }));
  assert.equal((await kept()).length, 0, 'dropped by the write itself, not by a later sweep');
});

test('a fault of the service counts as an attempt and never against the webhook', async () => {
  await drain();
  const { hook } = await backlog(1);
  await q.query('UPDATE webhooks SET consecutive_failures = 5 WHERE id = $1', [hook.id]);
  const { claimed } = await exchange(q, [], claim());
  const fault: Outcome = {
    claimed: claimed[0] as Outcome['claimed'],
    recorded: {
      status: 'dead',
      maxAttempts: 1,
      nextRetryInMs: null,
      httpStatus: null,
      error: 'error interno del servicio (no del destino)',
      durationMs: 0,
      counts: true,
      blames: false,
    },
  };
  const done = await exchange(q, [fault], claim({ take: 0 }));
  assert.deepEqual(done.tallies, [], 'the failure count is not moved');
  const [d] = await q.query<{ status: string; attempt: number }>(
    'SELECT status, attempt FROM webhook_deliveries WHERE webhook_id = $1',
    [hook.id],
  );
  assert.deepEqual(d, { status: 'dead', attempt: 1 });
  const [w] = await q.query<{ consecutive_failures: number }>(
    'SELECT consecutive_failures FROM webhooks WHERE id = $1',
    [hook.id],
  );
  assert.equal(w?.consecutive_failures, 5);
});

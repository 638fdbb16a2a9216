// The worker claims ahead: it holds up to HOLD_PER_WEBHOOK times a webhook's bound (FAST_HOLD_PER_WEBHOOK
// times, for a receiver that answers fast), the rest queued behind the attempts in flight, and
// spaces the rounds of a backlog. What that must not break: the bound on a webhook's attempts in
// flight is global, across workers; and a worker that stops gives back what it held but never
// attempted, as it was, without counting an attempt.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, test } from 'node:test';
import { publishEvents } from '../../src/delivery/publish.js';
import { type Claimed, claimDeliveries, recordAndClaim, recordOutcomes } from '../../src/delivery/store.js';
import { webhookSlots } from '../../src/delivery/webhook-slots.js';
import { FAST_HOLD_PER_WEBHOOK, HOLD, HOLD_PER_WEBHOOK } from '../../src/delivery/worker.js';
import { seededRandom } from '../../src/demo/random.js';
import { type TestService, usingServer } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { expectOk } from '../support/tenants.js';
import { until } from '../support/wait.js';
import {
  arrivalsAt,
  claimRequest,
  claimsMade,
  createWebhook,
  deliveryWorker,
  mostInFlight,
  requestsTo,
  succeededOutcome,
  WEBHOOK_SCOPES,
  webhookHarness,
  webhookService,
  webhookTenant,
} from '../support/webhooks.js';

/** Deliveries held by workers (in flight or queued ahead), all webhooks together. */
async function deliveringCount(svc: TestService): Promise<number> {
  const [row] = await svc.db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM delivery_states WHERE status = 'delivering'",
  );
  return row?.n ?? 0;
}

/**
 * A claim of another worker taking for `webhookId` at this moment: its transaction holds the
 * webhook's lock (claim_room's key) until the returned function ends it.
 */
async function claimingElsewhere(svc: TestService, webhookId: string): Promise<() => Promise<void>> {
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  let locked = () => {};
  const lockTaken = new Promise<void>((resolve) => (locked = resolve));
  const other = svc.db.tx(async (q) => {
    await q.query('SELECT pg_advisory_xact_lock(734110903, hashtext($1))', [webhookId]);
    locked();
    await held;
  });
  await lockTaken;
  return async () => {
    release();
    await other;
  };
}

/** `count` bookings of the tenant's organization written at once and their events published. */
async function backlogOf(svc: TestService, t: Awaited<ReturnType<typeof webhookTenant>>, count: number) {
  await svc.db.query(
    `INSERT INTO bookings (id, originator_organization_id, reference, status, service_type, pickup_at, passengers)
     SELECT gen_random_uuid(), $1, $2 || n, 'solicitada', 'transfer', now(), '{}'
     FROM generate_series(1, $3::int) AS n`,
    [t.organization.id, t.organization.code, count],
  );
  await publishEvents(svc.db);
}

/** A claim by a worker of its own, as a new worker makes it. */
const claimAnything = (svc: TestService) => claimDeliveries(svc.db, claimRequest(randomUUID()));

test('two workers on one database never exceed a webhook’s bound in flight', async () => {
  const { svc, receiver } = await webhookHarness({
    SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '2',
    SVC_WEBHOOK_TIMEOUT_MS: '5000',
    SVC_WEBHOOK_LEASE_SECONDS: '30',
  });
  const second = await deliveryWorker(svc);
  after(() => second.stop(100));
  // Each answer takes a while, so a worker that broke the bound would have the chance.
  const COUNT = 24;
  receiver.respond(() => ({ status: 200, delayMs: 60 }));
  const t = await webhookTenant(svc);
  await createWebhook(svc, t, receiver.url('/bounded'), ['booking.created']);
  await Promise.all(Array.from({ length: COUNT }, () => putBooking(svc, t.organization.id)));

  const arrivals = await arrivalsAt(receiver, '/bounded', COUNT, 20_000);
  await until('every answer written', () => arrivals.every((r) => r.answeredAt !== undefined));
  const most = mostInFlight(arrivals);
  assert.ok(most <= 2, `${most} attempts of one webhook in flight at once`);
  assert.equal(most, 2, 'the workers did use the bound (otherwise the test proves nothing)');
  const seen = arrivals.map((r) => `${r.headers['x-svc-delivery']}#${r.headers['x-svc-attempt']}`);
  assert.equal(new Set(arrivals.map((r) => r.headers['x-svc-delivery'])).size, COUNT, 'every delivery');
  assert.deepEqual(
    seen.filter((s) => !s.endsWith('#1')),
    [],
    'each delivered at its first attempt: no attempt counted that was not made',
  );
});

test('a second worker shares webhooks whose holder does not keep up, within their bound', async () => {
  const { svc, receiver } = await webhookService();
  const t = await webhookTenant(svc);
  const hooks: string[] = [];
  for (const path of ['/a', '/b', '/c'])
    hooks.push((await createWebhook(svc, t, receiver.url(path), ['booking.created'])).id);
  for (let i = 0; i < 4; i++) await putBooking(svc, t.organization.id);
  // Each worker may hold 4 of a webhook alone, and 2 in all (the bound) when it is shared.
  const claim = (owner: string, take: number, shareAfterMs = 0) =>
    claimDeliveries(svc.db, claimRequest(owner, { take, shareAfterMs }));
  const [first, second] = [randomUUID(), randomUUID()];
  const a = await claim(first, 3);
  assert.deepEqual(a.claimed.map((c) => c.webhook_id).sort(), [...hooks].sort(), 'one of each, in turns');
  assert.equal(
    (await claim(second, 10, 60_000)).claimed.length,
    0,
    'left to the first while its deliveries have not waited (it keeps up)',
  );
  const b = await claim(second, 10);
  assert.deepEqual(
    b.claimed.map((c) => c.webhook_id).sort(),
    [...hooks].sort(),
    'the second worker finds room in every webhook the first holds one delivery of',
  );
  assert.ok(
    b.claimed.every((c) => c.in_flight_cap === 1),
    'each shared webhook at its bound: one in flight each',
  );
  // The two hold as many of each webhook: the first to claim again keeps a queue of it, its
  // attempts in flight capped at the bound less the other's; the other then holds fewer, and shares.
  const ahead = await claim(first, 10);
  assert.equal(ahead.claimed.length, 6, 'the rest of each webhook, held ahead');
  assert.ok(
    ahead.claimed.every((c) => c.in_flight_cap === 1),
    'one in flight beside the second',
  );
  assert.equal((await claim(second, 10)).claimed.length, 0, 'nothing left to share');
  const held = await svc.db.query<{ webhook_id: string; n: number }>(
    `SELECT webhook_id, count(*)::int AS n FROM delivery_states WHERE status = 'delivering'
     GROUP BY webhook_id`,
  );
  assert.deepEqual(
    held.map((h) => h.n),
    [4, 4, 4],
  );
});

test('a worker alone holds ahead; another finds no room until the holder is below the bound', async () => {
  const { svc, receiver } = await webhookService();
  const t = await webhookTenant(svc);
  await createWebhook(svc, t, receiver.url('/alone'), ['booking.created']);
  for (let i = 0; i < 6; i++) await putBooking(svc, t.organization.id);
  const request = (owner: string) => claimRequest(owner);
  const holder = randomUUID();
  const held = await claimDeliveries(svc.db, request(holder));
  assert.equal(held.claimed.length, 4, 'twice the bound, held alone');
  assert.equal((await claimDeliveries(svc.db, request(randomUUID()))).claimed.length, 0);
  // Three of its four ended: one left, below the bound of 2, so another worker may take one.
  await recordOutcomes(svc.db, held.claimed.slice(0, 3).map(succeededOutcome));
  const other = await claimDeliveries(svc.db, request(randomUUID()));
  assert.equal(other.claimed.length, 1, 'shared now: 2 held in all');
  assert.equal(other.claimed[0]?.in_flight_cap, 1, 'the sharer may send what the holder leaves');
  // The holder holds as many as the other: it keeps its queue, capped to the bound less the other's.
  const again = await claimDeliveries(svc.db, request(holder));
  assert.deepEqual(
    again.claimed.map((c) => c.in_flight_cap),
    [1],
    'the last one, held ahead: one in flight at a time',
  );
  assert.equal((await claimDeliveries(svc.db, request(randomUUID()))).claimed.length, 0);
});

test('a holder that keeps its queue beside a sharer is capped; saturated, it shares instead', async () => {
  const { svc, receiver } = await webhookService();
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url('/kept'), ['booking.created']);
  await backlogOf(svc, t, 12);
  const [holder, sharer] = [randomUUID(), randomUUID()];
  // The holder holds 2 (its bound), then ends 1 of them; a sharer takes the one slot left.
  const first = await claimDeliveries(svc.db, claimRequest(holder, { take: 2 }));
  assert.deepEqual(
    first.claimed.map((c) => c.in_flight_cap),
    [2, 2],
    'alone: the bound',
  );
  await recordOutcomes(svc.db, first.claimed.slice(0, 1).map(succeededOutcome));
  assert.equal((await claimDeliveries(svc.db, claimRequest(sharer))).claimed.length, 1);
  // Saturated (it asks to hold no more than the bound): a sharer like the other, no room left.
  const saturated = await claimDeliveries(svc.db, claimRequest(holder, { perWebhook: 2 }));
  assert.equal(saturated.claimed.length, 0, 'the bound is held in all');
  // Claiming ahead: up to its hold of 4, its attempts capped at the bound less the sharer's one.
  const ahead = await claimDeliveries(svc.db, claimRequest(holder));
  assert.deepEqual(
    ahead.claimed.map((c) => c.in_flight_cap),
    [1, 1, 1],
  );
  assert.equal((await claimDeliveries(svc.db, claimRequest(sharer))).claimed.length, 0, 'the sharer: none');
  const held = await svc.db.query<{ lease_owner: string; n: number }>(
    `SELECT lease_owner, count(*)::int AS n FROM delivery_queue
     WHERE webhook_id = $1 AND lease_owner IS NOT NULL GROUP BY lease_owner`,
    [hook.id],
  );
  assert.deepEqual(Object.fromEntries(held.map((h) => [h.lease_owner, h.n])), { [holder]: 4, [sharer]: 1 });
});

test('a worker keeping its queue beside another worker’s attempt sends one at a time until that one ends', async () => {
  const { svc, receiver } = await webhookService({
    SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '2',
    SVC_WEBHOOK_TIMEOUT_MS: '5000',
    SVC_WEBHOOK_LEASE_SECONDS: '60',
  });
  receiver.respond(() => ({ status: 200, delayMs: 120 }));
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url('/beside'), ['booking.created']);
  await backlogOf(svc, t, 6);
  // Another worker (this test) holds one delivery in flight; the others have waited past the time
  // after which a webhook is shared.
  const other = await claimDeliveries(svc.db, claimRequest(randomUUID(), { take: 1 }));
  assert.equal(other.claimed.length, 1);
  await svc.db.query(
    `UPDATE webhook_deliveries SET next_retry_at = now() - interval '1 minute'
     WHERE webhook_id = $1 AND status = 'pending'`,
    [hook.id],
  );
  const worker = await deliveryWorker(svc);
  after(() => worker.stop(100));
  // Its share: one. While that attempt is in flight, an event wakes it: it holds as many as the other
  // worker now, so it claims the rest ahead, capped at one in flight.
  await arrivalsAt(receiver, '/beside', 1);
  await putBooking(svc, t.organization.id);
  const arrivals = await arrivalsAt(receiver, '/beside', 6, 10_000);
  await until('every answer given', () => arrivals.every((r) => r.answeredAt !== undefined));
  const most = mostInFlight(arrivals);
  assert.equal(most, 1, 'one attempt in flight beside the other worker’s, never two');
  await until('only the other worker’s delivery still held (every answer written)', async () => {
    const [held] = await svc.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM delivery_states WHERE webhook_id = $1 AND status = 'delivering'",
      [hook.id],
    );
    return held?.n === 1;
  });
  await recordOutcomes(svc.db, other.claimed.map(succeededOutcome));
});

test('workers claiming, starting and ending attempts in any order never have more than the bound in flight', async () => {
  const { svc, receiver } = await webhookService();
  const t = await webhookTenant(svc);
  await createWebhook(svc, t, receiver.url('/any-order'), ['booking.created']);
  const DELIVERIES = 60;
  const BOUND = 2;
  await backlogOf(svc, t, DELIVERIES);
  const random = seededRandom(20261126);
  // Each worker as the worker loop keeps it: deliveries held ahead, attempts in flight, and its
  // per-webhook bookkeeping (the caps of its claims), the worker's own.
  const workers = Array.from({ length: 3 }, () => ({
    owner: randomUUID(),
    queue: [] as Claimed[],
    flying: [] as Claimed[],
    slots: webhookSlots(BOUND),
  }));
  const inFlight = () => workers.reduce((n, w) => n + w.flying.length, 0);
  let delivered = 0;
  let most = 0;
  let cappedBelowBound = 0;
  for (let step = 0; step < 2000 && delivered < DELIVERIES; step++) {
    const w = random.pick(workers);
    const action = random.int(0, 2);
    if (action === 0) {
      const { claimed } = await claimDeliveries(
        svc.db,
        claimRequest(w.owner, {
          take: random.int(1, 6),
          perWebhook: random.chance(0.2) ? BOUND : 8,
          inFlightPerWebhook: BOUND,
        }),
      );
      for (const c of claimed) w.slots.capped(c.webhook_id, c.in_flight_cap);
      if (claimed.some((c) => c.in_flight_cap < BOUND)) cappedBelowBound++;
      w.queue.push(...claimed);
    } else if (action === 1) {
      while (w.queue.length > 0 && w.slots.roomAt((w.queue[0] as Claimed).webhook_id) > 0) {
        const next = w.queue.shift() as Claimed;
        w.flying.push(next);
        w.slots.started(next.webhook_id);
      }
    } else if (w.flying.length > 0) {
      const [ended] = w.flying.splice(random.int(0, w.flying.length - 1), 1) as [Claimed];
      await recordOutcomes(svc.db, [succeededOutcome(ended)]);
      w.slots.ended(ended.webhook_id);
      if (w.queue.length === 0) w.slots.forget(ended.webhook_id);
      delivered += 1;
    }
    most = Math.max(most, inFlight());
    assert.ok(inFlight() <= BOUND, `step ${step}: ${inFlight()} attempts in flight`);
  }
  assert.equal(delivered, DELIVERIES, 'every delivery made');
  assert.equal(most, BOUND, 'the bound was reached (otherwise the test proves nothing)');
  assert.ok(cappedBelowBound > 0, 'a holder kept its queue beside another worker, capped');
});

test('a claim holds more of the webhooks it names fast, as many as before of the others', async () => {
  const { svc, receiver } = await webhookService();
  const t = await webhookTenant(svc);
  const quick = await createWebhook(svc, t, receiver.url('/quick'), ['booking.created']);
  const plain = await createWebhook(svc, t, receiver.url('/plain'), ['booking.created']);
  for (let i = 0; i < 8; i++) await putBooking(svc, t.organization.id);
  const { claimed } = await claimDeliveries(
    svc.db,
    claimRequest(randomUUID(), { take: 20, fast: [quick.id], fastPerWebhook: 7 }),
  );
  const of = (id: string) => claimed.filter((c) => c.webhook_id === id).length;
  assert.deepEqual({ quick: of(quick.id), plain: of(plain.id) }, { quick: 7, plain: 4 });
});

/** Deliveries of one webhook by state. */
const statesOf = (svc: TestService, webhookId: string) =>
  svc.db.query<{ status: string; n: number }>(
    `SELECT status, count(*)::int AS n FROM delivery_states WHERE webhook_id = $1
     GROUP BY status ORDER BY status`,
    [webhookId],
  );

test('a worker holds FAST_HOLD_PER_WEBHOOK times the bound of a webhook whose receiver answered fast', async () => {
  const { svc, receiver } = await webhookService({
    SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '1',
    SVC_WEBHOOK_TIMEOUT_MS: '30000',
    SVC_WEBHOOK_LEASE_SECONDS: '60',
  });
  // The first two attempts are answered at once (the second on a connection already open); every
  // later one hangs, so what the worker holds stays.
  receiver.respond((_req, n) => (n <= 2 ? { status: 200 } : { hang: true }));
  const worker = await deliveryWorker(svc);
  after(() => worker.stop(100));
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url('/quick'), ['booking.created']);
  for (let i = 0; i < 2; i++) {
    await putBooking(svc, t.organization.id);
    await until('the delivery answered', async () =>
      (await statesOf(svc, hook.id)).some((s) => s.status === 'succeeded' && s.n === i + 1),
    );
  }
  for (let i = 0; i < FAST_HOLD_PER_WEBHOOK + 2; i++) await putBooking(svc, t.organization.id);
  // One attempt hangs with the rest of FAST_HOLD_PER_WEBHOOK held behind it (a receiver that hangs
  // from its first attempt keeps HOLD_PER_WEBHOOK: 'a stopping worker gives back…' below).
  await until('held deeper behind the hanging attempt', async () =>
    (await statesOf(svc, hook.id)).some((s) => s.status === 'delivering' && s.n === FAST_HOLD_PER_WEBHOOK),
  );
  assert.deepEqual(await statesOf(svc, hook.id), [
    { status: 'delivering', n: FAST_HOLD_PER_WEBHOOK },
    { status: 'pending', n: 2 },
    { status: 'succeeded', n: 2 },
  ]);
});

test('a backlog to a fast receiver is written and claimed in rounds SVC_WEBHOOK_BACKLOG_ROUND_MS apart', async () => {
  const ROUND_MS = 100;
  const { svc, receiver } = await webhookService({
    SVC_WEBHOOK_BACKLOG_ROUND_MS: String(ROUND_MS),
    SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '2',
    SVC_WEBHOOK_TIMEOUT_MS: '30000',
    SVC_WEBHOOK_LEASE_SECONDS: '60',
  });
  // Two attempts in flight answered in 20 ms each: about one answer every 10 ms.
  receiver.respond(() => ({ status: 200, delayMs: 20 }));
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url('/backlog'), ['booking.created']);
  const DELIVERIES = 200;
  await backlogOf(svc, t, DELIVERIES);
  const before = await claimsMade(svc);
  const started = Date.now();
  const worker = await deliveryWorker(svc);
  after(() => worker.stop(100));
  await until(
    'the backlog delivered',
    async () => (await statesOf(svc, hook.id)).some((s) => s.status === 'succeeded' && s.n === DELIVERIES),
    30_000,
  );
  const elapsed = Date.now() - started;
  const rounds = (await claimsMade(svc)) - before;
  // A round at each answer or two was 135 to 167 here; spaced, one per ROUND_MS and a few more (the
  // first ones, before the receiver is known to be fast, and the last, as the queue empties).
  const most = Math.ceil(elapsed / ROUND_MS) + 10;
  assert.ok(rounds <= most, `${rounds} rounds in ${elapsed} ms (at most ${most})`);
  // However slow the machine (the backlog took 5.2 s on a loaded one, so 51 rounds), fewer than one
  // round per two answers.
  assert.ok(rounds < DELIVERIES / 2, `${rounds} rounds for ${DELIVERIES} deliveries in ${elapsed} ms`);
});

test('a second worker adds attempts in flight when the receivers, not the worker, set the pace', async () => {
  const { svc, receiver } = await webhookService({
    SVC_WEBHOOK_CONCURRENCY: '2',
    SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '2',
    SVC_WEBHOOK_TIMEOUT_MS: '30000',
    SVC_WEBHOOK_LEASE_SECONDS: '60',
  });
  receiver.respond(() => ({ hang: true }));
  const t = await webhookTenant(svc);
  for (const path of ['/w1', '/w2', '/w3', '/w4'])
    await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  for (let i = 0; i < 3; i++) await putBooking(svc, t.organization.id);
  const delivering = () => deliveringCount(svc);
  const first = await deliveryWorker(svc);
  const second = await (async () => {
    try {
      // Its 2 attempts hang; it holds one delivery of each of the 4 webhooks (twice its concurrency).
      await until('the first worker at its concurrency', async () => (await delivering()) === HOLD * 2);
      await until('its two attempts', () => receiver.requests.length === 2);
      return await deliveryWorker(svc);
    } catch (error) {
      await first.stop(100);
      throw error;
    }
  })();
  after(() => Promise.all([first.stop(100), second.stop(100)]));
  await until('the second worker sends beside it', () => receiver.requests.length === 4, 10_000);
  const perWebhook = new Map<string, number>();
  for (const r of receiver.requests) perWebhook.set(r.path, (perWebhook.get(r.path) ?? 0) + 1);
  assert.ok(
    [...perWebhook.values()].every((n) => n <= 2),
    `no webhook past its bound: ${JSON.stringify([...perWebhook])}`,
  );
});

test('a worker whose deliveries wait for its own slots holds no more than it sends', async () => {
  const { svc, receiver } = await webhookService({
    SVC_WEBHOOK_CONCURRENCY: '8',
    SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '2',
    SVC_WEBHOOK_TIMEOUT_MS: '10000',
    SVC_WEBHOOK_LEASE_SECONDS: '60',
  });
  // Two slots hang on /stuck; the other six go round twelve webhooks (two organizations: an
  // integration has at most ten) that answer at once.
  receiver.respond((req) => (req.path === '/stuck' ? { hang: true } : { status: 200 }));
  const tenants = [await webhookTenant(svc), await webhookTenant(svc)];
  const paths = [
    ['/stuck', '/a1', '/a2', '/a3', '/a4', '/a5', '/a6', '/a7', '/a8'],
    ['/b1', '/b2', '/b3', '/b4'],
  ];
  for (const [i, t] of tenants.entries())
    for (const path of paths[i] ?? []) await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  const EVENTS = 6;
  for (const t of tenants) for (let i = 0; i < EVENTS; i++) await putBooking(svc, t.organization.id);
  const delivering = () => deliveringCount(svc);
  const worker = await deliveryWorker(svc);
  after(() => worker.stop(100));
  const answered = () => receiver.requests.filter((r) => r.path !== '/stuck').length;
  // The first claim holds twice its 8 slots. Once its deliveries wait for its slots, it holds what
  // it sends (8), those of /stuck held behind its two hanging attempts (HOLD_PER_WEBHOOK x 2 - 2,
  // for that webhook's bound) and 1 spare, with an outcome or two not yet written beside them;
  // claiming ahead regardless, it held 16.
  const mostAllowed = 8 + (HOLD_PER_WEBHOOK * 2 - 2) + 1 + 2;
  await until('the first claim sent', () => answered() >= HOLD * 8);
  let most = 0;
  while (answered() < 12 * EVENTS) {
    most = Math.max(most, await delivering());
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.ok(most <= mostAllowed, `${most} deliveries held by a worker with 8 slots`);
});

test('a stopping worker gives back what it held ahead, the attempt not counted', async () => {
  const { svc, receiver } = await webhookService({
    SVC_WEBHOOK_TIMEOUT_MS: '30000',
    SVC_WEBHOOK_LEASE_SECONDS: '60',
    SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '1',
  });
  receiver.respond(() => ({ hang: true }));
  const worker = await deliveryWorker(svc);
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url('/held'), ['booking.created']);
  for (let i = 0; i < HOLD_PER_WEBHOOK + 1; i++) await putBooking(svc, t.organization.id);
  await receiver.waitFor(1, 10_000);
  const states = () =>
    svc.db.query<{ status: string; attempt: number; n: number }>(
      `SELECT status, attempt, count(*)::int AS n FROM delivery_states WHERE webhook_id = $1
       GROUP BY status, attempt ORDER BY status, attempt`,
      [hook.id],
    );
  // One attempt hangs, the others of what it may hold are held behind it (bound 1, held up to
  // HOLD_PER_WEBHOOK), one waits in the queue.
  await until('deliveries held behind the hanging attempt', async () =>
    (await states()).some((s) => s.status === 'delivering' && s.n === HOLD_PER_WEBHOOK),
  );
  assert.deepEqual(await states(), [
    { status: 'delivering', attempt: 1, n: HOLD_PER_WEBHOOK },
    { status: 'pending', attempt: 0, n: 1 },
  ]);

  await worker.stop(100);
  // The hanging attempt may have reached the receiver: it counts. The held ones never left: they
  // are pending again, attempt 0, due at once.
  assert.deepEqual(await states(), [
    { status: 'failed', attempt: 1, n: 1 },
    { status: 'pending', attempt: 0, n: HOLD_PER_WEBHOOK },
  ]);
  assert.equal(receiver.requests.length, 1, 'only the hanging attempt was sent');
});

test('a claim leaves a webhook another claim is taking for, takes the rest without waiting, and says so', {
  skip: usingServer ? false : 'needs PostgreSQL: the embedded database runs one transaction at a time',
}, async () => {
  const { svc, receiver } = await webhookService();
  const t = await webhookTenant(svc);
  const busy = await createWebhook(svc, t, receiver.url('/busy'), ['booking.created']);
  const free = await createWebhook(svc, t, receiver.url('/free'), ['booking.created']);
  await putBooking(svc, t.organization.id);
  const claim = () => claimAnything(svc);
  // Another claim holds the busy webhook's lock (claim_room's key) until its transaction ends.
  const release = await claimingElsewhere(svc, busy.id);
  const first = await claim();
  await release();
  assert.deepEqual(
    first.claimed.map((c) => c.webhook_id),
    [free.id],
    'the free webhook is claimed while the other is being claimed elsewhere',
  );
  assert.equal(first.skipped, true);
  const second = await claim();
  assert.deepEqual(
    second.claimed.map((c) => c.webhook_id),
    [busy.id],
    'once that claim has ended, the webhook it held is claimed',
  );
  assert.equal(second.skipped, false);
});

test('a worker whose claim left a webhook to a claim beside it asks again at its next wake', {
  skip: usingServer ? false : 'needs PostgreSQL: the embedded database runs one transaction at a time',
}, async () => {
  // A claim that takes nothing while deliveries are due keeps a worker from asking again for the
  // idle gap (long here, so a worker that kept it would miss the arrival below by far). Not when a
  // webhook was left to another claim: that claim may have left it too.
  const { svc, receiver } = await webhookService({ SVC_WEBHOOK_IDLE_GAP_MS: '30000' });
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url('/beside'), ['booking.created']);
  const release = await claimingElsewhere(svc, hook.id);
  await putBooking(svc, t.organization.id);
  const before = await claimsMade(svc);
  const worker = await deliveryWorker(svc);
  try {
    // Its first round claims and finds the webhook's lock taken: nothing claimed, the delivery
    // due. Woken during that round or after it, it claims again (a worker that kept the gap would not).
    await until('the worker claimed', async () => (await claimsMade(svc)) > before);
    worker.wake();
    await until(
      'the worker claimed again at its next wake',
      async () => (await claimsMade(svc)) > before + 1,
      5000,
    );
    assert.equal(
      requestsTo(receiver, '/beside').length,
      0,
      'nothing sent while the other claim held the webhook',
    );
  } finally {
    await release();
  }
  worker.wake();
  await arrivalsAt(receiver, '/beside', 1, 5000);
});

test('outcomes written and the next deliveries claimed in one statement: both, or neither', async () => {
  const { svc, receiver } = await webhookService();
  const t = await webhookTenant(svc);
  const hook = await createWebhook(svc, t, receiver.url('/together'), ['booking.created']);
  for (let i = 0; i < 3; i++) await putBooking(svc, t.organization.id);
  const owner = randomUUID();
  const request = () => claimRequest(owner, { take: 1 });
  const states = async () =>
    (
      await svc.db.query<{ status: string }>(
        'SELECT status FROM delivery_states WHERE webhook_id = $1 ORDER BY status',
        [hook.id],
      )
    ).map((r) => r.status);
  const [first] = (await claimDeliveries(svc.db, request())).claimed;
  assert.ok(first);
  const both = await recordAndClaim(svc.db, [succeededOutcome(first)], request());
  assert.deepEqual(both.written, [first.id]);
  assert.equal(both.claim.claimed.length, 1, 'the next one claimed by the same statement');
  assert.deepEqual(await states(), ['delivering', 'pending', 'succeeded']);

  // The write refused: the claim beside it is not made either.
  const second = both.claim.claimed[0] as Claimed;
  await svc.db.exec(`
    CREATE FUNCTION refuse_together() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'refused'; END $$;
    CREATE TRIGGER refuse_together BEFORE DELETE ON delivery_queue FOR EACH ROW
      WHEN (OLD.lease_owner IS NOT NULL) EXECUTE FUNCTION refuse_together();`);
  try {
    await assert.rejects(recordAndClaim(svc.db, [succeededOutcome(second)], request()));
  } finally {
    await svc.db.exec('DROP TRIGGER refuse_together ON delivery_queue; DROP FUNCTION refuse_together()');
  }
  assert.deepEqual(await states(), ['delivering', 'pending', 'succeeded']);
});

test('a claim answers in the order of its attempts: each webhook oldest first, organizations in turns', async () => {
  const { svc, receiver } = await webhookService();
  const a = await webhookTenant(svc);
  const b = await webhookTenant(svc);
  await createWebhook(svc, a, receiver.url('/a'), ['booking.created']);
  await createWebhook(svc, b, receiver.url('/b'), ['booking.created']);
  const put = async (t: typeof a) => {
    const id = randomUUID();
    await putBooking(svc, t.organization.id, {}, id);
    return id;
  };
  const fromA = [await put(a), await put(a), await put(a)];
  const fromB = [await put(b), await put(b), await put(b)];
  const { claimed } = await claimAnything(svc);
  assert.deepEqual(
    claimed.map((c) => c.resource_id),
    [fromA[0], fromB[0], fromA[1], fromB[1], fromA[2], fromB[2]],
  );
});

test('deliveries of one event claimed together all carry its booking (sent once by the database)', async () => {
  const { svc, receiver } = await webhookService();
  const t = await webhookTenant(svc);
  for (const path of ['/one', '/two', '/three'])
    await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  const id = randomUUID();
  await putBooking(svc, t.organization.id, {}, id);
  const { claimed } = await claimAnything(svc);
  assert.equal(claimed.length, 3);
  const [kept] = await svc.db.query<{ booking: Record<string, unknown> }>(
    'SELECT booking FROM event_payloads WHERE event_id = $1',
    [claimed[0]?.event_id],
  );
  assert.equal(kept?.booking.id, id);
  for (const c of claimed) assert.deepEqual(c.booking, kept?.booking);
});

/** Every field of a claimed delivery (a field added to Claimed and left out here does not compile). */
const CLAIMED_FIELDS: Record<keyof Claimed, true> = {
  id: true,
  webhook_id: true,
  event_id: true,
  attempt: true,
  replayed_from: true,
  lease_token: true,
  in_flight_cap: true,
  webhook_active: true,
  url: true,
  secret: true,
  previous_secret: true,
  previous_valid: true,
  integration_active: true,
  scopes: true,
  organization_id: true,
  webhooks_enabled: true,
  event_type: true,
  event_created_at: true,
  resource_type: true,
  resource_id: true,
  changes: true,
  previous_status: true,
  booking: true,
  link_external_id: true,
};
const fieldsOf = (c: Claimed) =>
  Object.fromEntries(Object.keys(CLAIMED_FIELDS).map((k) => [k, c[k as keyof Claimed]]));

test('every delivery a claim takes is whole, though what its webhook’s or its event’s deliveries share is sent once', async () => {
  const { svc, receiver } = await webhookService();
  // An organization with two integrations (their scopes and external ids differ for the same
  // event), and another organization, whose turns interleave the claim's rows.
  const a = await webhookTenant(svc);
  const narrow = await webhookTenant(svc, {
    organizationId: a.organization.id,
    scopes: WEBHOOK_SCOPES.filter((s) => s !== 'customers:read'),
  });
  const b = await webhookTenant(svc);
  const hooks: string[] = [];
  for (const path of ['/a1', '/a2', '/a3']) hooks.push((await createWebhook(svc, a, receiver.url(path))).id);
  await createWebhook(svc, narrow, receiver.url('/narrow'));
  await createWebhook(svc, b, receiver.url('/b'));
  // One webhook in a rotation (its previous secret still valid), the others not.
  await expectOk(
    await svc.call('POST', `/webhooks/${hooks[0]}/rotate-secret`, {
      key: a.key,
      body: { overlap_minutes: 60 },
    }),
  );
  const [first, second] = [randomUUID(), randomUUID()];
  await putBooking(svc, a.organization.id, {}, first);
  await putBooking(svc, a.organization.id, {}, second);
  // An update (changes and a previous status), and one integration's own id of the booking.
  await putBooking(svc, a.organization.id, { distance_km: 80 }, first);
  await svc.db.query(
    'INSERT INTO booking_external_ids (integration_id, booking_id, external_id) VALUES ($1, $2, $3)',
    [a.integration.id, first, 'EXT-1'],
  );
  await putBooking(svc, b.organization.id);
  await putBooking(svc, b.organization.id);
  const owner = randomUUID();
  const leaseToken = randomUUID();
  const request = (take: number) => claimRequest(owner, { take, perWebhook: 10, leaseToken });

  // Claimed together (then rolled back), and one by one: each delivery alone in its claim.
  const rollback = new Error('rolled back');
  let together: Claimed[] = [];
  await assert.rejects(
    svc.db.tx(async (q) => {
      together = (await claimDeliveries(q, request(20))).claimed;
      throw rollback;
    }),
    (e) => e === rollback,
  );
  const alone = new Map<string, Claimed>();
  for (;;) {
    const { claimed } = await claimDeliveries(svc.db, request(1));
    const [one] = claimed;
    if (!one) break;
    assert.equal(claimed.length, 1);
    alone.set(one.id, one);
  }

  assert.equal(together.length, 3 * 4 + 2, 'three events to four webhooks, two to one');
  assert.ok(new Set(together.map((c) => c.webhook_id)).size < together.length, 'webhooks repeat');
  assert.ok(new Set(together.map((c) => c.event_id)).size < together.length, 'events repeat');
  assert.deepEqual([...alone.keys()].sort(), together.map((c) => c.id).sort());
  for (const c of together) {
    const whole = fieldsOf(c);
    for (const [k, v] of Object.entries(whole)) assert.notEqual(v, undefined, `${c.id}: ${k}`);
    assert.deepEqual(whole, fieldsOf(alone.get(c.id) as Claimed), `delivery ${c.id} as claimed alone`);
  }
  // The case is the one meant: a previous secret, a previous status, and within one event two
  // integrations' scopes and external ids.
  assert.ok(together.some((c) => c.previous_secret !== null && c.previous_valid));
  assert.ok(together.some((c) => c.previous_status !== null && c.changes.includes('distance_km')));
  const update = together.filter((c) => c.resource_id === first && c.previous_status !== null);
  assert.deepEqual(new Set(update.map((c) => c.link_external_id)), new Set(['EXT-1', null]));
  assert.equal(new Set(update.map((c) => c.scopes.join(','))).size, 2);
});

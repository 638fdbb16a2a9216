// The event log only grows at its head: an event enters it when it is published, stamped later than
// everything published before, so a transaction that commits late can never add an event behind one
// a reader has already seen. A reconciliation that walks from the newest event down to the last one
// it processed therefore never misses one.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { publishEvents } from '../../src/delivery/publish.js';
import { serviceForFile, usingServer } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { createTenant, expectOk, type Tenant } from '../support/tenants.js';
import { ALL_READ } from './read-support.js';

const svc = await serviceForFile();

async function newest(t: Tenant): Promise<{ id: string; resource: { id: string }; created_at: string }[]> {
  return (await expectOk(await svc.call('GET', '/events?limit=100', { key: t.key }))).data;
}

/** What a reconciling reader does: the events above the last one it processed. */
async function walkDownTo(t: Tenant, lastSeen: string) {
  const data = await newest(t);
  const stop = data.findIndex((e) => e.id === lastSeen);
  assert.ok(stop >= 0, 'the last processed event is still in the log');
  return data.slice(0, stop);
}

test('a transaction that changed first but commits last lands above what readers have seen', async (t) => {
  const tenant = await createTenant(svc, { scopes: ALL_READ, flags: { outbox_enabled: true } });
  const first = randomUUID();
  const second = randomUUID();
  await putBooking(svc, tenant.organization.id, {}, first);
  await putBooking(svc, tenant.organization.id, {}, second);

  if (usingServer) {
    // Two real overlapping transactions: A changes its booking first, B later; B commits, a reader
    // takes the log, and only then does A commit.
    let commitA: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      commitA = resolve;
    });
    let changedA: () => void = () => {};
    const aChanged = new Promise<void>((resolve) => {
      changedA = resolve;
    });
    const a = svc.db.tx(async (q) => {
      await q.query('UPDATE bookings SET distance_km = 11 WHERE id = $1', [first]);
      changedA();
      await gate;
    });
    await aChanged;
    await svc.db.tx((q) => q.query('UPDATE bookings SET distance_km = 22 WHERE id = $1', [second]));
    await publishEvents(svc.db);
    const seen = await newest(tenant);
    assert.equal(seen[0]?.resource.id, second, 'B is the newest the reader has seen');
    commitA();
    await a;
    await publishEvents(svc.db);
    const missed = await walkDownTo(tenant, seen[0]?.id ?? '');
    assert.deepEqual(
      missed.map((e) => e.resource.id),
      [first],
      'the reader finds A above the last event it processed',
    );
    assert.ok(Date.parse(missed[0]?.created_at ?? '') > Date.parse(seen[0]?.created_at ?? ''));
  } else {
    // The embedded database runs one transaction at a time, so a late commit is made by hand: an
    // outbox row stamped before an event already published, as a long transaction leaves it.
    t.diagnostic('PGlite: late commit simulated with an outbox row older than the published log');
    await putBooking(svc, tenant.organization.id, { distance_km: 22 }, second);
    const seen = await newest(tenant);
    assert.equal(seen[0]?.resource.id, second);
    await svc.db.query(
      `INSERT INTO event_outbox (organization_id, type, resource_id, changes, previous_status, reference, occurred_at)
       VALUES ($1, 'booking.updated', $2, '{distance_km}', 'confirmada', NULL, $3)`,
      [tenant.organization.id, first, new Date(Date.parse(seen[0]?.created_at ?? '') - 60_000)],
    );
    await publishEvents(svc.db);
    const missed = await walkDownTo(tenant, seen[0]?.id ?? '');
    assert.deepEqual(
      missed.map((e) => e.resource.id),
      [first],
    );
    assert.ok(Date.parse(missed[0]?.created_at ?? '') > Date.parse(seen[0]?.created_at ?? ''));
  }
});

test('events of one batch keep the order in which they happened', async () => {
  const tenant = await createTenant(svc, { scopes: ALL_READ, flags: { outbox_enabled: true } });
  const id = randomUUID();
  // Three changes committed before any publisher runs: one batch, one stamp.
  await svc.db.tx(async (q) => {
    await q.query(
      `INSERT INTO bookings (id, originator_organization_id, reference, status, service_type, pickup_at, passengers)
       VALUES ($1, $2, $3, 'solicitada', 'transfer', now(), '{}')`,
      [id, tenant.organization.id, `${tenant.organization.code}${Date.now() % 1_000_000}`],
    );
  });
  await svc.db.query(`UPDATE bookings SET status = 'confirmada' WHERE id = $1`, [id]);
  await svc.db.query(`UPDATE bookings SET status = 'cancelada' WHERE id = $1`, [id]);
  await publishEvents(svc.db);
  const data = await newest(tenant);
  assert.deepEqual(
    data.map((e: unknown) => (e as { type: string }).type),
    ['booking.cancelled', 'booking.updated', 'booking.created'],
  );
  assert.equal(new Set(data.map((e) => e.created_at)).size, 1, 'one stamp for the batch');
});

test('changes made in one round trip keep their order, transaction after transaction', async () => {
  const tenant = await createTenant(svc, { scopes: ALL_READ, flags: { outbox_enabled: true } });
  const ids = Array.from({ length: 33 }, () => randomUUID());
  // Each transaction makes three changes in one script (one round trip): they are written within
  // the same millisecond, so the order can only come from the outbox itself. On PostgreSQL the
  // transactions also run side by side.
  await Promise.all(
    ids.map((id, n) =>
      svc.db.tx((q) =>
        q.exec(
          `INSERT INTO bookings (id, originator_organization_id, reference, status, service_type, pickup_at, passengers)
           VALUES ('${id}', '${tenant.organization.id}', '${tenant.organization.code}${100 + n}', 'solicitada', 'transfer', now(), '{}');
           UPDATE bookings SET distance_km = 12 WHERE id = '${id}';
           UPDATE bookings SET status = 'cancelada' WHERE id = '${id}';`,
        ),
      ),
    ),
  );
  await publishEvents(svc.db);
  const all = (await expectOk(await svc.call('GET', '/events?limit=100', { key: tenant.key }))).data as {
    type: string;
    resource: { id: string };
  }[];
  assert.equal(all.length, 99);
  const wrong = ids.filter((id) => {
    const types = all.filter((e) => e.resource.id === id).map((e) => e.type);
    return types.join() !== 'booking.cancelled,booking.updated,booking.created';
  });
  assert.deepEqual(wrong, [], 'every booking shows created, updated, cancelled in that order');
});

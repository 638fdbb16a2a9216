import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { createTenant, expectOk, type Tenant } from '../support/tenants.js';
import { ALL_READ, at, putExchanged, walk } from './read-support.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

const withOutbox = () => createTenant(svc, { scopes: ALL_READ, flags: { outbox_enabled: true } });

async function events(t: Tenant, query = '') {
  const res = await svc.call('GET', `/events${query}`, { key: t.key });
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

/** Spreads the organization's events one second apart, in the order they were written. */
async function spaceOut(t: Tenant) {
  await svc.db.query(
    `UPDATE events e SET created_at = $2::timestamptz + s.n * interval '1 second'
     FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM events WHERE organization_id = $1) s
     WHERE e.id = s.id`,
    [t.organization.id, at(1000)],
  );
}

describe('GET /events', () => {
  test('shape of created, updated and cancelled, most recent first', async () => {
    const t = await withOutbox();
    const id = randomUUID();
    const created = await putBooking(svc, t.organization.id, {}, id);
    await putBooking(svc, t.organization.id, { distance_km: 60 }, id);
    await putBooking(svc, t.organization.id, { distance_km: 60, status: 'cancelada' }, id);
    await spaceOut(t);
    const rows = await svc.db.query<{ id: string; created_at: Date }>(
      'SELECT id, created_at FROM events WHERE organization_id = $1 ORDER BY created_at DESC',
      [t.organization.id],
    );
    const data = await events(t);
    const common = { version: 1, resource: { type: 'booking', id }, reference: created.reference };
    assert.deepEqual(data, [
      {
        id: rows[0]?.id,
        type: 'booking.cancelled',
        created_at: rows[0]?.created_at.toISOString(),
        ...common,
        changes: ['status'],
        previous_status: 'confirmada',
      },
      {
        id: rows[1]?.id,
        type: 'booking.updated',
        created_at: rows[1]?.created_at.toISOString(),
        ...common,
        changes: ['distance_km'],
        previous_status: 'confirmada',
      },
      {
        id: rows[2]?.id,
        type: 'booking.created',
        created_at: rows[2]?.created_at.toISOString(),
        ...common,
        changes: [],
        previous_status: null,
      },
    ]);
    // Key order of the contract, and nothing personal.
    const text = (await svc.call('GET', '/events', { key: t.key })).text;
    for (const personal of ['Ana', 'ana@example.com', '+34600111222', 'internal']) {
      assert.ok(!text.includes(personal));
    }
  });

  test('empty before the outbox flag is on; only later changes appear', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const id = randomUUID();
    await putBooking(svc, t.organization.id, {}, id);
    assert.deepEqual((await svc.call('GET', '/events', { key: t.key })).body, {
      data: [],
      next_cursor: null,
      has_more: false,
    });
    await expectOk(await svc.op('PATCH', `/organizations/${t.organization.id}`, { outbox_enabled: true }));
    await putBooking(svc, t.organization.id, { status: 'completada' }, id);
    assert.deepEqual(
      (await events(t)).map((e: any) => e.type),
      ['booking.completed'],
    );
  });

  test('type and resource_id filters; webhook.test matches nothing', async () => {
    const t = await withOutbox();
    const a = randomUUID();
    const b = randomUUID();
    await putBooking(svc, t.organization.id, {}, a);
    await putBooking(svc, t.organization.id, {}, b);
    await putBooking(svc, t.organization.id, { status: 'cancelada' }, a);
    await spaceOut(t);
    const summary = (data: any[]) => data.map((e) => [e.type, e.resource.id === a ? 'a' : 'b']);
    assert.deepEqual(summary(await events(t)), [
      ['booking.cancelled', 'a'],
      ['booking.created', 'b'],
      ['booking.created', 'a'],
    ]);
    assert.deepEqual(summary(await events(t, '?type=booking.created')), [
      ['booking.created', 'b'],
      ['booking.created', 'a'],
    ]);
    assert.deepEqual(summary(await events(t, `?resource_id=${a}`)), [
      ['booking.cancelled', 'a'],
      ['booking.created', 'a'],
    ]);
    assert.deepEqual(summary(await events(t, `?resource_id=${a}&type=booking.created`)), [
      ['booking.created', 'a'],
    ]);
    assert.deepEqual(await events(t, '?type=booking.no_show'), []);
    assert.deepEqual(await events(t, `?resource_id=${randomUUID()}`), []);
    assert.deepEqual(await events(t, '?type=webhook.test'), []);
  });

  test('a webhook test written to the log table never appears', async () => {
    const t = await withOutbox();
    await putBooking(svc, t.organization.id, {});
    await svc.db.query(
      `INSERT INTO events (organization_id, type, resource_type, resource_id) VALUES ($1, 'webhook.test', 'webhook', $2)`,
      [t.organization.id, randomUUID()],
    );
    assert.deepEqual(
      (await events(t)).map((e: any) => e.type),
      ['booking.created'],
    );
    assert.deepEqual(await events(t, '?type=webhook.test'), []);
  });

  test('both sides of the exchange have their own events; nobody else sees them', async () => {
    const originator = await withOutbox();
    const executor = await withOutbox();
    const stranger = await withOutbox();
    const id = randomUUID();
    await putExchanged(svc, originator, executor, {}, id);
    const mine = await events(originator);
    const theirs = await events(executor);
    assert.deepEqual([mine.length, theirs.length], [1, 1]);
    assert.notEqual(mine[0].id, theirs[0].id, 'one row per organization');
    assert.equal(theirs[0].resource.id, id);
    assert.deepEqual(await events(stranger), []);
  });

  test('walk with ties: every event once, ordered by created_at then id, descending', async () => {
    const t = await withOutbox();
    for (let i = 0; i < 9; i += 1) await putBooking(svc, t.organization.id, {});
    // Three groups of three events sharing a timestamp.
    await svc.db.query(
      `UPDATE events e SET created_at = $2::timestamptz + (s.n / 3) * interval '1 second'
       FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM events WHERE organization_id = $1) s
       WHERE e.id = s.id`,
      [t.organization.id, at(100)],
    );
    const expected = await svc.db.query<{ id: string }>(
      'SELECT id FROM events WHERE organization_id = $1 ORDER BY created_at DESC, id DESC',
      [t.organization.id],
    );
    const { items, pages } = await walk(svc, t.key, '/events', { limit: '2' });
    assert.equal(pages.length, 5);
    assert.deepEqual(
      items.map((e: any) => e.id),
      expected.map((e) => e.id),
    );
  });
});

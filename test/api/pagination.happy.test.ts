import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { createTenant } from '../support/tenants.js';
import { ALL_READ, at, exchangePair, putExchanged, walk } from './read-support.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

const byNewest = (a: { created_at: string; id: string }, b: { created_at: string; id: string }) =>
  a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1;

describe('bookings: keyset pages over both sides of the exchange', () => {
  test('60 bookings, limit 7: every booking exactly once, newest first, on 9 pages', async () => {
    const { originator, executor } = await exchangePair(svc);
    const expected: string[] = [];
    // The executor's list interleaves its own bookings with those it receives.
    for (let i = 0; i < 60; i += 1) {
      const id = randomUUID();
      if (i % 3 === 0) {
        await putExchanged(svc, originator, executor, { created_at: at(i) }, id);
      } else {
        await putBooking(svc, executor.organization.id, { created_at: at(i) }, id);
      }
      expected.push(id);
    }
    const { pages, items } = await walk(svc, executor.key, '/bookings', { limit: '7' });
    assert.equal(pages.length, 9);
    assert.deepEqual(
      pages.map((p) => p.length),
      [7, 7, 7, 7, 7, 7, 7, 7, 4],
    );
    assert.deepEqual(
      items.map((b: any) => b.id),
      expected,
    );
    assert.deepEqual(
      items.map((b: any) => b.role),
      expected.map((_, i) => (i % 3 === 0 ? 'executor' : 'originator_and_executor')),
    );
    // The originator walks only its side.
    const mine = await walk(svc, originator.key, '/bookings', { limit: '7' });
    assert.deepEqual(
      mine.items.map((b: any) => b.id),
      expected.filter((_, i) => i % 3 === 0),
    );
  });

  test('the last page: next_cursor null and has_more false; an exact fit has no empty page', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    for (let i = 0; i < 4; i += 1) await putBooking(svc, t.organization.id, { created_at: at(i) });
    const first = await svc.call('GET', '/bookings?limit=2', { key: t.key });
    assert.equal(first.body.has_more, true);
    assert.equal(typeof first.body.next_cursor, 'string');
    const second = await svc.call('GET', `/bookings?limit=2&cursor=${first.body.next_cursor}`, {
      key: t.key,
    });
    assert.equal(second.body.data.length, 2);
    assert.equal(second.body.next_cursor, null);
    assert.equal(second.body.has_more, false);
    const all = await svc.call('GET', '/bookings?limit=4', { key: t.key });
    assert.deepEqual([all.body.data.length, all.body.next_cursor, all.body.has_more], [4, null, false]);
    const empty = await createTenant(svc, { scopes: ALL_READ });
    const none = await svc.call('GET', '/bookings', { key: empty.key });
    assert.deepEqual(none.body, { data: [], next_cursor: null, has_more: false });
  });

  test('same created_at: ties ordered by id descending, across pages', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const ids: string[] = [];
    for (let i = 0; i < 7; i += 1) {
      const id = randomUUID();
      await putBooking(svc, t.organization.id, { created_at: at(i < 5 ? 1 : i) }, id);
      ids.push(id);
    }
    const { items } = await walk(svc, t.key, '/bookings', { limit: '2' });
    const tied = ids.slice(0, 5).sort().reverse();
    assert.deepEqual(
      items.map((b: any) => b.id),
      [...tied, ids[5], ids[6]],
    );
    assert.deepEqual([...items].sort(byNewest), items);
  });

  test('rows inserted while a client pages neither shift nor repeat the others', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const original: string[] = [];
    for (let i = 0; i < 12; i += 1) {
      const id = randomUUID();
      await putBooking(svc, t.organization.id, { created_at: at(i + 10) }, id);
      original.push(id);
    }
    let n = 0;
    const { items } = await walk(svc, t.key, '/bookings', { limit: '5' }, async () => {
      // Newer bookings arrive between page fetches, at the head of the list.
      for (let k = 0; k < 3; k += 1) {
        n += 1;
        await putBooking(svc, t.organization.id, { created_at: at(-n) });
      }
    });
    assert.deepEqual(
      items.map((b: any) => b.id),
      original,
    );
    const now = await svc.call('GET', '/bookings?limit=100', { key: t.key });
    assert.equal(now.body.data.length, 12 + n);
  });

  test('filters are not in the cursor: the next page is filtered only if they are repeated', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const statuses = ['confirmada', 'cancelada', 'confirmada', 'cancelada', 'confirmada', 'cancelada'];
    const ids: string[] = [];
    for (const [i, status] of statuses.entries()) {
      const id = randomUUID();
      await putBooking(svc, t.organization.id, { status, created_at: at(i) }, id);
      ids.push(id);
    }
    const first = await svc.call('GET', '/bookings?status=confirmed&limit=1', { key: t.key });
    assert.deepEqual(
      first.body.data.map((b: any) => b.id),
      [ids[0]],
    );
    const cursor = first.body.next_cursor;
    const repeated = await svc.call('GET', `/bookings?status=confirmed&limit=10&cursor=${cursor}`, {
      key: t.key,
    });
    assert.deepEqual(
      repeated.body.data.map((b: any) => b.id),
      [ids[2], ids[4]],
    );
    const dropped = await svc.call('GET', `/bookings?limit=10&cursor=${cursor}`, { key: t.key });
    assert.deepEqual(
      dropped.body.data.map((b: any) => b.id),
      ids.slice(1),
    );
  });

  test('limit: default 25, above 100 cut to 100 without error', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    // Bulk rows straight into the table: the feed is not what this test is about.
    await svc.db.query(
      `INSERT INTO drivers (id, organization_id, name, created_at)
       SELECT gen_random_uuid(), $1, 'D' || g, $2::timestamptz - g * interval '1 second'
       FROM generate_series(1, 105) g`,
      [t.organization.id, at(0)],
    );
    const byDefault = await svc.call('GET', '/drivers', { key: t.key });
    assert.equal(byDefault.body.data.length, 25);
    assert.equal(byDefault.body.has_more, true);
    for (const limit of ['101', '1000', '99999999999999999999']) {
      const res = await svc.call('GET', `/drivers?limit=${limit}`, { key: t.key });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.data.length, 100);
      assert.equal(res.body.has_more, true);
    }
    const exact = await svc.call('GET', '/drivers?limit=100', { key: t.key });
    const rest = await svc.call('GET', `/drivers?limit=100&cursor=${exact.body.next_cursor}`, { key: t.key });
    assert.equal(rest.body.data.length, 5);
    assert.equal(rest.body.has_more, false);
    const one = await svc.call('GET', '/drivers?limit=1', { key: t.key });
    assert.equal(one.body.data.length, 1);
  });
});

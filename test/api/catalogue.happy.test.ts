import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { putCustomer, putDriver, putVehicle } from '../support/feed.js';
import { createTenant } from '../support/tenants.js';
import { ALL_READ, at, walk } from './read-support.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

describe('customers', () => {
  test('shape, with and without group', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const org = t.organization.id;
    const grouped = randomUUID();
    const plain = randomUUID();
    const group = { id: randomUUID(), name: 'Hoteles Costa' };
    await putCustomer(
      svc,
      org,
      { name: 'Hotel Mirador', external_id: 'CRM-7', group, created_at: at(1) },
      grouped,
    );
    await putCustomer(
      svc,
      org,
      { name: null, type: 'public_engine', active: false, created_at: at(2) },
      plain,
    );
    const one = await svc.call('GET', `/customers/${grouped}`, { key: t.key });
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(one.body, {
      id: grouped,
      external_id: 'CRM-7',
      name: 'Hotel Mirador',
      type: 'account',
      active: true,
      group,
      created_at: at(1),
    });
    const list = await svc.call('GET', '/customers', { key: t.key });
    assert.deepEqual(list.body, {
      data: [
        one.body,
        {
          id: plain,
          external_id: null,
          name: null,
          type: 'public_engine',
          active: false,
          group: null,
          created_at: at(2),
        },
      ],
      next_cursor: null,
      has_more: false,
    });
  });

  test('a deleted customer leaves the list and its id answers 404', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const gone = randomUUID();
    const kept = randomUUID();
    await putCustomer(svc, t.organization.id, { created_at: at(1) }, gone);
    await putCustomer(svc, t.organization.id, { created_at: at(2) }, kept);
    const del = await svc.op('DELETE', `/organizations/${t.organization.id}/customers/${gone}`);
    assert.equal(del.status, 200, del.text);
    const list = await svc.call('GET', '/customers', { key: t.key });
    assert.deepEqual(
      list.body.data.map((c: any) => c.id),
      [kept],
    );
    assert.equal((await svc.call('GET', `/customers/${gone}`, { key: t.key })).status, 404);
  });
});

describe('drivers and vehicles', () => {
  test('driver shape', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const id = randomUUID();
    await putDriver(svc, t.organization.id, { external_id: 'HR-1', created_at: at(0) }, id);
    const res = await svc.call('GET', `/drivers/${id}`, { key: t.key });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      id,
      external_id: 'HR-1',
      name: 'Lucía Gómez',
      nickname: 'Lucía',
      phone: '+34600000001',
      active: true,
      status: 'available',
      has_app_access: true,
      created_at: at(0),
    });
    assert.deepEqual((await svc.call('GET', '/drivers', { key: t.key })).body.data, [res.body]);
  });

  test('vehicle shape', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const id = randomUUID();
    await putVehicle(svc, t.organization.id, { created_at: at(0), seats: null, category: null }, id);
    const res = await svc.call('GET', `/vehicles/${id}`, { key: t.key });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      id,
      external_id: null,
      plate: '1234ABC',
      model: 'Mercedes-Benz Clase E',
      nickname: 'E1',
      category: null,
      seats: null,
      luggage: 3,
      wheelchair_adapted: false,
      eco_label: 'C',
      propulsion: 'diesel',
      active: true,
      created_at: at(0),
    });
    assert.deepEqual((await svc.call('GET', '/vehicles', { key: t.key })).body.data, [res.body]);
  });
});

const LISTS = [
  ['/customers', putCustomer],
  ['/drivers', putDriver],
  ['/vehicles', putVehicle],
] as const;

for (const [path, put] of LISTS) {
  describe(`${path} list`, () => {
    test('active=true, active=false and absent (all)', async () => {
      const t = await createTenant(svc, { scopes: ALL_READ });
      const ids: string[] = [];
      for (let i = 0; i < 6; i += 1) {
        const id = randomUUID();
        await put(svc, t.organization.id, { active: i % 3 !== 0, created_at: at(i) }, id);
        ids.push(id);
      }
      const pick = (pred: (i: number) => boolean) => ids.filter((_, i) => pred(i));
      const all = await walk(svc, t.key, path, { limit: '4' });
      assert.deepEqual(
        all.items.map((r: any) => r.id),
        ids,
      );
      const active = await walk(svc, t.key, path, { active: 'true', limit: '2' });
      assert.deepEqual(
        active.items.map((r: any) => r.id),
        pick((i) => i % 3 !== 0),
      );
      assert.equal(active.pages.length, 2);
      const inactive = await walk(svc, t.key, path, { active: 'false', limit: '1' });
      assert.deepEqual(
        inactive.items.map((r: any) => r.id),
        pick((i) => i % 3 === 0),
      );
    });

    test('only the caller organization rows', async () => {
      const mine = await createTenant(svc, { scopes: ALL_READ });
      const other = await createTenant(svc, { scopes: ALL_READ });
      const id = randomUUID();
      await put(svc, mine.organization.id, {}, id);
      await put(svc, other.organization.id, {});
      const res = await svc.call('GET', path, { key: mine.key });
      assert.deepEqual(
        res.body.data.map((r: any) => r.id),
        [id],
      );
    });
  });
}

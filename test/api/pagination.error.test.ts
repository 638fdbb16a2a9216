import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { putBooking, putCustomer, putDriver, putVehicle } from '../support/feed.js';
import { createTenant, expectOk, type Tenant } from '../support/tenants.js';
import { ALL_READ, assertError, at } from './read-support.js';

let svc: TestService;
let t: Tenant;
const cursors: Record<string, string> = {};

const LISTS = ['/bookings', '/customers', '/drivers', '/vehicles', '/events'];

before(async () => {
  svc = await startService();
  t = await createTenant(svc, { scopes: ALL_READ, flags: { outbox_enabled: true } });
  const org = t.organization.id;
  for (let i = 0; i < 2; i += 1) {
    await putBooking(svc, org, { created_at: at(i) });
    await putCustomer(svc, org, { created_at: at(i) });
    await putDriver(svc, org, { created_at: at(i) });
    await putVehicle(svc, org, { created_at: at(i) });
  }
  for (const path of LISTS) {
    const res = await svc.call('GET', `${path}?limit=1`, { key: t.key });
    assert.equal(typeof res.body.next_cursor, 'string', `${path}: ${res.text}`);
    cursors[path] = res.body.next_cursor;
  }
});
after(() => svc.close());

const invalidCursor = (res: any) => assertError(res, 400, 'invalid_cursor', { param: 'cursor' });

function flip(s: string, at: number): string {
  const c = s[at] === 'A' ? 'B' : 'A';
  return s.slice(0, at) + c + s.slice(at + 1);
}

for (const path of LISTS) {
  describe(`${path}: cursors that are not one of ours for this list`, () => {
    test('the genuine cursor works', async () => {
      const res = await svc.call('GET', `${path}?limit=1&cursor=${cursors[path]}`, { key: t.key });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.data.length, 1);
    });

    test('tampered payload or signature, truncated, garbage, empty', async () => {
      const c = cursors[path] as string;
      const dot = c.indexOf('.');
      for (const bad of [
        flip(c, 2),
        flip(c, dot + 3),
        c.slice(0, -1),
        c.slice(0, dot),
        c.slice(0, dot + 1),
        `${c}.x`,
        'abc',
        '',
        '%%%',
      ]) {
        invalidCursor(await svc.call('GET', `${path}?cursor=${encodeURIComponent(bad)}`, { key: t.key }));
      }
    });

    test('a cursor of another list', async () => {
      for (const other of LISTS.filter((p) => p !== path)) {
        invalidCursor(await svc.call('GET', `${path}?cursor=${cursors[other]}`, { key: t.key }));
      }
    });

    test('a cursor replayed by another organization', async () => {
      const stranger = await createTenant(svc, { scopes: ALL_READ });
      invalidCursor(await svc.call('GET', `${path}?cursor=${cursors[path]}`, { key: stranger.key }));
    });

    test('limit below 1 or not an integer', async () => {
      for (const value of ['0', '-1', '1.5', 'abc']) {
        assertError(
          await svc.call('GET', `${path}?limit=${value}`, { key: t.key }),
          400,
          'validation_error',
          {
            param: 'limit',
          },
        );
      }
    });
  });
}

test('with external_id the cursor is still verified', async () => {
  invalidCursor(await svc.call('GET', '/bookings?external_id=x&cursor=abc', { key: t.key }));
  invalidCursor(
    await svc.call('GET', `/bookings?external_id=x&cursor=${cursors['/drivers']}`, { key: t.key }),
  );
});

test('a key of another integration of the same organization may continue the walk', async () => {
  const sibling = await createTenant(svc, { scopes: ALL_READ, organizationId: t.organization.id });
  const res = await svc.call('GET', `/drivers?limit=1&cursor=${cursors['/drivers']}`, { key: sibling.key });
  assert.equal(res.status, 200, res.text);
});

// Last: rotating invalidates every cursor issued before, for every list.
test('after the operator rotates the signing key, every earlier cursor is invalid_cursor', async () => {
  await expectOk(await svc.op('POST', '/cursor-keys/rotate'));
  for (const path of LISTS) {
    invalidCursor(await svc.call('GET', `${path}?cursor=${cursors[path]}`, { key: t.key }));
    const fresh = await svc.call('GET', `${path}?limit=1`, { key: t.key });
    const next = await svc.call('GET', `${path}?limit=1&cursor=${fresh.body.next_cursor}`, { key: t.key });
    assert.equal(next.status, 200, `a new cursor works after rotation: ${next.text}`);
  }
});

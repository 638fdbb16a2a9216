import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { putBooking, putDriver, putVehicle } from '../support/feed.js';
import { expectOk, type Tenant } from '../support/tenants.js';
import { exchangePair, ORIGINATOR_PRICING, putExchanged } from './read-support.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

/** Another key of the same integration holding only `scopes`. */
async function keyWith(t: Tenant, scopes: string[]): Promise<string> {
  const res = await svc.op('POST', `/integrations/${t.integration.id}/keys`, {
    name: scopes.join(' ') || 'none',
    scopes,
    environment: 'live',
  });
  return (await expectOk(res, 201)).key;
}

const SCOPE_SETS: Array<[string, string[]]> = [
  ['no extra scope', ['bookings:read']],
  ['passengers:read', ['bookings:read', 'passengers:read']],
  ['pricing:read', ['bookings:read', 'pricing:read']],
  ['passengers:read and pricing:read', ['bookings:read', 'passengers:read', 'pricing:read']],
];

describe('the exchange: originator and executor', () => {
  async function exchanged() {
    const { originator, executor } = await exchangePair(svc);
    const driver = randomUUID();
    const vehicle = randomUUID();
    await putDriver(svc, executor.organization.id, { name: 'Pedro Ruiz', nickname: 'Pedro' }, driver);
    await putVehicle(svc, executor.organization.id, { plate: '9999ZZZ', model: 'Mercedes Vito' }, vehicle);
    const id = randomUUID();
    await putExchanged(svc, originator, executor, { driver_id: driver, vehicle_id: vehicle }, id);
    return { originator, executor, driver, vehicle, id };
  }

  test('the originator sees an external assignment and its full price', async () => {
    const { originator, id } = await exchanged();
    const b = (await svc.call('GET', `/bookings/${id}`, { key: originator.key })).body;
    assert.equal(b.role, 'originator');
    assert.deepEqual(b.assignment, { external: true, driver: null, vehicle: null });
    assert.deepEqual(b.pricing, ORIGINATOR_PRICING);
  });

  test('the executor sees its own driver and vehicle and only its net', async () => {
    const { executor, id, driver, vehicle } = await exchanged();
    const res = await svc.call('GET', `/bookings/${id}`, { key: executor.key });
    const b = res.body;
    assert.equal(b.role, 'executor');
    assert.deepEqual(b.assignment, {
      external: false,
      driver: { id: driver, name: 'Pedro Ruiz', nickname: 'Pedro' },
      vehicle: { id: vehicle, plate: '9999ZZZ', model: 'Mercedes Vito' },
    });
    // Fast serialization must keep the second pricing shape whole, not fit it into the first.
    assert.deepEqual(b.pricing, { currency: 'EUR', net_executor: 80 });
    for (const hidden of ['"total"', 'sale_total', 'vat_pct', 'payment_status']) {
      assert.ok(!res.text.includes(hidden), `${hidden} visible to the executor`);
    }
  });

  test('both lists hold the booking, each with its own role', async () => {
    const { originator, executor, id } = await exchanged();
    const own = randomUUID();
    await putBooking(svc, executor.organization.id, {}, own);
    const a = (await svc.call('GET', '/bookings', { key: originator.key })).body.data;
    assert.deepEqual(
      a.map((b: any) => [b.id, b.role]),
      [[id, 'originator']],
    );
    const e = (await svc.call('GET', '/bookings', { key: executor.key })).body.data;
    assert.deepEqual(
      e.map((b: any) => [b.id, b.role]).sort(),
      [
        [id, 'executor'],
        [own, 'originator_and_executor'],
      ].sort(),
    );
  });

  for (const side of ['originator', 'executor'] as const) {
    describe(`as ${side}, the four scope combinations through HTTP`, () => {
      for (const [name, scopes] of SCOPE_SETS) {
        test(name, async () => {
          const pair = await exchanged();
          const key = await keyWith(pair[side], scopes);
          for (const res of [
            await svc.call('GET', `/bookings/${pair.id}`, { key }),
            await svc.call('GET', '/bookings', { key }),
          ]) {
            assert.equal(res.status, 200, res.text);
            const b = res.body.data ? res.body.data[0] : res.body;
            assert.equal(b.role, side);
            if (scopes.includes('passengers:read')) {
              assert.deepEqual(b.passenger, {
                name: 'Ana Pérez',
                phone: '+34600111222',
                email: 'ana@example.com',
              });
            } else {
              assert.equal('passenger' in b, false, 'absent, not null');
              assert.ok(!res.text.includes('Ana Pérez'));
            }
            if (scopes.includes('pricing:read')) {
              assert.deepEqual(
                b.pricing,
                side === 'executor' ? { currency: 'EUR', net_executor: 80 } : ORIGINATOR_PRICING,
              );
            } else {
              assert.equal('pricing' in b, false, 'absent, not null');
              assert.ok(!res.text.includes('"pricing"'));
            }
          }
        });
      }
    });
  }
});

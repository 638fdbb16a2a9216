// The tenancy matrix: three organizations linked by exchanged bookings (A originates for B, B for
// C), two integrations in A and B. Every endpoint that takes an id is called by every caller with
// every id it may not see (another organization's booking by UUID and by number, customer, driver,
// vehicle, webhook; another integration's webhook in the same organization) and must answer exactly
// as for an id that does not exist: same status, same body but the request id. Lists and filters
// show nothing of another tenant, and one integration's webhooks and deliveries are invisible to
// another's, in its own organization too.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { ALL_READ, withoutRequestId } from '../api/read-support.js';
import { type Response, serviceForFile } from '../support/context.js';
import { putBooking, putCustomer, putDriver, putVehicle } from '../support/feed.js';
import { createTenant, expectOk, type Tenant } from '../support/tenants.js';
import { createWebhook, WEBHOOK_SCOPES } from '../support/webhooks.js';

// Webhook names resolve to a public address; no worker runs, so test deliveries stay pending.
const svc = await serviceForFile({}, async () => [{ address: '93.184.216.34', family: 4 }]);

const SCOPES = [...new Set([...WEBHOOK_SCOPES, ...ALL_READ])];

interface Org {
  name: string;
  integrations: Tenant[];
  customer: string;
  driver: string;
  vehicle: string;
}

async function organization(name: string, integrations: number): Promise<Org> {
  const first = await createTenant(svc, {
    scopes: SCOPES,
    flags: { webhooks_enabled: true, outbox_enabled: true },
  });
  const all = [first];
  for (let i = 1; i < integrations; i++) {
    all.push(await createTenant(svc, { scopes: SCOPES, organizationId: first.organization.id }));
  }
  const orgId = first.organization.id;
  const [customer, driver, vehicle] = [randomUUID(), randomUUID(), randomUUID()];
  await putCustomer(svc, orgId, {}, customer);
  await putDriver(svc, orgId, {}, driver);
  await putVehicle(svc, orgId, {}, vehicle);
  return { name, integrations: all, customer, driver, vehicle };
}

const A = await organization('A', 2);
const B = await organization('B', 2);
const C = await organization('C', 1);
const orgs = [A, B, C];
const orgId = (o: Org) => o.integrations[0]!.organization.id;

interface Booking {
  id: string;
  reference: string;
  customer: string;
  parties: Org[];
}

async function booking(originator: Org, executor: Org | null): Promise<Booking> {
  const id = randomUUID();
  const overrides: Record<string, unknown> = { customer_id: originator.customer };
  if (executor) {
    // The executor assigns its own driver and vehicle.
    Object.assign(overrides, {
      executor_organization_id: orgId(executor),
      driver_id: executor.driver,
      vehicle_id: executor.vehicle,
    });
  }
  await putBooking(svc, orgId(originator), overrides, id);
  const [row] = await svc.db.query<{ reference: string }>('SELECT reference FROM bookings WHERE id = $1', [
    id,
  ]);
  return {
    id,
    reference: row!.reference,
    customer: originator.customer,
    parties: executor ? [originator, executor] : [originator],
  };
}

const bookings = [
  await booking(A, null),
  await booking(B, null),
  await booking(C, null),
  await booking(A, B),
  await booking(B, C),
];

// One webhook per integration, each with a test delivery queued; one external id per integration.
const webhooks = new Map<Tenant, string>();
for (const o of orgs) {
  for (const [i, t] of o.integrations.entries()) {
    const hook = await createWebhook(svc, t, `https://hooks-${o.name}${i}.example.com/in`, [
      'booking.created',
    ]);
    webhooks.set(t, hook.id);
    await expectOk(await svc.call('POST', `/webhooks/${hook.id}/test`, { key: t.key }), 202);
    const own = bookings.find((b) => b.parties[0] === o)!;
    await expectOk(
      await svc.call('PUT', `/bookings/${own.id}/external-id`, {
        key: t.key,
        body: { external_id: `ext-${o.name}${i}` },
      }),
    );
  }
}

const callers = orgs.flatMap((o) => o.integrations.map((t, i) => ({ org: o, t, label: `${o.name}${i}` })));
type Caller = (typeof callers)[number];

/** Every id of the fixture, by kind, with whether `caller` may see it at an endpoint of that kind. */
function ids(caller: Caller) {
  const visibleBooking = (b: Booking) => b.parties.includes(caller.org);
  return [
    ...bookings.flatMap((b) => [
      { kind: 'booking', id: b.id, visible: visibleBooking(b) },
      { kind: 'booking', id: b.reference, visible: visibleBooking(b) },
    ]),
    ...orgs.flatMap((o) => [
      { kind: 'customer', id: o.customer, visible: o === caller.org },
      { kind: 'driver', id: o.driver, visible: o === caller.org },
      { kind: 'vehicle', id: o.vehicle, visible: o === caller.org },
    ]),
    ...[...webhooks].map(([t, id]) => ({ kind: 'webhook', id, visible: t === caller.t })),
  ];
}

/** The endpoints that take an id: the kind of id they read, and how to call them. */
const BY_ID: Array<{ kind: string; method: string; path: (id: string) => string; body?: unknown }> = [
  { kind: 'booking', method: 'GET', path: (id) => `/bookings/${id}` },
  { kind: 'booking', method: 'GET', path: (id) => `/bookings/${id}/external-id` },
  {
    kind: 'booking',
    method: 'PUT',
    path: (id) => `/bookings/${id}/external-id`,
    body: { external_id: 'taken' },
  },
  { kind: 'booking', method: 'DELETE', path: (id) => `/bookings/${id}/external-id` },
  { kind: 'customer', method: 'GET', path: (id) => `/customers/${id}` },
  { kind: 'driver', method: 'GET', path: (id) => `/drivers/${id}` },
  { kind: 'vehicle', method: 'GET', path: (id) => `/vehicles/${id}` },
  { kind: 'webhook', method: 'GET', path: (id) => `/webhooks/${id}` },
  { kind: 'webhook', method: 'PATCH', path: (id) => `/webhooks/${id}`, body: { description: 'mine now' } },
  { kind: 'webhook', method: 'DELETE', path: (id) => `/webhooks/${id}` },
  {
    kind: 'webhook',
    method: 'POST',
    path: (id) => `/webhooks/${id}/rotate-secret`,
    body: { overlap_minutes: 0 },
  },
  { kind: 'webhook', method: 'POST', path: (id) => `/webhooks/${id}/test` },
  { kind: 'webhook', method: 'GET', path: (id) => `/webhooks/${id}/deliveries` },
];

const call = (caller: Caller, method: string, path: string, body?: unknown) =>
  svc.call(method, path, { key: caller.t.key, ...(body === undefined ? {} : { body }) });

const UUID = /^[0-9a-f-]{36}$/;
const MISSING_REFERENCE = '98765432109876543210';

describe('every endpoint, every caller, every foreign id: answered as a missing one', () => {
  for (const caller of callers) {
    test(`caller ${caller.label}`, async () => {
      let compared = 0;
      for (const endpoint of BY_ID) {
        const missing = new Map<boolean, Response>([
          [true, await call(caller, endpoint.method, endpoint.path(randomUUID()), endpoint.body)],
          [false, await call(caller, endpoint.method, endpoint.path(MISSING_REFERENCE), endpoint.body)],
        ]);
        for (const res of missing.values()) assert.equal(res.status, 404, res.text);
        for (const { kind, id, visible } of ids(caller)) {
          // An id this caller sees at this endpoint is not foreign here.
          if (kind === endpoint.kind && visible) continue;
          const res = await call(caller, endpoint.method, endpoint.path(id), endpoint.body);
          const expected = missing.get(UUID.test(id))!;
          assert.deepEqual(
            withoutRequestId(res),
            withoutRequestId(expected),
            `${caller.label} ${endpoint.method} ${endpoint.path(id)} (${kind}) answered unlike a missing id`,
          );
          compared += 1;
        }
      }
      assert.ok(compared > 100, `${compared} foreign calls`);
      console.log(`# tenancy: ${caller.label} made ${compared} calls with foreign ids`);
    });
  }
});

describe('lists and filters show nothing of another tenant', () => {
  for (const caller of callers) {
    test(`caller ${caller.label}`, async () => {
      const visible = bookings.filter((b) => b.parties.includes(caller.org));
      const listed = (await expectOk(await call(caller, 'GET', '/bookings?limit=100'))) as {
        data: { id: string }[];
      };
      assert.deepEqual(listed.data.map((b) => b.id).sort(), visible.map((b) => b.id).sort());

      for (const [path, own] of [
        ['/customers', caller.org.customer],
        ['/drivers', caller.org.driver],
        ['/vehicles', caller.org.vehicle],
      ] as const) {
        const page = (await expectOk(await call(caller, 'GET', `${path}?limit=100`))) as {
          data: { id: string }[];
        };
        assert.deepEqual(
          page.data.map((x) => x.id),
          [own],
          path,
        );
      }

      // Only its own webhook, not even the other integration's of its organization.
      const hooks = (await expectOk(await call(caller, 'GET', '/webhooks'))) as { data: { id: string }[] };
      assert.deepEqual(
        hooks.data.map((h) => h.id),
        [webhooks.get(caller.t)],
      );
      const deliveries = (await expectOk(
        await call(caller, 'GET', `/webhooks/${webhooks.get(caller.t)}/deliveries`),
      )) as { data: unknown[] };
      assert.equal(deliveries.data.length, 1);

      const emptyAs = async (path: string, missingPath: string) => {
        const [res, missing] = [await call(caller, 'GET', path), await call(caller, 'GET', missingPath)];
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, missing.body, `${caller.label} GET ${path}`);
      };
      // Filters by another tenant's ids find what a missing id finds: nothing.
      const seenCustomers = new Set([caller.org.customer, ...visible.map((b) => b.customer)]);
      for (const o of orgs.filter((x) => !seenCustomers.has(x.customer))) {
        await emptyAs(`/bookings?customer_id=${o.customer}`, `/bookings?customer_id=${randomUUID()}`);
      }
      for (const b of bookings.filter((x) => !visible.includes(x))) {
        await emptyAs(`/events?resource_id=${b.id}`, `/events?resource_id=${randomUUID()}`);
      }
      // Another integration's external ids, in its own organization or not, name nothing here.
      for (const other of callers.filter((c) => c !== caller)) {
        await emptyAs(`/bookings?external_id=ext-${other.label}`, '/bookings?external_id=ext-missing');
      }
      // Every event it reads is about a booking it sees.
      const events = (await expectOk(await call(caller, 'GET', '/events?limit=100'))) as {
        data: { resource: { id: string } }[];
      };
      const seen = new Set(visible.map((b) => b.id));
      for (const e of events.data) assert.ok(seen.has(e.resource.id), JSON.stringify(e));
    });
  }
});

// A booking change reaches a real HTTPS receiver on loopback: signed, with the contract's headers
// and envelope, the booking shaped for the receiving integration's scopes at the attempt.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { bookingBody, putBooking, putCustomer, putDriver, putVehicle } from '../support/feed.js';
import { expectOk } from '../support/tenants.js';
import {
  arrivalsAt,
  createWebhook,
  deliveriesUntil,
  ENVELOPE_KEYS,
  requestsTo,
  signatureMatches,
  WEBHOOK_SCOPES,
  webhookHarness,
  webhookTenant,
} from '../support/webhooks.js';

const { svc, receiver } = await webhookHarness();

const forPath = (path: string) => requestsTo(receiver, path);
const arrivals = (path: string, count: number) => arrivalsAt(receiver, path, count);

describe('delivery of booking events', () => {
  test('headers, signature and envelope; data is the booking as the change left it', async () => {
    const t = await webhookTenant(svc);
    const path = `/h/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path));
    assert.match(hook.secret, /^whsec_/);
    const id = randomUUID();
    const created = await putBooking(svc, t.organization.id, {}, id);
    await putBooking(svc, t.organization.id, { distance_km: 60, status: 'cancelada' }, id);
    // Deliveries of one webhook are concurrent and may arrive in either order (docs/webhooks.md).
    const both = await arrivals(path, 2);
    const first = both.find((r) => r.headers['x-svc-event'] === 'booking.created');
    const second = both.find((r) => r.headers['x-svc-event'] === 'booking.cancelled');
    assert.ok(first && second);

    for (const req of [first, second]) {
      assert.equal(req.method, 'POST');
      assert.equal(req.headers['content-type'], 'application/json');
      assert.equal(req.headers['user-agent'], 'SVC-Webhooks/1');
      assert.equal(req.headers['x-svc-attempt'], '1');
      assert.match(req.headers['x-svc-timestamp'] ?? '', /^\d{10}$/);
      assert.ok(Math.abs(Number(req.headers['x-svc-timestamp']) - Date.now() / 1000) < 60);
      assert.match(req.headers['x-svc-signature'] ?? '', /^v1=[0-9a-f]{64}$/);
      assert.ok(signatureMatches(hook.secret, req.headers, req.body), 'verifies with the secret shown once');
      assert.ok(!signatureMatches(`${hook.secret}x`, req.headers, req.body));
      const body = JSON.parse(req.body);
      assert.equal(req.headers['x-svc-event'], body.type);
      assert.equal(req.headers['x-svc-event-id'], body.id);
    }
    const created1 = JSON.parse(first.body);
    const cancelled = JSON.parse(second.body);
    assert.deepEqual(Object.keys(created1), ENVELOPE_KEYS);
    assert.equal(created1.type, 'booking.created');
    assert.equal(created1.version, 1);
    assert.deepEqual(created1.organization, { id: t.organization.id });
    assert.deepEqual(created1.resource, { type: 'booking', id });
    assert.deepEqual(created1.changes, []);
    assert.equal(created1.previous_status, null);
    assert.equal(created1.data.status, 'confirmed', 'as created, not as it is now');
    assert.equal(created1.data.distance_km, 52.4);
    assert.equal(created1.data.reference, created.reference);
    assert.equal(cancelled.type, 'booking.cancelled');
    assert.deepEqual(cancelled.changes, ['distance_km', 'status']);
    assert.equal(cancelled.previous_status, 'confirmada');
    assert.equal(cancelled.data.status, 'cancelled');
    assert.equal(cancelled.data.distance_km, 60);

    // The same event in the log, and the body of the API's own read for the same state.
    const log = await expectOk(await svc.call('GET', `/events?resource_id=${id}`, { key: t.key }));
    assert.deepEqual(
      log.data.map((e: { id: string }) => e.id),
      [cancelled.id, created1.id],
    );
    assert.equal(log.data[0].created_at, cancelled.created_at);
    const read = await expectOk(await svc.call('GET', `/bookings/${id}`, { key: t.key }));
    assert.deepEqual(cancelled.data, read);
    for (const secret of ['internal note', 'chat line', 'PEREZ']) assert.ok(!second.body.includes(secret));

    const deliveries = await deliveriesUntil(svc, t, hook.id, (d) =>
      d.every((x) => x.status === 'succeeded'),
    );
    assert.equal(deliveries.length, 2);
    assert.deepEqual(
      deliveries.map((d) => d.id).sort(),
      [first, second].map((r) => r.headers['x-svc-delivery']).sort(),
    );
    // The booking kept for the bodies (personal data) goes once every delivery of the event is final.
    const kept = () =>
      svc.db.query('SELECT 1 FROM event_payloads WHERE event_id = ANY ($1::uuid[])', [
        [created1.id, cancelled.id],
      ]);
    const deadline = Date.now() + 5000;
    while ((await kept()).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal((await kept()).length, 0);
    const metrics = (await svc.op('GET', '/metrics')).text;
    assert.match(metrics, /svc_webhook_attempts_total\{outcome="2xx"\} [1-9]/);
    assert.match(metrics, /svc_webhook_lag_seconds_count [1-9]/);
    assert.match(metrics, /svc_webhook_deliveries\{status="pending"\} \d+/);
    for (const d of deliveries) {
      assert.equal(d.attempt, 1);
      assert.equal(d.last_status, 200);
      assert.equal(d.last_error, null);
      assert.equal(d.next_retry_at, null);
      assert.ok(d.delivered_at);
    }
  });

  test('linked customer, driver and vehicle carry their names as the change found them', async () => {
    const t = await webhookTenant(svc);
    const org = t.organization.id;
    const path = `/h/${randomUUID()}`;
    await createWebhook(svc, t, receiver.url(path));
    const [customer, driver, vehicle] = [randomUUID(), randomUUID(), randomUUID()];
    await putCustomer(svc, org, {}, customer);
    await putDriver(svc, org, {}, driver);
    await putVehicle(svc, org, {}, vehicle);
    const id = randomUUID();
    await putBooking(svc, org, { customer_id: customer, driver_id: driver, vehicle_id: vehicle }, id);
    // Renamed after the change: the body shows the names the change found.
    await putDriver(svc, org, { name: 'Otra Persona', nickname: 'Otra' }, driver);
    await putVehicle(svc, org, { plate: '9999ZZZ', model: 'Otro' }, vehicle);
    // Unlinked: the same booking with nothing assigned.
    await putBooking(svc, org, { customer_id: null, driver_id: null, vehicle_id: null }, id);
    const both = (await arrivals(path, 2)).map((r) => JSON.parse(r.body));
    const created = both.find((b) => b.type === 'booking.created');
    const unlinked = both.find((b) => b.type !== 'booking.created');
    assert.ok(created && unlinked);
    assert.deepEqual(created.data.customer, { id: customer, name: 'Hotel Mirador' });
    assert.deepEqual(created.data.assignment.driver, { id: driver, name: 'Lucía Gómez', nickname: 'Lucía' });
    assert.deepEqual(created.data.assignment.vehicle, {
      id: vehicle,
      plate: '1234ABC',
      model: 'Mercedes-Benz Clase E',
    });
    assert.equal(unlinked.data.customer, null);
    assert.equal(unlinked.data.assignment.driver, null);
    assert.equal(unlinked.data.assignment.vehicle, null);
  });

  test('passenger and pricing follow the integration scopes at the attempt', async () => {
    const t = await webhookTenant(svc, { scopes: [...WEBHOOK_SCOPES, 'passengers:read', 'pricing:read'] });
    const path = `/h/${randomUUID()}`;
    await createWebhook(svc, t, receiver.url(path), ['booking.created', 'booking.updated']);
    const id = randomUUID();
    await putBooking(svc, t.organization.id, {}, id);
    const [withScopes] = await arrivals(path, 1);
    const data = JSON.parse(withScopes?.body ?? '{}').data;
    assert.deepEqual(data.passenger, { name: 'Ana Pérez', phone: '+34600111222', email: 'ana@example.com' });
    assert.equal(data.pricing.total, 95.5);

    // The integration loses both scopes: the next body has neither property.
    await expectOk(await svc.op('PATCH', `/integrations/${t.integration.id}`, { scopes: WEBHOOK_SCOPES }));
    await putBooking(svc, t.organization.id, { distance_km: 70 }, id);
    const [, without] = await arrivals(path, 2);
    const after = JSON.parse(without?.body ?? '{}');
    assert.equal(after.type, 'booking.updated');
    assert.ok(!('passenger' in after.data));
    assert.ok(!('pricing' in after.data));
    assert.ok(!(without?.body ?? '').includes('Ana'));
  });

  test('subscriptions: only the types asked for', async () => {
    const t = await webhookTenant(svc);
    const path = `/h/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path), ['booking.cancelled']);
    const id = randomUUID();
    await putBooking(svc, t.organization.id, {}, id);
    await putBooking(svc, t.organization.id, { status: 'cancelada' }, id);
    const [only] = await arrivals(path, 1);
    assert.equal(only?.headers['x-svc-event'], 'booking.cancelled');
    // Fan-out happens when the feed's write is published, before it is answered: the creation
    // made no delivery at all, so nothing else can arrive later.
    const queued = await svc.call('GET', `/webhooks/${hook.id}/deliveries`, { key: t.key });
    assert.deepEqual(
      queued.body.data.map((d: { event_type: string }) => d.event_type),
      ['booking.cancelled'],
    );
    assert.equal(forPath(path).length, 1);
  });

  test('during a rotation overlap two signatures, the new one first; with 0 only the new', async () => {
    const t = await webhookTenant(svc);
    const path = `/h/${randomUUID()}`;
    const hook = await createWebhook(svc, t, receiver.url(path));
    const rotated = await expectOk(
      await svc.call('POST', `/webhooks/${hook.id}/rotate-secret`, {
        key: t.key,
        body: { overlap_minutes: 60 },
      }),
    );
    assert.equal(rotated.id, hook.id);
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, hook.secret);
    const until = Date.parse(rotated.previous_secret_valid_until) - Date.now();
    assert.ok(until > 59 * 60_000 && until <= 60 * 60_000 + 5000, String(until));
    const id = randomUUID();
    await putBooking(svc, t.organization.id, {}, id);
    const [during] = await arrivals(path, 1);
    const parts = (during?.headers['x-svc-signature'] ?? '').split(',');
    assert.equal(parts.length, 2);
    assert.ok(
      signatureMatches(
        rotated.secret,
        { ...during?.headers, 'x-svc-signature': parts[0] ?? '' },
        during?.body ?? '',
      ),
    );
    assert.ok(
      signatureMatches(
        hook.secret,
        { ...during?.headers, 'x-svc-signature': parts[1] ?? '' },
        during?.body ?? '',
      ),
    );

    const again = await expectOk(
      await svc.call('POST', `/webhooks/${hook.id}/rotate-secret`, {
        key: t.key,
        body: { overlap_minutes: 0 },
      }),
    );
    assert.ok(Date.parse(again.previous_secret_valid_until) <= Date.now() + 1000);
    await putBooking(svc, t.organization.id, { distance_km: 80 }, id);
    const [, after] = await arrivals(path, 2);
    assert.match(after?.headers['x-svc-signature'] ?? '', /^v1=[0-9a-f]{64}$/, 'one signature only');
    assert.ok(signatureMatches(again.secret, after?.headers ?? {}, after?.body ?? ''));
    assert.ok(!signatureMatches(rotated.secret, after?.headers ?? {}, after?.body ?? ''), 'previous is dead');
  });

  test('the executor receives the booking shaped for its role; an organization without webhooks nothing', async () => {
    const executor = await webhookTenant(svc);
    const originator = await webhookTenant(svc, { flags: { webhooks_enabled: false } });
    const path = `/h/${randomUUID()}`;
    await createWebhook(svc, executor, receiver.url(path));
    const id = randomUUID();
    await svc.op(
      'PUT',
      `/organizations/${originator.organization.id}/bookings/${id}`,
      bookingBody({ executor_organization_id: executor.organization.id }),
    );
    const [req] = await arrivals(path, 1);
    const body = JSON.parse(req?.body ?? '{}');
    assert.deepEqual(body.organization, { id: executor.organization.id });
    assert.equal(body.data.role, 'executor');
    const origin = await svc.db.query(
      'SELECT 1 FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.organization_id = $1',
      [originator.organization.id],
    );
    assert.equal(origin.length, 0);
  });
});

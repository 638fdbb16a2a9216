// Who may manage webhooks: each route's scope (a 403 that is counted and carries the rate-limit
// headers), bookings:read to subscribe, the organization's webhooks switch, and the secret, which
// leaves the service once (at creation or rotation) and never through logs or reads.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { assertError } from '../api/read-support.js';
import type { Response, TestService } from '../support/context.js';
import { expectOk, type Tenant } from '../support/tenants.js';
import {
  createWebhook,
  deliveriesUntil,
  signatureMatches,
  WEBHOOK_SCOPES,
  webhookHarness,
  webhookTenant,
} from '../support/webhooks.js';

const { svc, receiver } = await webhookHarness();

/** Another key of the tenant's integration, with its own scopes. */
async function extraKey(s: TestService, t: Tenant, scopes: string[]): Promise<string> {
  const res = await s.op('POST', `/integrations/${t.integration.id}/keys`, {
    name: `k-${randomUUID().slice(0, 8)}`,
    scopes,
    environment: 'live',
  });
  assert.equal(res.status, 201, res.text);
  return res.body.key;
}

const without = (scope: string) => WEBHOOK_SCOPES.filter((s) => s !== scope);

type Route = [method: string, path: (id: string) => string, body: unknown, scope: string];
const ROUTES: Route[] = [
  ['GET', () => '/webhooks', undefined, 'webhooks:read'],
  ['GET', (id) => `/webhooks/${id}`, undefined, 'webhooks:read'],
  ['GET', (id) => `/webhooks/${id}/deliveries`, undefined, 'webhooks:read'],
  ['POST', () => '/webhooks', { url: 'https://localhost/x', events: ['*'] }, 'webhooks:write'],
  ['PATCH', (id) => `/webhooks/${id}`, { description: 'x' }, 'webhooks:write'],
  ['DELETE', (id) => `/webhooks/${id}`, undefined, 'webhooks:write'],
  ['POST', (id) => `/webhooks/${id}/test`, undefined, 'webhooks:write'],
  ['POST', (id) => `/webhooks/${id}/rotate-secret`, { overlap_minutes: 5 }, 'webhooks:write'],
];

function assertRateLimitHeaders(res: Response) {
  assert.equal(res.headers['x-ratelimit-limit'], '600', res.text);
  assert.match(String(res.headers['x-ratelimit-remaining']), /^\d+$/);
}

describe('scopes', () => {
  for (const [method, path, body, scope] of ROUTES) {
    test(`${method} ${path(':id')} needs ${scope}: 403 insufficient_scope, counted, with the headers`, async () => {
      const t = await webhookTenant(svc);
      const hook = await createWebhook(svc, t, receiver.url('/scoped'));
      const limited = await extraKey(svc, t, without(scope));
      const call = () => svc.call(method, path(hook.id), { key: limited, ...(body ? { body } : {}) });
      const first = await call();
      assertError(first, 403, 'insufficient_scope', { required_scope: scope });
      assertRateLimitHeaders(first);
      const second = await call();
      assertError(second, 403, 'insufficient_scope', { required_scope: scope });
      assert.equal(
        Number(second.headers['x-ratelimit-remaining']),
        Number(first.headers['x-ratelimit-remaining']) - 1,
        'a refusal for scope counts against the limits',
      );
      // The scope is checked before the id: a missing id is the same 403, not a 404.
      const missing = await svc.call(method, path(randomUUID()), { key: limited, ...(body ? { body } : {}) });
      assertError(missing, 403, 'insufficient_scope', { required_scope: scope });

      // Nothing happened to the webhook.
      const read = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }));
      assert.equal(read.description, null);
      const [counts] = await svc.db.query<{ hooks: number; deliveries: number; rotated: number }>(
        `SELECT (SELECT count(*)::int FROM webhooks WHERE integration_id = $1) AS hooks,
                (SELECT count(*)::int FROM webhook_deliveries WHERE webhook_id = $2) AS deliveries,
                (SELECT count(*)::int FROM webhooks WHERE id = $2 AND previous_secret IS NOT NULL) AS rotated`,
        [t.integration.id, hook.id],
      );
      assert.deepEqual(counts, { hooks: 1, deliveries: 0, rotated: 0 });
    });
  }

  test('webhooks:write alone does not read, webhooks:read alone does not write', async () => {
    const t = await webhookTenant(svc);
    const hook = await createWebhook(svc, t, receiver.url('/split'));
    const reader = await extraKey(svc, t, ['bookings:read', 'webhooks:read']);
    const writer = await extraKey(svc, t, ['bookings:read', 'webhooks:write']);
    assert.equal((await svc.call('GET', `/webhooks/${hook.id}`, { key: reader })).status, 200);
    assertError(await svc.call('GET', `/webhooks/${hook.id}`, { key: writer }), 403, 'insufficient_scope', {
      required_scope: 'webhooks:read',
    });
    assertError(
      await svc.call('PATCH', `/webhooks/${hook.id}`, { key: reader, body: { active: false } }),
      403,
      'insufficient_scope',
      { required_scope: 'webhooks:write' },
    );
    const paused = await svc.call('PATCH', `/webhooks/${hook.id}`, { key: writer, body: { active: false } });
    assert.equal(paused.status, 200, paused.text);
  });

  test('a key never has more than its integration: a key scope the integration lacks opens nothing', async () => {
    const t = await webhookTenant(svc, { scopes: without('webhooks:write') });
    const res = await svc.call('POST', '/webhooks', {
      key: t.key,
      body: { url: receiver.url('/x'), events: ['*'] },
    });
    assertError(res, 403, 'insufficient_scope', { required_scope: 'webhooks:write' });
  });
});

describe('subscribing delivers bookings, so it needs bookings:read', () => {
  test('POST with booking types or "*" without bookings:read: 403, nothing created', async () => {
    const t = await webhookTenant(svc);
    const noBookings = await extraKey(svc, t, ['webhooks:read', 'webhooks:write']);
    for (const events of [['*'], ['booking.created'], ['booking.deleted', 'booking.updated']]) {
      const res = await svc.call('POST', '/webhooks', {
        key: noBookings,
        body: { url: receiver.url('/nb'), events },
      });
      assertError(res, 403, 'insufficient_scope', { required_scope: 'bookings:read' });
      assertRateLimitHeaders(res);
    }
    const [row] = await svc.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhooks WHERE integration_id = $1',
      [t.integration.id],
    );
    assert.equal(row?.n, 0);
  });

  test('PATCH events without bookings:read: 403 and the list is unchanged; other fields still change', async () => {
    const t = await webhookTenant(svc);
    const hook = await createWebhook(svc, t, receiver.url('/nb-patch'), ['booking.created']);
    const noBookings = await extraKey(svc, t, ['webhooks:read', 'webhooks:write']);
    for (const events of [['*'], ['booking.cancelled']]) {
      const res = await svc.call('PATCH', `/webhooks/${hook.id}`, { key: noBookings, body: { events } });
      assertError(res, 403, 'insufficient_scope', { required_scope: 'bookings:read' });
    }
    const both = await svc.call('PATCH', `/webhooks/${hook.id}`, {
      key: noBookings,
      body: { events: ['*'], description: 'also this' },
    });
    assertError(both, 403, 'insufficient_scope', { required_scope: 'bookings:read' });
    const read = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: noBookings }));
    assert.deepEqual(read.events, ['booking.created']);
    assert.equal(read.description, null, 'a refused PATCH changes nothing at all');

    const described = await svc.call('PATCH', `/webhooks/${hook.id}`, {
      key: noBookings,
      body: { description: 'ok' },
    });
    assert.equal(described.status, 200, described.text);
    assert.equal(described.body.description, 'ok');
  });
});

describe('the organization’s webhooks switch', () => {
  test('webhooks off: 403 api_disabled on every webhook route; the rest of the API works', async () => {
    const t = await webhookTenant(svc, { flags: { webhooks_enabled: false } });
    // A webhook left from when they were on.
    const id = randomUUID();
    await svc.db.query(
      `INSERT INTO webhooks (id, integration_id, organization_id, url, events, secret)
       VALUES ($1, $2, $3, $4, '{*}', $5)`,
      [id, t.integration.id, t.organization.id, receiver.url('/off'), svc.deps.secrets.seal('whsec_x', id)],
    );
    for (const [method, path, body] of ROUTES) {
      for (const target of [id, randomUUID()]) {
        const res = await svc.call(method, path(target), { key: t.key, ...(body ? { body } : {}) });
        assertError(res, 403, 'api_disabled');
        assertRateLimitHeaders(res);
      }
    }
    const [row] = await svc.db.query<{ n: number; deliveries: number }>(
      `SELECT count(*)::int AS n,
              (SELECT count(*)::int FROM webhook_deliveries WHERE webhook_id = $2) AS deliveries
       FROM webhooks WHERE integration_id = $1`,
      [t.integration.id, id],
    );
    assert.deepEqual(row, { n: 1, deliveries: 0 }, 'nothing created, deleted or queued');
    const bookings = await svc.call('GET', '/bookings', { key: t.key });
    assert.equal(bookings.status, 200, bookings.text);
    assert.equal((await svc.call('GET', '/integrations/me', { key: t.key })).status, 200);
  });

  test('switching webhooks off takes effect for a key already in use', async () => {
    const t = await webhookTenant(svc);
    const hook = await createWebhook(svc, t, receiver.url('/switch'));
    await expectOk(await svc.op('PATCH', `/organizations/${t.organization.id}`, { webhooks_enabled: false }));
    svc.clock.advance(svc.config.authCacheTtlMs + 1);
    assertError(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }), 403, 'api_disabled');
    await expectOk(await svc.op('PATCH', `/organizations/${t.organization.id}`, { webhooks_enabled: true }));
    svc.clock.advance(svc.config.authCacheTtlMs + 1);
    assert.equal((await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key })).status, 200);
  });
});

describe('the secret', () => {
  test('shown at creation and rotation only: never in reads, never in the logs', async () => {
    const t = await webhookTenant(svc);
    const path = `/s/${randomUUID()}`;
    const created = await expectOk(
      await svc.call('POST', '/webhooks', {
        key: t.key,
        body: { url: receiver.url(path), events: ['*'], description: 'secret test' },
      }),
      201,
    );
    const rotated = await expectOk(
      await svc.call('POST', `/webhooks/${created.id}/rotate-secret`, {
        key: t.key,
        body: { overlap_minutes: 10 },
      }),
    );
    // A delivery signed with both secrets, so the worker had both in hand.
    const queued = await expectOk(
      await svc.call('POST', `/webhooks/${created.id}/test`, { key: t.key }),
      202,
    );
    await deliveriesUntil(svc, t, created.id, (d) =>
      d.some((x) => x.id === queued.delivery_id && x.status === 'succeeded'),
    );
    const arrived = receiver.requests.find((r) => r.path === path);
    assert.ok(arrived);
    assert.ok(signatureMatches(rotated.secret, arrived.headers, arrived.body));
    assert.ok(signatureMatches(created.secret, arrived.headers, arrived.body));
    assert.ok(!arrived.body.includes(created.secret) && !arrived.body.includes(rotated.secret));

    const reads = [
      await svc.call('GET', '/webhooks', { key: t.key }),
      await svc.call('GET', `/webhooks/${created.id}`, { key: t.key }),
      await svc.call('GET', `/webhooks/${created.id}/deliveries`, { key: t.key }),
      await svc.call('PATCH', `/webhooks/${created.id}`, { key: t.key, body: { description: 'read' } }),
    ];
    const secrets = [created.secret, rotated.secret];
    const parts = secrets.map((s: string) => s.slice('whsec_'.length));
    for (const res of reads) {
      assert.equal(res.status, 200, res.text);
      for (const s of parts) assert.ok(!res.text.includes(s), 'no secret in a read');
      assert.ok(!/"(previous_)?secret"\s*:/.test(res.text), `no secret property: ${res.text}`);
    }
    // A failing request too (its error is logged with the request).
    await svc.call('POST', '/webhooks', {
      key: t.key,
      body: { url: 'http://insecure.example/', events: ['*'], description: created.secret },
    });
    const logs = svc.logs.join('');
    assert.ok(logs.length > 0, 'the service logs');
    assert.ok(logs.includes('/webhooks'), 'the requests were logged');
    for (const s of parts) assert.ok(!logs.includes(s), 'a secret reached the logs');
    // Nor is any stored secret column readable as the secret's bytes.
    const [row] = await svc.db.query<{ secret: Buffer; previous_secret: Buffer }>(
      'SELECT secret, previous_secret FROM webhooks WHERE id = $1',
      [created.id],
    );
    for (const column of [row!.secret, row!.previous_secret]) {
      for (const s of secrets) {
        assert.ok(!Buffer.from(column).includes(Buffer.from(s.slice(6), 'base64url')));
      }
    }
  });
});

// Portal sessions: issued by the operator API for one integration, opened once, carried by an
// HttpOnly cookie, bound to that integration, with the portal's scopes only, ended by expiry or
// sign-out; only digests of the token and the cookie are stored. The data routes answer exactly
// what the public API answers with a key (same handlers), with the same limits and envelope.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { MAINTENANCE_TASKS } from '../../src/maintenance.js';
import { assertError } from '../api/read-support.js';
import { putBooking } from '../support/feed.js';
import { issuePortal, openPortal, portalCall, portalCookie } from '../support/portal.js';
import { expectOk } from '../support/tenants.js';
import { createWebhook, webhookService, webhookTenant } from '../support/webhooks.js';

const { svc, receiver } = await webhookService();

const HOUR = 60 * 60_000;

describe('the operator API issues portal sessions', () => {
  test('201: a url with a one-time token in its fragment, the portal scopes the integration has, an hour', async () => {
    const t = await webhookTenant(svc);
    const before = svc.clock.now();
    const issued = await issuePortal(svc, t.integration.id);
    assert.match(issued.url, /^http:\/\/localhost:\d+\/portal#token=[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(issued.scopes, ['events:read', 'webhooks:read', 'webhooks:write']);
    assert.equal(Date.parse(issued.expires_at), before + HOUR);
    const short = await issuePortal(svc, t.integration.id, { ttl_minutes: 5 });
    assert.equal(Date.parse(short.expires_at), before + 5 * 60_000);
  });

  test('never a scope the integration lacks; never more than an hour; 404 for no integration', async () => {
    const t = await webhookTenant(svc, { scopes: ['bookings:read', 'webhooks:read'] });
    assert.deepEqual((await issuePortal(svc, t.integration.id)).scopes, ['webhooks:read']);
    const long = await svc.op('POST', `/integrations/${t.integration.id}/portal-sessions`, {
      ttl_minutes: 61,
    });
    assert.equal(long.status, 400, long.text);
    assert.equal(long.body.error.code, 'validation_error');
    const missing = await svc.op('POST', `/integrations/${randomUUID()}/portal-sessions`, {});
    assert.equal(missing.status, 404, missing.text);
  });

  test('the token and the cookie are stored as digests only', async () => {
    const t = await webhookTenant(svc);
    const issued = await issuePortal(svc, t.integration.id);
    const { cookie } = await openPortal(svc, issued.token);
    const value = (cookie as string).split('=')[1] as string;
    const [row] = await svc.db.query<Record<string, unknown>>('SELECT * FROM portal_sessions WHERE id = $1', [
      issued.id,
    ]);
    const stored = JSON.stringify(row, (_k, v) =>
      v?.type === 'Buffer' ? Buffer.from(v.data).toString() : v,
    );
    assert.ok(!stored.includes(issued.token) && !stored.includes(value), stored);
    assert.ok(row);
    assert.equal((row.link_hash as Buffer).length, 32);
    assert.equal((row.cookie_hash as Buffer).length, 32);
  });
});

test('housekeeping deletes the sessions expired for a day', async () => {
  const t = await webhookTenant(svc);
  const issued = await issuePortal(svc, t.integration.id, { ttl_minutes: 1 });
  const task = MAINTENANCE_TASKS.find((x) => x.name === 'portal-sessions');
  assert.ok(task);
  const count = async () =>
    (await svc.db.query('SELECT id FROM portal_sessions WHERE id = $1', [issued.id])).length;
  await task.run(svc.deps);
  assert.equal(await count(), 1);
  svc.clock.advance(25 * HOUR);
  await task.run(svc.deps);
  assert.equal(await count(), 0);
});

describe('opening a portal link', () => {
  test('once: 204 and an HttpOnly, SameSite=Strict cookie for /portal; a second open is refused', async () => {
    const t = await webhookTenant(svc);
    const issued = await issuePortal(svc, t.integration.id, { ttl_minutes: 10 });
    const first = await openPortal(svc, issued.token);
    assert.equal(first.res.status, 204, first.res.text);
    const header = String(first.res.headers['set-cookie']);
    assert.match(
      header,
      /^svc_portal=[A-Za-z0-9_-]{43}; Path=\/portal; Max-Age=600; HttpOnly; SameSite=Strict$/,
    );
    const again = await openPortal(svc, issued.token);
    assertError(again.res, 401, 'unauthorized');
    assert.equal(again.cookie, null);
  });

  test('a link not opened before it expires is refused', async () => {
    const t = await webhookTenant(svc);
    const issued = await issuePortal(svc, t.integration.id, { ttl_minutes: 1 });
    svc.clock.advance(60_000);
    assertError((await openPortal(svc, issued.token)).res, 401, 'unauthorized');
  });
});

describe('the portal data routes', () => {
  test('answer what the public API answers with the integration key: webhooks, deliveries, events', async () => {
    const t = await webhookTenant(svc);
    const hook = await createWebhook(svc, t, receiver.url(`/p/${randomUUID()}`));
    const booking = randomUUID();
    await putBooking(svc, t.organization.id, {}, booking);
    const cookie = await portalCookie(svc, t.integration.id);
    for (const path of [
      '/webhooks',
      `/webhooks/${hook.id}`,
      `/webhooks/${hook.id}/deliveries`,
      '/events?limit=5',
      `/events?type=booking.created&resource_id=${booking}`,
    ]) {
      const viaPortal = await portalCall(svc, cookie, 'GET', path);
      const viaKey = await svc.call('GET', path, { key: t.key });
      assert.equal(viaPortal.status, 200, `${path}: ${viaPortal.text}`);
      assert.deepEqual(viaPortal.body, viaKey.body, path);
      assert.equal(viaPortal.headers['cache-control'], 'no-store');
      assert.equal(viaPortal.headers['x-ratelimit-limit'], viaKey.headers['x-ratelimit-limit']);
    }
    const events = await portalCall(svc, cookie, 'GET', `/events?resource_id=${booking}`);
    assert.equal(events.body.data.length, 1);
    const session = await expectOk(await portalCall(svc, cookie, 'GET', '/session'));
    assert.deepEqual(session.integration, { id: t.integration.id, name: 'ERP' });
  });

  test('pause and resume, a test, a rotated secret: the public routes, through the session', async () => {
    const t = await webhookTenant(svc);
    const hook = await createWebhook(svc, t, receiver.url(`/p/${randomUUID()}`));
    const cookie = await portalCookie(svc, t.integration.id);
    const paused = await expectOk(
      await portalCall(svc, cookie, 'PATCH', `/webhooks/${hook.id}`, { body: { active: false } }),
    );
    assert.equal(paused.active, false);
    assert.equal(paused.disabled_reason, 'paused');
    const queued = await expectOk(await portalCall(svc, cookie, 'POST', `/webhooks/${hook.id}/test`), 202);
    assert.equal(queued.status, 'pending');
    const rotated = await expectOk(
      await portalCall(svc, cookie, 'POST', `/webhooks/${hook.id}/rotate-secret`, {
        body: { overlap_minutes: 0 },
      }),
    );
    assert.match(rotated.secret, /^whsec_/);
    const resumed = await expectOk(
      await portalCall(svc, cookie, 'PATCH', `/webhooks/${hook.id}`, { body: { active: true } }),
    );
    assert.equal(resumed.active, true);
  });

  test("another integration's webhook is not found, even in the same organization", async () => {
    const t = await webhookTenant(svc);
    const sibling = await webhookTenant(svc, { organizationId: t.organization.id });
    const other = await webhookTenant(svc);
    const siblingHook = await createWebhook(svc, sibling, receiver.url(`/p/${randomUUID()}`));
    const otherHook = await createWebhook(svc, other, receiver.url(`/p/${randomUUID()}`));
    const cookie = await portalCookie(svc, t.integration.id);
    for (const id of [siblingHook.id, otherHook.id]) {
      assertError(await portalCall(svc, cookie, 'GET', `/webhooks/${id}/deliveries`), 404, 'not_found');
      assertError(
        await portalCall(svc, cookie, 'PATCH', `/webhooks/${id}`, { body: { active: false } }),
        404,
        'not_found',
      );
      assertError(await portalCall(svc, cookie, 'POST', `/webhooks/${id}/test`), 404, 'not_found');
    }
    assert.deepEqual((await expectOk(await portalCall(svc, cookie, 'GET', '/webhooks'))).data, []);
  });

  test('the portal scopes only: reading bookings is not among them', async () => {
    const t = await webhookTenant(svc);
    const cookie = await portalCookie(svc, t.integration.id);
    const created = await portalCall(svc, cookie, 'POST', '/webhooks', {
      body: { url: receiver.url('/p/x'), events: ['*'] },
    });
    assertError(created, 403, 'insufficient_scope', { required_scope: 'bookings:read' });
    const bookings = await portalCall(svc, cookie, 'GET', '/bookings');
    assert.equal(bookings.status, 404, 'the portal mounts no booking route');
  });

  test('refused without a session, with an API key instead, after expiry, after sign-out', async () => {
    const t = await webhookTenant(svc);
    assertError(await portalCall(svc, null, 'GET', '/webhooks'), 401, 'unauthorized');
    const withKey = await portalCall(svc, null, 'GET', '/webhooks', {
      headers: { authorization: `Bearer ${t.key}` },
    });
    assertError(withKey, 401, 'unauthorized');
    assertError(await portalCall(svc, 'svc_portal=forged', 'GET', '/webhooks'), 401, 'unauthorized');

    const cookie = await portalCookie(svc, t.integration.id);
    svc.clock.advance(HOUR);
    const expired = await portalCall(svc, cookie, 'GET', '/webhooks');
    assertError(expired, 401, 'unauthorized');
    assert.match(expired.body.error.message, /caducado/);

    const second = await portalCookie(svc, t.integration.id);
    assert.equal((await portalCall(svc, second, 'DELETE', '/session')).status, 204);
    assertError(await portalCall(svc, second, 'GET', '/webhooks'), 401, 'unauthorized');
  });

  test('the integration disabled by the operator closes its portal at once', async () => {
    const t = await webhookTenant(svc);
    const cookie = await portalCookie(svc, t.integration.id);
    await expectOk(await svc.op('PATCH', `/integrations/${t.integration.id}`, { status: 'disabled' }));
    assertError(await portalCall(svc, cookie, 'GET', '/webhooks'), 403, 'integration_disabled');
  });

  test('a write from a page of another origin is refused', async () => {
    const t = await webhookTenant(svc);
    const hook = await createWebhook(svc, t, receiver.url(`/p/${randomUUID()}`));
    const cookie = await portalCookie(svc, t.integration.id);
    const res = await portalCall(svc, cookie, 'PATCH', `/webhooks/${hook.id}`, {
      body: { active: false },
      headers: { origin: 'https://evil.example', host: 'localhost:8080' },
    });
    assertError(res, 403, 'forbidden');
    const same = await portalCall(svc, cookie, 'PATCH', `/webhooks/${hook.id}`, {
      body: { active: false },
      headers: { origin: 'http://localhost:8080', host: 'localhost:8080' },
    });
    assert.equal(same.status, 200, same.text);
  });

  test('the page: strict Content-Security-Policy, its assets served from the package', async () => {
    const page = await svc.api.inject({ method: 'GET', url: '/portal' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-security-policy']), /default-src 'self'/);
    assert.match(page.body, /\/portal\/assets\/portal\.js/);
    const script = await svc.api.inject({ method: 'GET', url: '/portal/assets/portal.js' });
    assert.equal(script.statusCode, 200);
    assert.match(String(script.headers['content-type']), /javascript/);
    assert.equal(
      (await svc.api.inject({ method: 'GET', url: '/portal/assets/../sessions.ts' })).statusCode,
      404,
    );
  });
});

// The webhook management API on its happy paths: every field of a Webhook and a WebhookDelivery,
// what the database keeps (a sealed secret, the delivery history) and the activity transitions.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { TestService } from '../support/context.js';
import { expectOk, type Tenant } from '../support/tenants.js';
import { webhookHarness, webhookTenant } from '../support/webhooks.js';

const { svc, receiver } = await webhookHarness();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const WEBHOOK_KEYS = [
  'active',
  'consecutive_failures',
  'created_at',
  'description',
  'disabled_at',
  'disabled_reason',
  'events',
  'id',
  'updated_at',
  'url',
];
const DELIVERY_KEYS = [
  'attempt',
  'created_at',
  'delivered_at',
  'event_id',
  'event_type',
  'id',
  'last_duration_ms',
  'last_error',
  'last_status',
  'max_attempts',
  'next_retry_at',
  'status',
];

const keysOf = (o: object) => Object.keys(o).sort();
const withoutSecret = ({ secret: _secret, ...rest }: Record<string, unknown>) => rest;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function create(s: TestService, t: Tenant, body: Record<string, unknown>) {
  const res = await s.call('POST', '/webhooks', { key: t.key, body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

interface StoredRow {
  url: string;
  events: string[];
  active: boolean;
  description: string | null;
  consecutive_failures: number;
  disabled_at: Date | null;
  disabled_reason: string | null;
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_secret_until: Date | null;
  integration_id: string;
  organization_id: string;
}

async function stored(id: string): Promise<StoredRow | undefined> {
  const [row] = await svc.db.query<StoredRow>(
    `SELECT url, events, active, description, consecutive_failures, disabled_at, disabled_reason, secret,
            previous_secret, previous_secret_until, integration_id, organization_id
     FROM webhooks WHERE id = $1`,
    [id],
  );
  return row;
}

const asBuffer = (b: Buffer | Uint8Array) => Buffer.from(b);

describe('POST /webhooks', () => {
  test('201 with every Webhook field and the secret; the stored secret is sealed, not the secret', async () => {
    const t = await webhookTenant(svc);
    const url = receiver.url(`/h/${randomUUID()}`);
    const before = Date.now();
    const res = await svc.call('POST', '/webhooks', {
      key: t.key,
      body: { url, events: ['booking.created', 'booking.cancelled'], description: 'ERP central' },
    });
    assert.equal(res.status, 201, res.text);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.match(String(res.headers['x-svc-request-id']), /^req_/);
    const hook = res.body;
    assert.deepEqual(
      keysOf(hook),
      [...WEBHOOK_KEYS, 'secret'].sort(),
      'no secret_shown_once on a first answer',
    );
    assert.match(hook.id, UUID);
    assert.equal(hook.url, url);
    assert.deepEqual(hook.events, ['booking.created', 'booking.cancelled']);
    assert.equal(hook.active, true);
    assert.equal(hook.description, 'ERP central');
    assert.equal(hook.consecutive_failures, 0);
    assert.equal(hook.disabled_at, null);
    assert.equal(hook.disabled_reason, null);
    assert.match(hook.created_at, ISO);
    assert.match(hook.updated_at, ISO);
    assert.equal(hook.created_at, hook.updated_at);
    assert.ok(Math.abs(Date.parse(hook.created_at) - before) < 60_000);
    assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/, '32 random bytes, base64');

    const row = await stored(hook.id);
    assert.ok(row);
    assert.equal(row.integration_id, t.integration.id);
    assert.equal(row.organization_id, t.organization.id);
    assert.equal(row.url, url);
    assert.equal(row.description, 'ERP central');
    const sealed = asBuffer(row.secret);
    const raw = Buffer.from(hook.secret.slice('whsec_'.length), 'base64');
    assert.equal(raw.length, 32);
    assert.ok(!sealed.includes(Buffer.from(hook.secret)), 'the secret text is not stored');
    assert.ok(!sealed.includes(Buffer.from(hook.secret.slice('whsec_'.length))), 'nor its base64 part');
    assert.ok(!sealed.includes(raw), 'nor its bytes');
    assert.equal(svc.deps.secrets.open(sealed, hook.id), hook.secret, 'sealed for this webhook');
    assert.throws(() => svc.deps.secrets.open(sealed, randomUUID()), 'bound to the webhook id');
    assert.equal(row.previous_secret, null);
  });

  test('without description it is null; ["*"] is kept as is; each webhook has its own secret', async () => {
    const t = await webhookTenant(svc);
    const a = await create(svc, t, { url: receiver.url('/a'), events: ['*'] });
    const b = await create(svc, t, { url: receiver.url('/a'), events: ['*'] });
    assert.equal(a.description, null);
    assert.deepEqual(a.events, ['*']);
    assert.notEqual(a.id, b.id);
    assert.notEqual(a.secret, b.secret);
  });
});

describe('GET /webhooks and /webhooks/{id}', () => {
  test('the list has the integration’s webhooks, newest first, without any secret', async () => {
    const t = await webhookTenant(svc);
    const sibling = await webhookTenant(svc, { organizationId: t.organization.id });
    const foreign = await create(svc, sibling, { url: receiver.url('/sibling'), events: ['*'] });
    const made: Record<string, unknown>[] = [];
    for (const n of [1, 2, 3]) {
      made.push(await create(svc, t, { url: receiver.url(`/l${n}`), events: ['*'], description: `n${n}` }));
      await pause(5); // distinct created_at
    }
    const res = await svc.call('GET', '/webhooks', { key: t.key });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body), ['data']);
    assert.deepEqual(
      res.body.data.map((w: { id: string }) => w.id),
      made.map((w) => w.id).reverse(),
    );
    for (const item of res.body.data) assert.deepEqual(keysOf(item), WEBHOOK_KEYS, 'no secret property');
    assert.deepEqual(
      res.body.data,
      made.map(withoutSecret).reverse(),
      'the same fields as the creation answer',
    );
    for (const w of [...made, foreign]) assert.ok(!res.text.includes(String(w.secret)));
    assert.ok(!res.text.includes(foreign.id), 'another integration’s webhook is not listed');
  });

  test('an integration without webhooks lists none', async () => {
    const t = await webhookTenant(svc);
    assert.deepEqual(await expectOk(await svc.call('GET', '/webhooks', { key: t.key })), { data: [] });
  });

  test('GET one: the webhook without its secret; an upper-case id names it too', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(svc, t, { url: receiver.url('/one'), events: ['booking.updated'] });
    const res = await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(keysOf(res.body), WEBHOOK_KEYS);
    assert.deepEqual(res.body, withoutSecret(hook));
    assert.ok(!res.text.includes(hook.secret));
    const upper = await svc.call('GET', `/webhooks/${hook.id.toUpperCase()}`, { key: t.key });
    assert.equal(upper.status, 200, upper.text);
    assert.deepEqual(upper.body, res.body);
  });
});

describe('PATCH /webhooks/{id}', () => {
  test('url, events and description change; description null clears it; the rest stays', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(svc, t, {
      url: receiver.url('/before'),
      events: ['booking.created'],
      description: 'antes',
    });
    await pause(5);
    const url = receiver.url('/after');
    const res = await svc.call('PATCH', `/webhooks/${hook.id}`, {
      key: t.key,
      body: { url, events: ['booking.cancelled', 'booking.completed'], description: 'después' },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(keysOf(res.body), WEBHOOK_KEYS);
    assert.equal(res.body.id, hook.id);
    assert.equal(res.body.url, url);
    assert.deepEqual(res.body.events, ['booking.cancelled', 'booking.completed']);
    assert.equal(res.body.description, 'después');
    assert.equal(res.body.active, true);
    assert.equal(res.body.created_at, hook.created_at);
    assert.ok(Date.parse(res.body.updated_at) > Date.parse(hook.updated_at), 'updated_at moves');

    const onlyEvents = await svc.call('PATCH', `/webhooks/${hook.id}`, {
      key: t.key,
      body: { events: ['*'] },
    });
    assert.equal(onlyEvents.status, 200, onlyEvents.text);
    assert.deepEqual(onlyEvents.body.events, ['*'], 'the list is replaced');
    assert.equal(onlyEvents.body.url, url);
    assert.equal(onlyEvents.body.description, 'después', 'an absent field is left alone');

    const cleared = await svc.call('PATCH', `/webhooks/${hook.id}`, {
      key: t.key,
      body: { description: null },
    });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.description, null);
    assert.deepEqual(cleared.body.events, ['*']);

    assert.deepEqual(
      await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key })),
      cleared.body,
    );
    const row = await stored(hook.id);
    assert.equal(row?.url, url);
    assert.deepEqual(row?.events, ['*']);
    assert.equal(row?.description, null);
    assert.equal(svc.deps.secrets.open(asBuffer(row!.secret), hook.id), hook.secret, 'the secret stays');
  });

  test('active false pauses: inactive, disabled_at set, disabled_reason paused', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(svc, t, { url: receiver.url('/pause'), events: ['*'] });
    const before = Date.now();
    const res = await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { active: false } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.active, false);
    assert.match(res.body.disabled_at, ISO);
    assert.ok(Math.abs(Date.parse(res.body.disabled_at) - before) < 60_000);
    assert.equal(res.body.disabled_reason, 'paused');
    assert.equal(res.body.consecutive_failures, 0);
    assert.equal(res.body.url, hook.url);
    const row = await stored(hook.id);
    assert.equal(row?.active, false);
    assert.equal(row?.disabled_reason, 'paused');
    assert.ok(row?.disabled_at instanceof Date);
  });

  test('active true reactivates, even a webhook deactivated for failures: counter 0, disabled fields null', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(svc, t, { url: receiver.url('/revive'), events: ['*'] });
    await svc.db.query(
      `UPDATE webhooks SET active = false, consecutive_failures = 57,
         disabled_at = '2026-01-02T03:04:05.000Z', disabled_reason = 'consecutive_failures'
       WHERE id = $1`,
      [hook.id],
    );
    const down = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }));
    assert.equal(down.consecutive_failures, 57);
    assert.equal(down.disabled_at, '2026-01-02T03:04:05.000Z');
    assert.equal(down.disabled_reason, 'consecutive_failures');

    const res = await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { active: true } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.active, true);
    assert.equal(res.body.consecutive_failures, 0);
    assert.equal(res.body.disabled_at, null);
    assert.equal(res.body.disabled_reason, null);
    const row = await stored(hook.id);
    assert.equal(row?.active, true);
    assert.equal(row?.consecutive_failures, 0);
    assert.equal(row?.disabled_at, null);
    assert.equal(row?.disabled_reason, null);

    // Paused, then resumed: the same reset.
    await expectOk(await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { active: false } }));
    await svc.db.query('UPDATE webhooks SET consecutive_failures = 57 WHERE id = $1', [hook.id]);
    const resumed = await expectOk(
      await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { active: true } }),
    );
    assert.equal(resumed.active, true);
    assert.equal(resumed.consecutive_failures, 0);
    assert.equal(resumed.disabled_at, null);
    assert.equal(resumed.disabled_reason, null);
  });
});

/** `n` succeeded webhook.test deliveries of the webhook, the i-th created i seconds ago (newest first). */
async function seedDeliveries(t: Tenant, webhookId: string, n: number): Promise<string[]> {
  await svc.db.query(
    `INSERT INTO events (organization_id, type, resource_type, resource_id, created_at)
     SELECT $1, 'webhook.test', 'webhook', $2, now() - make_interval(secs => g)
     FROM generate_series(1, $3::int) AS g`,
    [t.organization.id, webhookId, n],
  );
  const rows = await svc.db.query<{ id: string }>(
    `INSERT INTO webhook_deliveries
       (webhook_id, event_id, event_type, status, attempt, last_status, last_duration_ms, delivered_at,
        next_retry_at, created_at)
     SELECT $1, e.id, 'webhook.test', 'succeeded', 1, 200, 7, e.created_at, NULL, e.created_at
     FROM events e WHERE e.resource_id = $1
     RETURNING id`,
    [webhookId],
  );
  assert.equal(rows.length, n);
  const ordered = await svc.db.query<{ id: string }>(
    'SELECT id FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC, id DESC',
    [webhookId],
  );
  return ordered.map((r) => r.id);
}

describe('DELETE /webhooks/{id}', () => {
  test('{deleted: true}, then 404 everywhere; its delivery history is gone, the others’ stays', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(svc, t, { url: receiver.url('/gone'), events: ['*'] });
    const kept = await create(svc, t, { url: receiver.url('/kept'), events: ['*'] });
    await seedDeliveries(t, hook.id, 3);
    await seedDeliveries(t, kept.id, 2);

    const res = await svc.call('DELETE', `/webhooks/${hook.id}`, { key: t.key });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { deleted: true });

    for (const [method, path] of [
      ['GET', `/webhooks/${hook.id}`],
      ['DELETE', `/webhooks/${hook.id}`],
      ['GET', `/webhooks/${hook.id}/deliveries`],
    ] as const) {
      const again = await svc.call(method, path, { key: t.key });
      assert.equal(again.status, 404, `${method} ${path}: ${again.text}`);
      assert.equal(again.body.error.code, 'not_found');
    }
    assert.equal(await stored(hook.id), undefined);
    const [history] = await svc.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1',
      [hook.id],
    );
    assert.equal(history?.n, 0, 'the delivery history is removed');
    const [others] = await svc.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1',
      [kept.id],
    );
    assert.equal(others?.n, 2);
    const list = await expectOk(await svc.call('GET', '/webhooks', { key: t.key }));
    assert.deepEqual(
      list.data.map((w: { id: string }) => w.id),
      [kept.id],
    );
  });
});

describe('POST /webhooks/{id}/rotate-secret', () => {
  test('answers {id, secret, previous_secret_valid_until}; both secrets kept sealed for the overlap', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(svc, t, { url: receiver.url('/rotate'), events: ['*'] });
    const before = Date.now();
    const res = await svc.call('POST', `/webhooks/${hook.id}/rotate-secret`, {
      key: t.key,
      body: { overlap_minutes: 30 },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(keysOf(res.body), ['id', 'previous_secret_valid_until', 'secret']);
    assert.equal(res.body.id, hook.id);
    assert.match(res.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.notEqual(res.body.secret, hook.secret);
    assert.match(res.body.previous_secret_valid_until, ISO);
    const until = Date.parse(res.body.previous_secret_valid_until);
    assert.ok(Math.abs(until - (before + 30 * 60_000)) < 60_000, res.body.previous_secret_valid_until);

    const row = await stored(hook.id);
    assert.ok(row?.previous_secret);
    assert.equal(svc.deps.secrets.open(asBuffer(row.secret), hook.id), res.body.secret);
    assert.equal(svc.deps.secrets.open(asBuffer(row.previous_secret), hook.id), hook.secret);
    assert.equal(row.previous_secret_until?.toISOString(), res.body.previous_secret_valid_until);
    assert.ok(!asBuffer(row.secret).includes(Buffer.from(res.body.secret)));

    // GET does not show either secret; the webhook is otherwise unchanged.
    const read = await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key });
    assert.deepEqual(keysOf(read.body), WEBHOOK_KEYS);
    assert.ok(!read.text.includes(res.body.secret));
    assert.equal(read.body.url, hook.url);
  });

  test('overlap 0 ends the previous secret now; 1440 is accepted', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(svc, t, { url: receiver.url('/rotate0'), events: ['*'] });
    const before = Date.now();
    const now = await expectOk(
      await svc.call('POST', `/webhooks/${hook.id}/rotate-secret`, {
        key: t.key,
        body: { overlap_minutes: 0 },
      }),
    );
    assert.ok(Math.abs(Date.parse(now.previous_secret_valid_until) - before) < 60_000);
    const day = await expectOk(
      await svc.call('POST', `/webhooks/${hook.id}/rotate-secret`, {
        key: t.key,
        body: { overlap_minutes: 1440 },
      }),
    );
    assert.ok(Math.abs(Date.parse(day.previous_secret_valid_until) - (before + 1440 * 60_000)) < 60_000);
    assert.notEqual(day.secret, now.secret);
    const row = await stored(hook.id);
    assert.equal(svc.deps.secrets.open(asBuffer(row!.previous_secret!), hook.id), now.secret);

    // Named by an upper-case id: the answer and the sealing use the webhook's own id.
    const upper = await expectOk(
      await svc.call('POST', `/webhooks/${hook.id.toUpperCase()}/rotate-secret`, {
        key: t.key,
        body: { overlap_minutes: 5 },
      }),
    );
    assert.equal(upper.id, hook.id);
    const after = await stored(hook.id);
    assert.equal(svc.deps.secrets.open(asBuffer(after!.secret), hook.id), upper.secret);
    assert.equal(svc.deps.secrets.open(asBuffer(after!.previous_secret!), hook.id), day.secret);
  });
});

describe('GET /webhooks/{id}/deliveries', () => {
  test('latest first, default 25, limit cut to 100, every WebhookDelivery field', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(svc, t, { url: receiver.url('/history'), events: ['*'] });
    const ids = await seedDeliveries(t, hook.id, 105);

    const first = await svc.call('GET', `/webhooks/${hook.id}/deliveries`, { key: t.key });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(Object.keys(first.body), ['data']);
    assert.deepEqual(
      first.body.data.map((d: { id: string }) => d.id),
      ids.slice(0, 25),
      'default 25, newest first',
    );
    for (const [limit, expected] of [
      ['1000', 100],
      ['100', 100],
      ['101', 100],
      ['7', 7],
      ['1', 1],
    ] as const) {
      const res = await svc.call('GET', `/webhooks/${hook.id}/deliveries?limit=${limit}`, { key: t.key });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.body.data.map((d: { id: string }) => d.id),
        ids.slice(0, expected),
        `limit=${limit}`,
      );
    }

    const [row] = await svc.db.query<{ event_id: string; created_at: Date }>(
      'SELECT event_id, created_at FROM webhook_deliveries WHERE id = $1',
      [ids[0]],
    );
    const newest = first.body.data[0];
    assert.deepEqual(keysOf(newest), DELIVERY_KEYS);
    assert.deepEqual(newest, {
      id: ids[0],
      event_id: row?.event_id,
      event_type: 'webhook.test',
      status: 'succeeded',
      attempt: 1,
      max_attempts: 8,
      next_retry_at: null,
      last_status: 200,
      last_error: null,
      last_duration_ms: 7,
      delivered_at: row?.created_at.toISOString(),
      created_at: row?.created_at.toISOString(),
    });
  });

  test('failed and dead deliveries show their retry time, status and error', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(svc, t, { url: receiver.url('/failing'), events: ['*'] });
    const [event] = await svc.db.query<{ id: string }>(
      `INSERT INTO events (organization_id, type, resource_type, resource_id)
       VALUES ($1, 'webhook.test', 'webhook', $2) RETURNING id`,
      [t.organization.id, hook.id],
    );
    const [other] = await svc.db.query<{ id: string }>(
      `INSERT INTO events (organization_id, type, resource_type, resource_id, created_at)
       VALUES ($1, 'webhook.test', 'webhook', $2, now() - interval '1 minute') RETURNING id`,
      [t.organization.id, hook.id],
    );
    // Far in the future: the worker leaves a failed delivery that is not due alone.
    await svc.db.query(
      `INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, status, attempt, max_attempts,
         next_retry_at, last_status, last_error, last_duration_ms, created_at)
       VALUES ($1, $2, 'webhook.test', 'failed', 2, 8, '2099-01-01T00:00:00.000Z', NULL, 'timeout', 1500, now()),
              ($1, $3, 'webhook.test', 'dead', 3, 3, NULL, 410, 'HTTP 410', 12, now() - interval '1 minute')`,
      [hook.id, event?.id, other?.id],
    );
    const res = await expectOk(await svc.call('GET', `/webhooks/${hook.id}/deliveries`, { key: t.key }));
    assert.equal(res.data.length, 2);
    const [failed, dead] = res.data;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.event_id, event?.id);
    assert.equal(failed.attempt, 2);
    assert.equal(failed.next_retry_at, '2099-01-01T00:00:00.000Z');
    assert.equal(failed.last_status, null);
    assert.equal(failed.last_error, 'timeout');
    assert.equal(failed.last_duration_ms, 1500);
    assert.equal(failed.delivered_at, null);
    assert.equal(dead.status, 'dead');
    assert.equal(dead.max_attempts, 3);
    assert.equal(dead.last_status, 410);
    assert.equal(dead.last_error, 'HTTP 410');
    assert.equal(dead.next_retry_at, null);
  });

  test('a webhook with no deliveries has an empty list; another webhook’s are not mixed in', async () => {
    const t = await webhookTenant(svc);
    const quiet = await create(svc, t, { url: receiver.url('/quiet'), events: ['*'] });
    const busy = await create(svc, t, { url: receiver.url('/busy'), events: ['*'] });
    await seedDeliveries(t, busy.id, 3);
    assert.deepEqual(
      await expectOk(await svc.call('GET', `/webhooks/${quiet.id}/deliveries`, { key: t.key })),
      { data: [] },
    );
  });
});

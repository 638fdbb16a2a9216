// The webhook management API refusing what it must: destinations that are not public https on 443
// (judged after URL normalisation and after resolution, at creation and at change), unknown or
// mixed event lists, the cap of 10, bad bodies and queries, foreign or absent ids (one 404 for
// all), missing media types and methods the route does not have. The service runs WITHOUT
// SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS; host names are resolved by a fake resolver (no DNS here).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { SUBSCRIBABLE } from '../../src/api/webhooks/schemas.js';
import type { Address, Resolver } from '../../src/security/url-guard.js';
import { assertError, withoutRequestId } from '../api/read-support.js';
import { type Response, serviceForFile } from '../support/context.js';
import { expectOk, type Tenant } from '../support/tenants.js';
import { webhookTenant } from '../support/webhooks.js';

const PUBLIC_V4 = '93.184.216.34';
const HOSTS: Record<string, Address[]> = {
  'hooks.example.test': [{ address: PUBLIC_V4, family: 4 }],
  'other.example.test': [{ address: '2606:4700:4700::1111', family: 6 }],
  'internal.example.test': [{ address: '10.1.2.3', family: 4 }],
  'mixed.example.test': [
    { address: PUBLIC_V4, family: 4 },
    { address: '10.1.2.3', family: 4 },
  ],
  'ula.example.test': [{ address: 'fd00::1', family: 6 }],
  'empty.example.test': [],
};
const asked: string[] = [];
const fakeResolver: Resolver = async (hostname) => {
  asked.push(hostname);
  const found = HOSTS[hostname];
  if (found) return found;
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

const svc = await serviceForFile({}, fakeResolver);

const GOOD = 'https://hooks.example.test/in';

async function create(t: Tenant, body: Record<string, unknown> = {}) {
  return expectOk(
    await svc.call('POST', '/webhooks', { key: t.key, body: { url: GOOD, events: ['*'], ...body } }),
    201,
  );
}

async function countOf(t: Tenant): Promise<number> {
  const [row] = await svc.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM webhooks WHERE integration_id = $1',
    [t.integration.id],
  );
  return row?.n ?? -1;
}

function assertField(res: Response, field: string) {
  assertError(res, 400, 'validation_error');
  assert.equal(res.body.error.details?.field, field, res.text);
}

describe('url: only https on port 443 to public addresses', () => {
  const refused: [string, string][] = [
    ['http://', 'http://hooks.example.test/in'],
    ['port 8443', 'https://hooks.example.test:8443/in'],
    ['port 80 over https', 'https://hooks.example.test:80/in'],
    ['user and password', 'https://user:pass@hooks.example.test/in'],
    ['user only', 'https://user@hooks.example.test/in'],
    ['over 500 characters', `https://hooks.example.test/${'a'.repeat(475)}`],
    ['not a URL', 'not a url'],
    ['no scheme', 'hooks.example.test/in'],
    ['empty', ''],
    ['another scheme', 'ftp://hooks.example.test/in'],
    ['a space inside', 'https://hooks.example.test/a b'],
    ['127.0.0.1', 'https://127.0.0.1/'],
    ['10.0.0.1', 'https://10.0.0.1/'],
    ['172.16.0.1', 'https://172.16.0.1/'],
    ['192.168.1.1', 'https://192.168.1.1/'],
    ['169.254.169.254 (metadata)', 'https://169.254.169.254/latest/meta-data/'],
    ['100.64.0.1 (CGNAT)', 'https://100.64.0.1/'],
    ['0.0.0.0', 'https://0.0.0.0/'],
    ['198.18.0.1 (benchmarking)', 'https://198.18.0.1/'],
    ['224.0.0.1 (multicast)', 'https://224.0.0.1/'],
    ['255.255.255.255', 'https://255.255.255.255/'],
    ['[::1]', 'https://[::1]/'],
    ['[::]', 'https://[::]/'],
    ['[fc00::1]', 'https://[fc00::1]/'],
    ['[fe80::1]', 'https://[fe80::1]/'],
    ['[::ffff:127.0.0.1]', 'https://[::ffff:127.0.0.1]/'],
    ['[64:ff9b::a00:1] (NAT64 of 10.0.0.1)', 'https://[64:ff9b::a00:1]/'],
    ['0x7f.1 (hex shorthand of 127.0.0.1)', 'https://0x7f.1/'],
    ['2130706433 (decimal 127.0.0.1)', 'https://2130706433/'],
    ['0177.0.0.1 (octal)', 'https://0177.0.0.1/'],
    ['a name resolving to 10.1.2.3', 'https://internal.example.test/in'],
    ['a name resolving to a public and a private address', 'https://mixed.example.test/in'],
    ['a name resolving to an IPv6 ULA', 'https://ula.example.test/in'],
    ['a name resolving to nothing', 'https://empty.example.test/in'],
    ['a name that does not resolve', 'https://nowhere.example.test/in'],
  ];

  test('the table is long enough to mean something', () => {
    assert.ok(refused.length >= 30);
    assert.ok(`https://hooks.example.test/${'a'.repeat(475)}`.length > 500);
  });

  for (const [name, url] of refused) {
    test(`${name}: refused at POST and at PATCH`, async () => {
      const t = await webhookTenant(svc);
      const res = await svc.call('POST', '/webhooks', { key: t.key, body: { url, events: ['*'] } });
      assertField(res, 'url');
      assert.equal(await countOf(t), 0, 'nothing created');

      const hook = await create(t);
      const patched = await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { url } });
      assertField(patched, 'url');
      const read = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }));
      assert.equal(read.url, GOOD, 'the url is unchanged');
      assert.equal(read.updated_at, hook.updated_at);
    });
  }

  test('the refusal names the url, never the resolver’s internals beyond the host', async () => {
    const t = await webhookTenant(svc);
    const res = await svc.call('POST', '/webhooks', {
      key: t.key,
      body: { url: 'https://internal.example.test/in', events: ['*'] },
    });
    assertError(res, 400, 'validation_error', { field: 'url', reason: 'not_public' });
    assert.ok(asked.includes('internal.example.test'), 'the name was resolved by the resolver given');
  });

  test('accepted: a public name, :443 written out (normalised away), IPv6 public, exactly 500 characters', async () => {
    const t = await webhookTenant(svc);
    const explicit = await create(t, { url: 'https://hooks.example.test:443/x' });
    assert.equal(explicit.url, 'https://hooks.example.test/x');
    const v6 = await create(t, { url: 'https://other.example.test/x' });
    assert.equal(v6.url, 'https://other.example.test/x');
    const literal = await create(t, { url: `https://${PUBLIC_V4}/x` });
    assert.equal(literal.url, `https://${PUBLIC_V4}/x`);
    const long = `https://hooks.example.test/${'a'.repeat(473)}`;
    assert.equal(long.length, 500);
    assert.equal((await create(t, { url: long })).url, long);
    const patched = await svc.call('PATCH', `/webhooks/${explicit.id}`, {
      key: t.key,
      body: { url: 'https://other.example.test:443/y' },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.url, 'https://other.example.test/y');
  });
});

describe('url: the 500-character cap holds for the url as normalised and stored', () => {
  test('a path that percent-encodes past 500 characters is a 400, not a 500; PATCH too', async () => {
    const t = await webhookTenant(svc);
    const grows = `https://hooks.example.test/${'é'.repeat(100)}`; // 127 characters, 627 once encoded
    assert.ok(grows.length <= 500);
    assert.ok(new URL(grows).href.length > 500);
    const res = await svc.call('POST', '/webhooks', { key: t.key, body: { url: grows, events: ['*'] } });
    assertError(res, 400, 'validation_error', { field: 'url', reason: 'too_long' });
    assert.equal(await countOf(t), 0);
    const hook = await create(t);
    const patched = await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { url: grows } });
    assertError(patched, 400, 'validation_error', { field: 'url', reason: 'too_long' });
    assert.equal((await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key })).body.url, GOOD);

    // Within the cap once encoded: stored in its encoded form.
    const fits = `https://hooks.example.test/${'é'.repeat(10)}`;
    const ok = await create(t, { url: fits });
    assert.equal(ok.url, new URL(fits).href);
  });
});

describe('events', () => {
  test('an unknown type is refused with the admitted values, at POST and at PATCH', async () => {
    const t = await webhookTenant(svc);
    for (const events of [['booking.exploded'], ['booking.created', 'booking.nope'], ['webhook.test']]) {
      const res = await svc.call('POST', '/webhooks', { key: t.key, body: { url: GOOD, events } });
      assertError(res, 400, 'validation_error', { field: 'events', allowed: [...SUBSCRIBABLE] });
    }
    assert.equal(await countOf(t), 0);
    const hook = await create(t, { events: ['booking.created'] });
    const res = await svc.call('PATCH', `/webhooks/${hook.id}`, {
      key: t.key,
      body: { events: ['booking.exploded'] },
    });
    assertError(res, 400, 'validation_error', { field: 'events', allowed: [...SUBSCRIBABLE] });
    const read = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }));
    assert.deepEqual(read.events, ['booking.created']);
  });

  test('an empty list, "*" with another type, not a list, or missing are refused', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(t, { events: ['booking.created'] });
    for (const events of [[], ['*', 'booking.created'], ['booking.created', '*'], 'booking.created']) {
      assertField(await svc.call('POST', '/webhooks', { key: t.key, body: { url: GOOD, events } }), 'events');
      assertField(
        await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { events } }),
        'events',
      );
    }
    assertField(await svc.call('POST', '/webhooks', { key: t.key, body: { url: GOOD } }), 'events');
    const notText = await svc.call('POST', '/webhooks', { key: t.key, body: { url: GOOD, events: [42] } });
    assertError(notText, 400, 'validation_error');
    assert.match(String(notText.body.error.details?.field), /^events\b/, notText.text);
    assert.equal(await countOf(t), 1);
    const read = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }));
    assert.deepEqual(read.events, ['booking.created']);
  });
});

describe('body fields', () => {
  test('description over 200 characters (200 is fine), at POST and at PATCH', async () => {
    const t = await webhookTenant(svc);
    assertField(
      await svc.call('POST', '/webhooks', {
        key: t.key,
        body: { url: GOOD, events: ['*'], description: 'd'.repeat(201) },
      }),
      'description',
    );
    const hook = await create(t, { description: 'd'.repeat(200) });
    assert.equal(hook.description.length, 200);
    assertField(
      await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { description: 'e'.repeat(201) } }),
      'description',
    );
    assertField(
      await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { description: 5 } }),
      'description',
    );
    assert.equal(
      (await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key })).body.description.length,
      200,
    );
  });

  test('a description with U+0000 is a 400 (the database cannot store it), at POST and at PATCH', async () => {
    const t = await webhookTenant(svc);
    const res = await svc.call('POST', '/webhooks', {
      key: t.key,
      body: { url: GOOD, events: ['*'], description: 'a\u0000b' },
    });
    assertField(res, 'description');
    assert.equal(await countOf(t), 0);
    const hook = await create(t, { description: 'línea 1\nlínea 2\t🚕' });
    assert.equal(hook.description, 'línea 1\nlínea 2\t🚕', 'other free text is kept as is');
    assertField(
      await svc.call('PATCH', `/webhooks/${hook.id}`, { key: t.key, body: { description: '\u0000' } }),
      'description',
    );
    // 200 characters outside the BMP are 200 characters.
    const emoji = await create(t, { description: '🚕'.repeat(200) });
    assert.equal([...emoji.description].length, 200);
  });

  test('POST: url missing, url not a string, an unknown field', async () => {
    const t = await webhookTenant(svc);
    assertField(await svc.call('POST', '/webhooks', { key: t.key, body: { events: ['*'] } }), 'url');
    assertField(await svc.call('POST', '/webhooks', { key: t.key, body: { url: 5, events: ['*'] } }), 'url');
    assertField(
      await svc.call('POST', '/webhooks', { key: t.key, body: { url: GOOD, events: ['*'], secret: 'mine' } }),
      'secret',
    );
    assertField(
      await svc.call('POST', '/webhooks', { key: t.key, body: { url: GOOD, events: ['*'], active: false } }),
      'active',
    );
    assert.equal(await countOf(t), 0);
  });

  test('the 11th webhook of an integration is refused; a sibling integration has its own 10', async () => {
    const t = await webhookTenant(svc);
    const made = [];
    for (let i = 0; i < 10; i += 1) made.push(await create(t, { url: `${GOOD}/${i}` }));
    const res = await svc.call('POST', '/webhooks', {
      key: t.key,
      body: { url: `${GOOD}/10`, events: ['*'] },
    });
    assertError(res, 400, 'validation_error');
    assert.equal(typeof res.body.error.details?.field, 'string', res.text);
    assert.equal(await countOf(t), 10);

    const sibling = await webhookTenant(svc, { organizationId: t.organization.id });
    await create(sibling);
    assert.equal(await countOf(sibling), 1);

    // The cap counts the webhooks there are, not those ever made.
    await expectOk(await svc.call('DELETE', `/webhooks/${made[0].id}`, { key: t.key }));
    await create(t, { url: `${GOOD}/again` });
    assert.equal(await countOf(t), 10);
  });

  test('the cap holds under concurrent creations', async () => {
    const t = await webhookTenant(svc);
    for (let i = 0; i < 8; i += 1) await create(t, { url: `${GOOD}/${i}` });
    const answers = await Promise.all(
      [0, 1, 2, 3, 4].map((i) =>
        svc.call('POST', '/webhooks', { key: t.key, body: { url: `${GOOD}/race${i}`, events: ['*'] } }),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [201, 201, 400, 400, 400], JSON.stringify(answers.map((a) => a.text)));
    for (const a of answers) if (a.status === 400) assert.equal(a.body.error.code, 'validation_error');
    assert.equal(await countOf(t), 10);
  });

  test('PATCH: {} , an unknown field, an empty body, a body that is not an object', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(t);
    const path = `/webhooks/${hook.id}`;
    assertField(await svc.call('PATCH', path, { key: t.key, body: {} }), 'body');
    assertField(await svc.call('PATCH', path, { key: t.key, body: { colour: 'red' } }), 'colour');
    assertField(await svc.call('PATCH', path, { key: t.key, body: { active: true, secret: 'x' } }), 'secret');
    assertField(await svc.call('PATCH', path, { key: t.key, body: { active: 'false' } }), 'active');
    const empty = await svc.call('PATCH', path, {
      key: t.key,
      payload: '',
      headers: { 'content-type': 'application/json' },
    });
    assertField(empty, 'body');
    const broken = await svc.call('PATCH', path, {
      key: t.key,
      payload: '{"active": ',
      headers: { 'content-type': 'application/json' },
    });
    assertField(broken, 'body');
    assertError(await svc.call('PATCH', path, { key: t.key, body: [] }), 400, 'validation_error');
    const read = await expectOk(await svc.call('GET', path, { key: t.key }));
    assert.deepEqual(read, (({ secret: _s, ...rest }) => rest)(hook), 'nothing changed');
  });

  test('rotate-secret: overlap_minutes missing, -1, 1441, 1.5, "5", null; an unknown field', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(t);
    const path = `/webhooks/${hook.id}/rotate-secret`;
    const [before] = await svc.db.query<{ secret: Buffer }>('SELECT secret FROM webhooks WHERE id = $1', [
      hook.id,
    ]);
    for (const body of [{}, { overlap_minutes: -1 }, { overlap_minutes: 1441 }, { overlap_minutes: 1.5 }]) {
      assertField(await svc.call('POST', path, { key: t.key, body }), 'overlap_minutes');
    }
    for (const body of [{ overlap_minutes: '5' }, { overlap_minutes: null }, { overlap_minutes: true }]) {
      assertField(await svc.call('POST', path, { key: t.key, body }), 'overlap_minutes');
    }
    assertField(await svc.call('POST', path, { key: t.key, body: { overlap_minutes: 5, now: true } }), 'now');
    const empty = await svc.call('POST', path, {
      key: t.key,
      payload: '',
      headers: { 'content-type': 'application/json' },
    });
    assertField(empty, 'body');
    const [after] = await svc.db.query<{ secret: Buffer; previous_secret: Buffer | null }>(
      'SELECT secret, previous_secret FROM webhooks WHERE id = $1',
      [hook.id],
    );
    assert.ok(Buffer.from(after!.secret).equals(Buffer.from(before!.secret)), 'the secret did not rotate');
    assert.equal(after?.previous_secret, null);
  });

  test('deliveries: limit 0, -1, abc, 1.5, empty; an unknown query parameter', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(t);
    for (const limit of ['0', '-1', 'abc', '1.5', '']) {
      const res = await svc.call('GET', `/webhooks/${hook.id}/deliveries?limit=${limit}`, { key: t.key });
      assertError(res, 400, 'validation_error');
      assert.equal(res.body.error.details?.param, 'limit', `limit=${limit}: ${res.text}`);
    }
    const unknown = await svc.call('GET', `/webhooks/${hook.id}/deliveries?status=failed`, { key: t.key });
    assertError(unknown, 400, 'validation_error');
    assert.equal(unknown.body.error.details?.param, 'status', unknown.text);
    const cursor = await svc.call('GET', `/webhooks/${hook.id}/deliveries?cursor=abc`, { key: t.key });
    assertError(cursor, 400, 'validation_error');
    assert.equal(cursor.body.error.details?.param, 'cursor', 'no cursor on this list');
  });
});

describe('404: absent, malformed and foreign ids answer alike on every route', () => {
  const routes: [string, (id: string) => string, unknown][] = [
    ['GET', (id) => `/webhooks/${id}`, undefined],
    ['PATCH', (id) => `/webhooks/${id}`, { description: 'taken over' }],
    ['DELETE', (id) => `/webhooks/${id}`, undefined],
    ['POST', (id) => `/webhooks/${id}/test`, undefined],
    ['POST', (id) => `/webhooks/${id}/rotate-secret`, { overlap_minutes: 5 }],
    ['GET', (id) => `/webhooks/${id}/deliveries`, undefined],
  ];

  test('malformed, missing, another integration’s and another organization’s webhook', async () => {
    const t = await webhookTenant(svc);
    const own = await create(t);
    const sibling = await webhookTenant(svc, { organizationId: t.organization.id });
    const siblingHook = await create(sibling, { description: 'sibling' });
    const stranger = await webhookTenant(svc);
    const strangerHook = await create(stranger, { description: 'stranger' });
    const snapshot = () =>
      svc.db.query<Record<string, unknown>>(
        `SELECT id, url, events, active, description, secret, previous_secret, updated_at,
                (SELECT count(*)::int FROM webhook_deliveries d WHERE d.webhook_id = w.id) AS deliveries
         FROM webhooks w WHERE id = ANY ($1::uuid[]) ORDER BY id`,
        [[siblingHook.id, strangerHook.id]],
      );
    const before = await snapshot();

    const ids: [string, string][] = [
      ['malformed', 'not-a-uuid'],
      ['almost a uuid', `${own.id.slice(0, -1)}g`],
      ['digits', '12345'],
      ['missing', randomUUID()],
      ['another integration of the organization', siblingHook.id],
      ['another organization', strangerHook.id],
    ];
    for (const [method, path, body] of routes) {
      const answers = [];
      for (const [name, id] of ids) {
        const res = await svc.call(method, path(id), { key: t.key, ...(body ? { body } : {}) });
        assertError(res, 404, 'not_found');
        assert.equal(res.body.error.details, undefined);
        assert.ok(res.headers['x-ratelimit-remaining'] !== undefined, 'a served answer');
        answers.push([name, withoutRequestId(res)] as const);
      }
      for (const [name, answer] of answers) {
        assert.deepEqual(answer, answers[0]?.[1], `${method} ${path(':id')}: ${name} differs`);
      }
      // The own webhook is found on the same route (the 404 is about the id, not the route).
      const mine = await svc.call(method === 'DELETE' ? 'GET' : method, path(own.id), {
        key: t.key,
        ...(body ? { body } : {}),
      });
      assert.ok(mine.status < 300, `${method} ${path(own.id)}: ${mine.text}`);
    }

    assert.deepEqual(await snapshot(), before, 'foreign webhooks untouched');
    const [events1] = await svc.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM events WHERE resource_id <> $1 AND type = 'webhook.test'",
      [own.id],
    );
    assert.equal(events1?.n, 0, 'no test was queued for a foreign webhook');
  });
});

describe('media type and methods', () => {
  test('415 on POST, PATCH and rotate-secret without Content-Type or with text/plain', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(t);
    const cases: [string, string, string][] = [
      ['POST', '/webhooks', JSON.stringify({ url: GOOD, events: ['*'] })],
      ['PATCH', `/webhooks/${hook.id}`, JSON.stringify({ description: 'x' })],
      ['POST', `/webhooks/${hook.id}/rotate-secret`, JSON.stringify({ overlap_minutes: 5 })],
    ];
    for (const [method, path, payload] of cases) {
      assertError(await svc.call(method, path, { key: t.key, payload }), 415, 'unsupported_media_type');
      assertError(
        await svc.call(method, path, { key: t.key, payload, headers: { 'content-type': 'text/plain' } }),
        415,
        'unsupported_media_type',
      );
      assertError(
        await svc.call(method, path, {
          key: t.key,
          payload,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
        415,
        'unsupported_media_type',
      );
    }
    assert.equal(await countOf(t), 1);
    const read = await expectOk(await svc.call('GET', `/webhooks/${hook.id}`, { key: t.key }));
    assert.equal(read.description, null);
    assert.equal(read.updated_at, hook.updated_at);
  });

  test('405 with Allow, no envelope and no request id, for methods a webhook route does not have', async () => {
    const t = await webhookTenant(svc);
    const hook = await create(t);
    const cases: [string, string, string][] = [
      ['PUT', `/webhooks/${hook.id}`, 'DELETE, GET, PATCH'],
      ['POST', `/webhooks/${hook.id}`, 'DELETE, GET, PATCH'],
      ['PUT', '/webhooks', 'GET, POST'],
      ['DELETE', '/webhooks', 'GET, POST'],
      ['GET', `/webhooks/${hook.id}/test`, 'POST'],
      ['GET', `/webhooks/${hook.id}/rotate-secret`, 'POST'],
      ['DELETE', `/webhooks/${hook.id}/deliveries`, 'GET'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await svc.call(method, path, {
        key: t.key,
        body: { url: GOOD, events: ['*'] },
      });
      assert.equal(res.status, 405, `${method} ${path}: ${res.text}`);
      assert.equal(res.headers.allow, allow, `${method} ${path}`);
      assert.equal(res.headers['x-svc-request-id'], undefined);
      assert.equal(res.body?.error, undefined);
    }
    assert.equal(await countOf(t), 1, 'nothing was created or replaced');
  });
});

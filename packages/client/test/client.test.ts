// The typed client against a real server started here (HTTP on a free port), and its retry rules
// against a scripted fetch.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { seedBookings } from '../../../test/api/read-support.js';
import { serviceForFile } from '../../../test/support/context.js';
import { createTenant } from '../../../test/support/tenants.js';
import { generatedSources } from '../scripts/sources.js';
import { ApiError, createClient } from '../src/index.js';

const svc = await serviceForFile();
await svc.api.listen({ host: '127.0.0.1', port: 0 });
const baseUrl = `http://127.0.0.1:${(svc.api.server.address() as AddressInfo).port}/api/v1`;

/** A fetch that records each request's url and headers before sending it. */
function recording() {
  const sent: { url: string; headers: Record<string, string> }[] = [];
  const wrapped: typeof fetch = async (input, init) => {
    sent.push({ url: String(input), headers: { ...(init?.headers as Record<string, string>) } });
    return fetch(input, init);
  };
  return { sent, fetch: wrapped };
}

test('the committed generated sources are what openapi/openapi.json gives (npm run generate)', async () => {
  const { schema, operations } = await generatedSources();
  assert.equal(readFileSync(new URL('../src/schema.ts', import.meta.url), 'utf8'), schema);
  assert.equal(readFileSync(new URL('../src/operations.ts', import.meta.url), 'utf8'), operations);
});

test('typed calls reach the server and return its bodies', async () => {
  const tenant = await createTenant(svc);
  const client = createClient({ baseUrl, apiKey: tenant.key });
  const me = await client.getIntegration();
  assert.equal(me.organization.id, tenant.organization.id);
  assert.equal(me.api_version, 'v1');
  const [id] = await seedBookings(svc, tenant.organization.id, 1);
  const booking = await client.getBooking({ path: { id: id! } });
  assert.equal(booking.id, id);
  const link = await client.putBookingExternalId({ path: { id: id! }, body: { external_id: 'ERP-1' } });
  assert.equal(link.external_id, 'ERP-1');
  const found = await client.listBookings({ query: { external_id: 'ERP-1' } });
  assert.deepEqual(
    found.data.map((b) => b.id),
    [id],
  );
});

test('paginate walks every page and repeats the filters on each', async () => {
  const tenant = await createTenant(svc);
  await seedBookings(svc, tenant.organization.id, 5);
  await seedBookings(svc, tenant.organization.id, 2, { status: 'cancelada' });
  const { sent, fetch } = recording();
  const client = createClient({ baseUrl, apiKey: tenant.key, fetch });
  const items = [];
  for await (const booking of client.paginate('listBookings', { query: { status: 'confirmed', limit: 2 } })) {
    items.push(booking);
  }
  assert.equal(items.length, 5);
  assert.ok(items.every((b) => b.status === 'confirmed'));
  assert.equal(sent.length, 3);
  for (const [i, request] of sent.entries()) {
    const query = new URL(request.url).searchParams;
    assert.equal(query.get('status'), 'confirmed');
    assert.equal(query.get('limit'), '2');
    assert.equal(query.has('cursor'), i > 0);
  }
});

test('errors carry the code, the request id and the details', async () => {
  const tenant = await createTenant(svc, { scopes: ['customers:read'] });
  const client = createClient({ baseUrl, apiKey: tenant.key });
  const missing = await client
    .getCustomer({ path: { id: '00000000-0000-4000-8000-000000000000' } })
    .catch((e) => e);
  assert.ok(missing instanceof ApiError);
  assert.equal(missing.status, 404);
  assert.equal(missing.code, 'not_found');
  assert.match(String(missing.request_id), /^req_/);
  const scope = await client.listBookings().catch((e) => e);
  assert.equal(scope.code, 'insufficient_scope');
  assert.deepEqual(scope.details, { required_scope: 'bookings:read' });
  const bad = await createClient({ baseUrl, apiKey: 'svc_live_nope' })
    .getIntegration()
    .catch((e) => e);
  assert.equal(bad.code, 'invalid_key');
});

test('a write with an Idempotency-Key whose answer was lost is sent again with the same key', async () => {
  const tenant = await createTenant(svc);
  const [id] = await seedBookings(svc, tenant.organization.id, 1);
  const keys: string[] = [];
  let lost = false;
  const losing: typeof fetch = async (input, init) => {
    keys.push((init!.headers as Record<string, string>)['idempotency-key'] ?? '');
    const res = await fetch(input, init);
    if (!lost) {
      lost = true;
      throw new TypeError('fetch failed');
    }
    return res;
  };
  const client = createClient({ baseUrl, apiKey: tenant.key, fetch: losing, sleep: async () => {} });
  const link = await client.putBookingExternalId({
    path: { id: id! },
    body: { external_id: 'ERP-9' },
    idempotencyKey: true,
  });
  assert.equal(link.external_id, 'ERP-9');
  assert.equal(keys.length, 2);
  assert.ok(keys[0]);
  assert.equal(keys[0], keys[1]);
});

// Retry rules against a scripted server: each call of fetch takes the next answer.
function scripted(answers: (Response | Error)[]) {
  const calls: string[] = [];
  const fetch: typeof globalThis.fetch = async (_input, init) => {
    calls.push(String(init?.method));
    const next = answers.shift();
    if (!next) throw new Error('no more answers');
    if (next instanceof Error) throw next;
    return next;
  };
  return { calls, fetch };
}
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const envelope = (code: string) => ({ error: { code, message: 'm', request_id: 'req_x' } });

test('a 429 is retried after Retry-After, whatever the method', async () => {
  const waits: number[] = [];
  const { calls, fetch } = scripted([
    json(429, envelope('rate_limited'), { 'retry-after': '3' }),
    json(200, { deleted: true }),
  ]);
  const client = createClient({
    baseUrl,
    apiKey: 'k',
    fetch,
    sleep: async (ms) => void waits.push(ms),
    random: () => 0.5,
  });
  assert.deepEqual(await client.deleteWebhook({ path: { id: 'w' } }), { deleted: true });
  assert.deepEqual(calls, ['DELETE', 'DELETE']);
  assert.deepEqual(waits, [3000]);
});

test('5xx and network errors are retried with exponential back-off and jitter on reads only', async () => {
  const waits: number[] = [];
  const sleep = async (ms: number) => void waits.push(ms);
  const read = scripted([
    json(500, envelope('internal')),
    new TypeError('fetch failed'),
    json(503, {}),
    json(200, { data: [] }),
  ]);
  const client = createClient({ baseUrl, apiKey: 'k', fetch: read.fetch, sleep, random: () => 0.999 });
  assert.deepEqual(await client.listWebhooks(), { data: [] });
  assert.deepEqual(waits, [249, 499, 999]);

  const write = scripted([json(500, envelope('internal'))]);
  const writer = createClient({ baseUrl, apiKey: 'k', fetch: write.fetch, sleep });
  const error = await writer
    .createWebhook({ body: { url: 'https://x.example', events: ['*'] } })
    .catch((e) => e);
  assert.equal(error.code, 'internal');
  assert.equal(write.calls.length, 1, 'a write without Idempotency-Key is not repeated');

  const keyed = scripted([json(500, envelope('internal')), json(201, { id: 'w' })]);
  const keyedWriter = createClient({ baseUrl, apiKey: 'k', fetch: keyed.fetch, sleep });
  await keyedWriter.createWebhook({
    body: { url: 'https://x.example', events: ['*'] },
    idempotencyKey: 'k-1',
  });
  assert.equal(keyed.calls.length, 2);
});

test('onRetry is told of each retry; a Retry-After over maxRetryWaitMs is thrown, not slept', async () => {
  const told: [number, number, unknown][] = [];
  const waits: number[] = [];
  const { calls, fetch } = scripted([
    json(503, envelope('unavailable')),
    json(429, envelope('rate_limited'), { 'retry-after': '2' }),
    json(
      429,
      { error: { ...envelope('rate_limited').error, details: { retry_after: 56 } } },
      { 'retry-after': '56' },
    ),
  ]);
  const client = createClient({
    baseUrl,
    apiKey: 'k',
    fetch,
    sleep: async (ms) => void waits.push(ms),
    random: () => 0.999,
    retry: {
      maxRetryWaitMs: 10_000,
      onRetry: (attempt, waitMs, error) => told.push([attempt, waitMs, error]),
    },
  });
  const error = await client.getIntegration().catch((e) => e);
  assert.equal(error.code, 'rate_limited');
  assert.equal(error.details.retry_after, 56, 'the caller learns how long the API asked for');
  assert.equal(calls.length, 3);
  assert.deepEqual(waits, [249, 2000], 'no wait of 56 s');
  assert.deepEqual(
    told.map(([attempt, waitMs, e]) => [attempt, waitMs, (e as { code: string }).code]),
    [
      [1, 249, 'unavailable'],
      [2, 2000, 'rate_limited'],
    ],
  );

  // By default the cap is 30 s.
  const long = scripted([json(429, envelope('rate_limited'), { 'retry-after': '31' })]);
  const slept: number[] = [];
  const byDefault = createClient({
    baseUrl,
    apiKey: 'k',
    fetch: long.fetch,
    sleep: async (ms) => void slept.push(ms),
  });
  assert.equal((await byDefault.getIntegration().catch((e) => e)).status, 429);
  assert.deepEqual(slept, []);
});

test('retries stop after the configured number', async () => {
  const { calls, fetch } = scripted(Array.from({ length: 5 }, () => json(502, {})));
  const client = createClient({ baseUrl, apiKey: 'k', fetch, sleep: async () => {}, retry: { retries: 2 } });
  const error = await client.getIntegration().catch((e) => e);
  assert.equal(error.status, 502);
  assert.equal(error.code, 'unknown');
  assert.equal(calls.length, 3);
});

test('the base url may be the origin or end in /api/v1; any other path is refused at construction', async () => {
  const tenant = await createTenant(svc);
  const origin = new URL(baseUrl).origin;
  for (const given of [origin, `${origin}/`, baseUrl, `${baseUrl}/`]) {
    const { sent, fetch } = recording();
    const me = await createClient({ baseUrl: given, apiKey: tenant.key, fetch }).getIntegration();
    assert.equal(me.organization.id, tenant.organization.id, given);
    assert.equal(sent[0]?.url, `${origin}/api/v1/integrations/me`, given);
  }
  // Behind a gateway's path prefix.
  const urls: string[] = [];
  const gateway: typeof fetch = async (input) => {
    urls.push(String(input));
    return json(200, {});
  };
  await createClient({
    baseUrl: 'https://gw.example/svc/api/v1/',
    apiKey: 'k',
    fetch: gateway,
  }).getIntegration();
  assert.deepEqual(urls, ['https://gw.example/svc/api/v1/integrations/me']);

  const refused = (baseUrl: string) => {
    try {
      createClient({ baseUrl, apiKey: tenant.key });
    } catch (error) {
      assert.ok(error instanceof TypeError, String(error));
      return error.message;
    }
    assert.fail(`${baseUrl} was accepted`);
  };
  assert.match(
    refused(`${origin}/api`),
    /does not end in \/api\/v1: give the origin .* or the url of the version .*\/api\/v1\)/,
  );
  assert.match(
    refused(`${origin}/api/v2`),
    new RegExp(`give the origin \\(${origin}\\) or the url of the version \\(${origin}/api/v1\\)`),
  );
  assert.match(refused('api.example.com/api/v1'), /absolute http\(s\) url/);
  assert.match(refused('ftp://api.example.com'), /http\(s\) url/);
  assert.match(refused(`${baseUrl}?key=x`), /query/);
  assert.throws(() => createClient({ baseUrl, apiKey: '' }), /apiKey is missing/);
  assert.throws(() => createClient({ baseUrl, apiKey: undefined as unknown as string }), /apiKey is missing/);
});

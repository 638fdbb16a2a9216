import assert from 'node:assert/strict';
import { test } from 'node:test';
import { adminRequest } from './admin.js';

const words = (line: string) => line.split(' ');

test('org create: booleans are flags, as the help shows them', () => {
  assert.deepEqual(adminRequest(words('org create --code 4242 --name X --webhooks --outbox')), [
    'POST',
    '/organizations',
    { code: '4242', name: 'X', webhooks_enabled: true, outbox_enabled: true, api_enabled: true },
  ]);
  assert.deepEqual(adminRequest(words('org create --code 4242 --name X --no-api'))?.[2], {
    code: '4242',
    name: 'X',
    webhooks_enabled: false,
    outbox_enabled: false,
    api_enabled: false,
  });
});

test('org update: --flag and --no-flag set a boolean; absent leaves it as it is', () => {
  const id = '0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10';
  assert.deepEqual(adminRequest(words(`org update ${id} --no-webhooks --api`)), [
    'PATCH',
    `/organizations/${id}`,
    { name: undefined, api_enabled: true, webhooks_enabled: false, outbox_enabled: undefined },
  ]);
});

test('a value given to a boolean is an error naming it', () => {
  const id = '0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10';
  assert.throws(() => adminRequest(words(`org update ${id} --webhooks maybe`)), /"maybe"/);
  assert.throws(() => adminRequest(words(`org update ${id} --webhooks false`)), /"false"/);
  assert.throws(() => adminRequest(words('org create --code 1 --name X --webhooks=yes')), /--webhooks/);
});

test('deliveries replay: the operator route with its filters; the webhook is required', () => {
  const hook = '0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10';
  const org = '1c7d6f3f-5d2d-4b9f-8b62-8c8f9f1a0b21';
  assert.deepEqual(
    adminRequest(
      words(
        `deliveries replay --webhook ${hook} --organization ${org} --since 2026-11-01T00:00:00Z --until 2026-11-02T00:00:00Z --status dead --limit 50`,
      ),
    ),
    [
      'POST',
      `/webhooks/${hook}/deliveries/replay`,
      {
        since: '2026-11-01T00:00:00Z',
        until: '2026-11-02T00:00:00Z',
        organization_id: org,
        status: 'dead',
        limit: 50,
      },
    ],
  );
  assert.throws(() => adminRequest(words('deliveries replay --since 2026-11-01T00:00:00Z')), /--webhook/);
});

test('master-key: status reads, rotate posts a batch of the size given', () => {
  assert.deepEqual(adminRequest(words('master-key status')), ['GET', '/master-key']);
  assert.deepEqual(adminRequest(words('master-key rotate')), [
    'POST',
    '/master-key/rotate',
    { limit: undefined },
  ]);
  assert.deepEqual(adminRequest(words('master-key rotate --limit 50'))?.[2], { limit: 50 });
});

test('webhooks: the on-call reads, their filters as query parameters', () => {
  const org = '1c7d6f3f-5d2d-4b9f-8b62-8c8f9f1a0b21';
  const hook = '0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10';
  assert.deepEqual(adminRequest(words('webhooks list')), ['GET', '/webhooks']);
  assert.deepEqual(
    adminRequest(
      words(`webhooks list --org ${org} --inactive --failing --failures-above 50 --limit 10 --cursor c.s`),
    ),
    [
      'GET',
      `/webhooks?organization_id=${org}&active=false&failing=true&consecutive_failures_above=50&limit=10&cursor=c.s`,
    ],
  );
  assert.deepEqual(adminRequest(words(`webhooks get ${hook} --deliveries 5`)), [
    'GET',
    `/webhooks/${hook}?deliveries=5`,
  ]);
  assert.deepEqual(adminRequest(words(`webhooks backlog --org ${org}`)), [
    'GET',
    `/backlog?organization_id=${org}`,
  ]);
  assert.throws(() => adminRequest(words(`webhooks get ${hook} extra`)), /"extra"/);
});

test('portal open: a delivery portal session for the integration, for the minutes given', () => {
  const id = '0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10';
  assert.deepEqual(adminRequest(words(`portal open --integration ${id} --minutes 15`)), [
    'POST',
    `/integrations/${id}/portal-sessions`,
    { ttl_minutes: 15 },
  ]);
  assert.deepEqual(adminRequest(words(`portal open --integration ${id}`))?.[2], { ttl_minutes: undefined });
});

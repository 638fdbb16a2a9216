// Deeply nested JSON: any depth the 256 KiB body cap allows is a 400 validation_error with its
// details, never a 500 from a check that walks the body by recursion (and overflows the stack).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { BODY_LIMIT } from '../../src/http/kit.js';
import { assertError } from '../api/read-support.js';
import { serviceForFile } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { webhookTenant } from '../support/webhooks.js';

const svc = await serviceForFile();
const t = await webhookTenant(svc);

/** `depth` arrays, one inside the other, around `inner`. */
const nested = (depth: number, inner = '1') => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;

const send = (method: string, path: string, payload: string) =>
  svc.call(method, path, { key: t.key, payload, headers: { 'content-type': 'application/json' } });

describe('deeply nested JSON bodies', () => {
  test('5,000 nested arrays as the body of POST /webhooks: 400, the body is not an object', async () => {
    const payload = nested(5_000);
    assert.ok(payload.length <= 10_240);
    const res = await send('POST', '/webhooks', payload);
    assertError(res, 400, 'validation_error', { field: 'body' });
  });

  test('20,000 nested arrays as external_id: 400 naming external_id', async () => {
    const booking = randomUUID();
    await putBooking(svc, t.organization.id, {}, booking);
    const res = await send('PUT', `/bookings/${booking}/external-id`, `{"external_id":${nested(20_000)}}`);
    assertError(res, 400, 'validation_error', { field: 'external_id' });
  });

  test('as deep as the body cap allows, with and without a NUL at the bottom: 400', async () => {
    const depth = Math.floor((BODY_LIMIT - 200) / 2);
    for (const inner of ['1', '"\\u0000"', '{"a\\u0000":1}']) {
      const res = await send(
        'POST',
        '/webhooks',
        `{"url":"https://example.com","events":${nested(depth, inner)}}`,
      );
      assert.equal(res.status, 400, res.text.slice(0, 300));
      assert.equal(res.body.error.code, 'validation_error');
      const field: string = res.body.error.details.field;
      assert.ok(field === 'events.0' || (field.startsWith('events.0.0.0') && field.length <= 201), field);
      assert.ok(res.text.length < 1_000, 'the answer does not echo the nesting');
    }
  });

  test('a NUL deep inside names where it sits, as before', async () => {
    const res = await send('POST', '/webhooks', `{"url":"https://example.com","events":[["x"],["\\u0000"]]}`);
    assertError(res, 400, 'validation_error', { field: 'events.1.0' });
    const key = await send('POST', '/webhooks', `{"url":"https://example.com","a/~\\u0000":1}`);
    assertError(key, 400, 'validation_error', { field: 'a/~\u0000' });
  });
});

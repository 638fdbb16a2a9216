// What the server answers by itself, over a real socket: a client trickling its headers or its
// body is dropped within SVC_REQUEST_TIMEOUT_MS with a 408, oversized headers are a 431 and
// unparseable bytes or an HTTP/1.1 request without Host a 400, each with the contract's envelope
// and a request id; a method the route lacks is the 405 before its body is read.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { serviceForFile } from '../support/context.js';
import { type Exchange, exchange as exchangeOn } from '../support/raw-http.js';
import { createTenant } from '../support/tenants.js';

const REQUEST_TIMEOUT_MS = 1000;
const svc = await serviceForFile({ SVC_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) });
const t = await createTenant(svc);
await svc.api.listen({ host: '127.0.0.1', port: 0 });
const { port } = svc.api.server.address() as { port: number };
const exchange = (head: string | Buffer, trickle = '', everyMs = 100) =>
  exchangeOn(port, head, trickle, everyMs);
after(() => svc.api.close());

function assertEnvelope(res: Exchange, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res));
  assert.equal(res.body?.error?.code, code, JSON.stringify(res.body));
  assert.match(String(res.headers['x-svc-request-id']), /^req_[A-Za-z0-9_-]+$/);
  assert.equal(res.body.error.request_id, res.headers['x-svc-request-id']);
  assert.match(res.headers['content-type'] ?? '', /^application\/json/);
}

test('a body trickled a byte at a time is dropped with 408 within the request time-out', async () => {
  const body = JSON.stringify({ external_id: 'slow-client-0001' });
  const head =
    `PUT /api/v1/bookings/00000000-0000-4000-8000-000000000000/external-id HTTP/1.1\r\n` +
    `Host: x\r\nAuthorization: Bearer ${t.key}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n`;
  const res = await exchange(head, body, 200);
  console.log(`trickled body dropped after ${res.ms} ms (SVC_REQUEST_TIMEOUT_MS ${REQUEST_TIMEOUT_MS})`);
  assertEnvelope(res, 408, 'request_timeout');
  assert.ok(res.ms < REQUEST_TIMEOUT_MS + 1_200, `${res.ms} ms`);
});

test('headers trickled a byte at a time are dropped with 408 within the request time-out', async () => {
  const res = await exchange(
    'GET /api/v1/integrations/me HTTP/1.1\r\nHost: x\r\n',
    'X-Slow: '.repeat(20),
    100,
  );
  console.log(`trickled headers dropped after ${res.ms} ms`);
  assertEnvelope(res, 408, 'request_timeout');
  assert.ok(res.ms < REQUEST_TIMEOUT_MS + 1_200, `${res.ms} ms`);
});

test('oversized headers are a 431 with the envelope', async () => {
  const res = await exchange(
    `GET /api/v1/integrations/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
  );
  assertEnvelope(res, 431, 'headers_too_large');
});

test('bytes that are not HTTP are a 400 with the envelope', async () => {
  const res = await exchange('GET /api/v1/integrations/me HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
  assertEnvelope(res, 400, 'validation_error');
});

test('an HTTP/1.1 request without Host is a 400 with the envelope and a request id', async () => {
  const res = await exchange(
    `GET /api/v1/integrations/me HTTP/1.1\r\nAuthorization: Bearer ${t.key}\r\nConnection: close\r\n\r\n`,
  );
  assertEnvelope(res, 400, 'validation_error');
  assert.deepEqual(res.body.error.details, { param: 'Host' });
  // HTTP/1.0 may omit it: such a request is served.
  const old = await exchange(
    `GET /api/v1/integrations/me HTTP/1.0\r\nAuthorization: Bearer ${t.key}\r\n\r\n`,
  );
  assert.equal(old.status, 200, JSON.stringify(old));
});

test('a method the route lacks, sent with malformed JSON, is the 405 before the body is read', async () => {
  for (const body of ['{"external_id": ', '\u0000not json', '{}']) {
    const res = await exchange(
      `POST /api/v1/integrations/me HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    assert.equal(res.status, 405, JSON.stringify(res));
    assert.equal(res.headers.allow, 'GET');
    assert.equal(res.headers['x-svc-request-id'], undefined);
    assert.equal(res.body, 'Method Not Allowed');
  }
  // Announced and never sent: answered at once all the same, not after the request time-out.
  const res = await exchange(
    'PATCH /api/v1/integrations/me HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      'Content-Length: 100\r\nConnection: close\r\n\r\n{',
  );
  assert.equal(res.status, 405, JSON.stringify(res));
});

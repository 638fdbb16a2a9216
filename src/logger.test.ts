import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger } from './logger.js';

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger('trace', sink), lines };
}

const KEY = `svc_live_${'k'.repeat(40)}`;

test('every path a secret could travel is redacted', () => {
  const { logger, lines } = capture();
  logger.info({
    req: { method: 'GET', url: '/x', headers: { authorization: `Bearer ${KEY}` } },
    headers: { authorization: `Bearer ${KEY}` },
    request: { authorization: `Bearer ${KEY}` },
    key: KEY,
    issued: { key: KEY, secret: 'whsec_abc', token: 'OPERATOR-TOKEN-1', secret_hash: 'c2VjcmV0' },
    secret: 'whsec_abc',
    token: 'OPERATOR-TOKEN-1',
    operatorToken: 'OPERATOR-TOKEN-1',
    masterKey: 'MASTER-SECRET-1',
    config: { masterKey: 'MASTER-SECRET-1', operatorToken: 'OPERATOR-TOKEN-1' },
    secret_hash: 'c2VjcmV0',
  });
  const line = lines.join('');
  for (const secret of [KEY, 'whsec_abc', 'OPERATOR-TOKEN-1', 'MASTER-SECRET-1', 'c2VjcmV0']) {
    assert.equal(line.includes(secret), false, `${secret} is in ${line}`);
  }
  assert.match(line, /\[redacted\]/);
});

test('a request is logged by method, path and ip: no headers, no query string', () => {
  const { logger, lines } = capture();
  logger.info(
    {
      req: {
        method: 'GET',
        url: '/api/v1/bookings?external_id=ERP-1&cursor=abc',
        ip: '10.0.0.1',
        headers: { authorization: `Bearer ${KEY}`, 'idempotency-key': 'idem-1' },
      },
    },
    'incoming request',
  );
  const entry = JSON.parse(lines[0] as string);
  assert.deepEqual(entry.req, { method: 'GET', path: '/api/v1/bookings', ip: '10.0.0.1' });
});

import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { formatRecord, prettyStream, wantsPretty } from './log-pretty.js';
import { createLogger } from './logger.js';

const KEY = `svc_live_${'k'.repeat(40)}`;

function capture() {
  let text = '';
  const out = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { out, text: () => text };
}

test('records become one readable line each, secrets still redacted', () => {
  const { out, text } = capture();
  const logger = createLogger('info', prettyStream(out, false));
  logger.info(
    { req: { method: 'GET', url: '/api/v1/bookings?cursor=abc', headers: {} } },
    'incoming request',
  );
  logger.info(
    {
      req: { method: 'GET', url: '/api/v1/bookings?cursor=abc' },
      res: { statusCode: 200 },
      responseTime: 3.21,
    },
    'request completed',
  );
  logger.warn({ key: KEY, file: '/tmp/ca.pem' }, 'SVC_WEBHOOK_CA_FILE: deliveries also trust this CA.');
  logger.error({ err: new Error('boom') }, 'webhook worker round failed');
  const lines = text().trimEnd().split('\n');
  assert.match(lines[0] ?? '', /^\d\d:\d\d:\d\d\.\d{3} INFO {2}GET \/api\/v1\/bookings 200 3\.2 ms$/);
  assert.match(lines[1] ?? '', /WARN {2}SVC_WEBHOOK_CA_FILE: .* {2}key=\[redacted\] file=\/tmp\/ca\.pem$/);
  assert.match(lines[2] ?? '', /ERROR webhook worker round failed$/);
  assert.match(lines[3] ?? '', /^ {4}Error: boom$/);
  assert.ok(!text().includes(KEY));
  assert.ok(!text().includes('cursor=abc'), 'the query string stays out, as in the JSON');
  assert.ok(!text().includes('incoming request'));
});

test('colours only when asked; lines that are not JSON pass through', () => {
  assert.ok((formatRecord({ level: 50, time: 0, msg: 'x' }, true) ?? '').includes('\u001b[31mERROR'));
  assert.ok(!(formatRecord({ level: 50, time: 0, msg: 'x' }, false) ?? '').includes('\u001b'));
  const { out, text } = capture();
  prettyStream(out, false).write('not json\n');
  assert.equal(text(), 'not json\n');
});

test('auto is pretty on a terminal only; json and pretty force it', () => {
  assert.equal(wantsPretty('auto', true), true);
  assert.equal(wantsPretty('auto', false), false);
  assert.equal(wantsPretty('auto', undefined), false);
  assert.equal(wantsPretty('json', true), false);
  assert.equal(wantsPretty('pretty', false), true);
});

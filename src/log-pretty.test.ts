import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { prettyStream, wantsPretty } from './log-pretty.js';
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

test('records become readable lines (pino-pretty), secrets still redacted', () => {
  const { out, text } = capture();
  const logger = createLogger('info', prettyStream(out, false));
  logger.info(
    { reqId: 'req_1', req: { method: 'GET', url: '/api/v1/bookings?cursor=abc', headers: {} } },
    'incoming request',
  );
  logger.info({ reqId: 'req_1', res: { statusCode: 200 }, responseTime: 3.21 }, 'request completed');
  logger.warn({ key: KEY, file: '/tmp/ca.pem' }, 'SVC_WEBHOOK_CA_FILE: deliveries also trust this CA.');
  logger.error({ err: new Error('boom') }, 'webhook worker round failed');
  const lines = text().trimEnd().split('\n');
  const time = String.raw`^\[\d\d:\d\d:\d\d\.\d{3}\]`;
  assert.match(
    lines[0] ?? '',
    new RegExp(`${time} INFO: incoming request GET /api/v1/bookings {"reqId":"req_1"}$`),
  );
  assert.match(lines[1] ?? '', new RegExp(`${time} INFO: request completed 200 3\\.2 ms {"reqId":"req_1"}$`));
  assert.match(
    lines[2] ?? '',
    /WARN: SVC_WEBHOOK_CA_FILE: deliveries also trust this CA\. {"key":"\[redacted\]","file":"\/tmp\/ca\.pem"}$/,
  );
  assert.match(lines[3] ?? '', /ERROR: webhook worker round failed/);
  assert.match(text(), /Error: boom\n\s+at /, 'the stack under the error line');
  assert.ok(!text().includes(KEY));
  assert.ok(!text().includes('cursor=abc'), 'the query string stays out, as in the JSON');
  assert.ok(!/"(pid|hostname)"/.test(text()), 'no pid or host name on a terminal');
});

test('colours only when asked; lines that are not JSON pass through', () => {
  for (const colors of [true, false]) {
    const { out, text } = capture();
    createLogger('info', prettyStream(out, colors)).error('x');
    assert.equal(text().includes('\u001b[31mERROR'), colors);
    assert.equal(text().includes('\u001b'), colors);
  }
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

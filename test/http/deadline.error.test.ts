// The request deadline of the kit (src/http/deadline.ts), on a real socket: a handler that never
// answers gets 500 with the envelope once SVC_REQUEST_TIMEOUT_MS has passed, an answer already
// started is cut instead, the requests within their time are left alone, and answered requests
// leave nothing behind.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { after, test } from 'node:test';
import pino from 'pino';
import { createDeadlines } from '../../src/http/deadline.js';
import { createHttpApp } from '../../src/http/kit.js';

const TIMEOUT_MS = 300;
const logged: string[] = [];
const app = createHttpApp({
  name: 'public',
  logger: pino({ level: 'info' }, { write: (line: string) => logged.push(line) }),
  requestTimeoutMs: TIMEOUT_MS,
});
let release!: () => void;
const released = new Promise<void>((resolve) => {
  release = resolve;
});
app.get('/never', () => released.then(() => ({ late: true })));
app.get('/slow', () => new Promise((resolve) => setTimeout(() => resolve({ ok: true }), TIMEOUT_MS / 3)));
app.get('/started', (_request, reply) => {
  const body = new PassThrough();
  body.write('{"partial":');
  return reply.type('application/json').send(body);
});
// An answer whose onSend hook (the idempotency record, say) is still writing when the deadline passes.
let onSendDone!: () => void;
const onSendFinished = new Promise<void>((resolve) => {
  onSendDone = resolve;
});
app.get(
  '/slow-on-send',
  {
    onSend: async (_request, _reply, payload) => {
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 2));
      onSendDone();
      return payload;
    },
  },
  async () => ({ ok: true }),
);
await app.listen({ port: 0, host: '127.0.0.1' });
const { port } = app.server.address() as AddressInfo;
after(async () => {
  release();
  await app.close();
});

function get(path: string): Promise<{ status: number; body: string; ms: number; error?: string }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - started }));
      res.on('error', (error) =>
        resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - started, error: error.message }),
      );
    });
    req.on('error', (error) =>
      resolve({ status: 0, body: '', ms: performance.now() - started, error: error.message }),
    );
    req.end();
  });
}

// The first stack traces formatted with the source maps the suite runs with (--enable-source-maps)
// parse them: a second or more on a busy machine. One untimed round of both kinds of deadline first.
await Promise.all([get('/never'), get('/started')]);

test('a handler that never answers is answered 500 with the envelope once the time-out has passed', async () => {
  const [stuck, slow] = await Promise.all([get('/never'), get('/slow')]);
  assert.equal(stuck.status, 500);
  const body = JSON.parse(stuck.body);
  assert.equal(body.error.code, 'internal');
  assert.match(body.error.request_id, /^req_/);
  assert.ok(stuck.ms >= TIMEOUT_MS - 5, `answered after ${stuck.ms} ms`);
  assert.ok(stuck.ms < TIMEOUT_MS + 1_000, `answered after ${stuck.ms} ms`);
  // A request within its time is not touched by the check that answered the other one.
  assert.equal(slow.status, 200);
  assert.deepEqual(JSON.parse(slow.body), { ok: true });
});

test('an answer already started when the deadline passes is cut, not given a second status', async () => {
  const res = await get('/started');
  assert.equal(res.status === 200 || res.status === 0, true, `status ${res.status}`);
  assert.ok(res.error, 'the connection was cut');
  assert.ok(res.ms < TIMEOUT_MS + 1_000, `cut after ${res.ms} ms`);
});

test('a deadline passing while an onSend hook still writes cuts the connection: never 500 with the success body', async () => {
  const res = await get('/slow-on-send');
  assert.equal(res.status, 0, `answered ${res.status} ${res.body}`);
  assert.ok(res.error, 'the connection was cut');
  assert.ok(res.ms < TIMEOUT_MS + 1_000, `cut after ${res.ms} ms`);
  // The hook ran to its end (an idempotency record is written), and nothing tried a second answer.
  await onSendFinished;
  await new Promise((resolve) => setImmediate(resolve));
  const headersSent = logged.filter((line) => /ERR_HTTP_HEADERS_SENT|already sent/i.test(line));
  assert.deepEqual(headersSent, []);
});

test('a check stops at the first request still within its time and forgets the answered ones', () => {
  let now = 0;
  const deadlines = createDeadlines(100, () => now);
  deadlines.stop();
  const sent: string[] = [];
  const reply = (name: string, answered = false) =>
    ({
      sent: answered,
      raw: { writableEnded: false, destroyed: false, headersSent: false },
      send: () => sent.push(name),
    }) as never;
  const a = reply('a');
  const b = reply('b');
  const answered = reply('answered', true);
  deadlines.start(a);
  now = 50;
  deadlines.start(answered);
  deadlines.start(b);
  now = 100;
  deadlines.check();
  assert.deepEqual(sent, ['a']);
  now = 149;
  deadlines.check();
  assert.deepEqual(sent, ['a']);
  deadlines.finish(b);
  now = 1_000;
  deadlines.check();
  // `answered` had its answer already; `b` finished before its deadline.
  assert.deepEqual(sent, ['a']);
});

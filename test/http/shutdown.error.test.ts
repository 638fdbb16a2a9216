// The shutdown sequence of src/lifecycle.ts on a kit application: a request in flight finishes
// within the grace period, one that arrives meanwhile is 503 with the envelope, and one that
// outlives the grace period is cut so that stopping always ends.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { type App, createHttpApp } from '../../src/http/kit.js';
import { httpStoppable, shutdown } from '../../src/lifecycle.js';
import { createLogger } from '../../src/logger.js';

async function slowApp(): Promise<{ app: App; release(): void; started: Promise<void> }> {
  const app = createHttpApp({ name: 'public', logger: createLogger('silent') });
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let began!: () => void;
  const started = new Promise<void>((resolve) => {
    began = resolve;
  });
  app.get('/slow', async () => {
    began();
    await held;
    return { done: true };
  });
  app.get('/fast', async () => ({ done: true }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, release, started };
}

const url = (app: App, path: string) =>
  `http://127.0.0.1:${(app.server.address() as { port: number }).port}${path}`;

test('a request in flight finishes; one completed while stopping is 503 with the envelope', async () => {
  const { app, release, started } = await slowApp();
  const inFlight = fetch(url(app, '/slow'));
  await started;
  // A client that had sent part of its headers when the stop began, and finishes them after.
  const late = connect((app.server.address() as { port: number }).port, '127.0.0.1');
  let answer = '';
  late.on('data', (chunk) => {
    answer += chunk.toString();
  });
  const lateClosed = new Promise((resolve) => late.on('close', resolve));
  await new Promise<void>((resolve) => late.write('GET /fast HTTP/1.1\r\nHost: x\r\n', () => resolve()));
  await new Promise((r) => setTimeout(r, 50));
  const stopping = shutdown([httpStoppable('api', app)], 5_000);
  await new Promise((r) => setTimeout(r, 50));
  late.write('\r\n');
  await lateClosed;
  assert.match(answer, /^HTTP\/1\.1 503 /);
  assert.match(answer, /\r\nconnection: close\r\n/i);
  const envelope = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
  assert.equal(envelope.error.code, 'unavailable');
  assert.match(answer, new RegExp(`x-svc-request-id: ${envelope.error.request_id}\r\n`, 'i'));
  release();
  const res = await inFlight;
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('connection'), 'close');
  assert.deepEqual(await res.json(), { done: true });
  assert.deepEqual((await stopping).forced, []);
});

test('work still in hand after the grace period is abandoned and stopping ends', async () => {
  const { app, started } = await slowApp();
  const inFlight = fetch(url(app, '/slow')).catch((error: unknown) => error);
  await started;
  const report = await shutdown([httpStoppable('api', app)], 300);
  assert.deepEqual(report.forced, ['api']);
  assert.ok(report.ms >= 290 && report.ms < 1_500, `${report.ms} ms`);
  assert.ok((await inFlight) instanceof Error, 'the request was cut');
});

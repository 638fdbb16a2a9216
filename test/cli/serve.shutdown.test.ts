// SIGTERM to a real `svc serve` with clients attached: an idle keep-alive connection is closed at
// once, a request in flight finishes and its connection is closed after the answer, a client
// trickling its headers is cut when the grace period ends, and the process exits 0 soon after,
// whatever SVC_REQUEST_TIMEOUT_MS says.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { dataDirMigrated } from '../support/pglite-template.js';
import { freePort, svc } from '../support/processes.js';

const GRACE_MS = 1500;

// Past initdb already: this file is about the shutdown, not the first start.
const dataDir = await dataDirMigrated(await mkdtemp(join(tmpdir(), 'svc-shutdown-')));
after(() => rm(dataDir, { recursive: true, force: true }));

/** A raw connection that records everything it receives and when it closed. */
function rawClient(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  const state = { received: '', closedAt: 0 };
  socket.on('data', (chunk) => {
    state.received += chunk.toString('latin1');
  });
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) =>
    socket.on('close', () => {
      state.closedAt = Date.now();
      resolve(state.closedAt);
    }),
  );
  const answered = (count: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer: ${state.received}`)), 10_000);
      const check = () => {
        if ((state.received.match(/HTTP\/1\.1 /g) ?? []).length >= count && /\}$/.test(state.received)) {
          clearTimeout(timer);
          socket.off('data', check);
          resolve();
        }
      };
      socket.on('data', check);
      check();
    });
  return { socket, state, closed, answered };
}

test('SIGTERM: idle connections close at once, requests in flight finish, stragglers are cut at the grace period', async () => {
  const port = await freePort();
  const server = svc(['serve', '--demo'], {
    DATABASE_URL: '',
    SVC_DATA_DIR: dataDir,
    SVC_PORT: String(port),
    SVC_OPERATOR_PORT: String(await freePort()),
    SVC_HOST: '127.0.0.1',
    SVC_SHUTDOWN_GRACE_MS: String(GRACE_MS),
    SVC_REQUEST_TIMEOUT_MS: '30000',
  });
  const { child } = server;
  const exited = server.exited().then((code) => ({ code, at: Date.now() }));
  try {
    const banner = await server.waitFor(/Operator API: .*\n/);
    const key = /svc_live_[A-Za-z0-9]{40}/.exec(banner)?.[0] as string;
    const auth = { authorization: `Bearer ${key}` };
    const page = await (
      await fetch(`http://127.0.0.1:${port}/api/v1/bookings?limit=1`, { headers: auth })
    ).json();
    const bookingId = page.data[0].id as string;

    // An idle keep-alive client: one request answered, the connection left open.
    const idle = rawClient(port);
    idle.socket.write(
      `GET /api/v1/integrations/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`,
    );
    await idle.answered(1);

    // A request in flight: headers and half of the body sent.
    const body = JSON.stringify({ external_id: 'shutdown-0001' });
    const inFlight = rawClient(port);
    inFlight.socket.write(
      `PUT /api/v1/bookings/${bookingId}/external-id HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );

    // A client trickling its headers, a byte every 100 ms.
    const trickler = rawClient(port);
    trickler.socket.write('GET /api/v1/integrations/me HTTP/1.1\r\nHost: x\r\n');
    const trickle = setInterval(() => trickler.socket.writable && trickler.socket.write('X'), 100);
    await new Promise((r) => setTimeout(r, 200));

    const sigterm = Date.now();
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    inFlight.socket.write(body.slice(10));
    await inFlight.answered(1);

    const exit = await Promise.race([
      exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('still running 8 s after SIGTERM')), 8_000),
      ),
    ]);
    clearInterval(trickle);
    const idleClosed = (await idle.closed) - sigterm;
    const tricklerClosed = (await trickler.closed) - sigterm;
    const exitMs = exit.at - sigterm;
    console.log(
      `after SIGTERM: idle keep-alive closed in ${idleClosed} ms, trickler cut in ${tricklerClosed} ms, exit in ${exitMs} ms (grace ${GRACE_MS} ms)`,
    );

    assert.equal(exit.code, 0);
    assert.ok(idleClosed < 300, `idle connection closed after ${idleClosed} ms`);
    assert.match(inFlight.state.received, /^HTTP\/1\.1 200 /, 'the request in flight finished');
    assert.match(inFlight.state.received, /\r\nconnection: close\r\n/i);
    assert.ok((await inFlight.closed) - sigterm < GRACE_MS, 'and its connection closed after the answer');
    assert.ok(tricklerClosed >= GRACE_MS - 100 && tricklerClosed < GRACE_MS + 1_000, `${tricklerClosed} ms`);
    assert.ok(exitMs < GRACE_MS + 1_500, `exit ${exitMs} ms after SIGTERM`);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

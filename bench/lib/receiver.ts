// The webhook receiver of the benchmarks: HTTPS on 127.0.0.1 with the test CA's localhost
// certificate (test/fixtures/tls), keep-alive, answering 200 `delayMs` after a body has arrived.
// Each path is one webhook. It records every arrival (performance.now() of this process, the clock
// the feed is timed with) with the delivery id and attempt the sender gave, and counts each
// webhook's requests in flight (from their headers to the answer, or the connection's end) with
// the most ever seen: the sender's own count can only be larger, so a bound exceeded here was
// exceeded by the sender.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { ROOT, sleep } from './report.js';

export interface Arrival {
  /** performance.now() when the whole body had arrived. */
  at: number;
  path: string;
  eventId: string;
  deliveryId: string;
  attempt: number;
  body: string;
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

export async function startReceiver() {
  const tls = join(ROOT, 'test', 'fixtures', 'tls');
  const sockets = new Set<Socket>();
  const server = createServer({
    key: readFileSync(join(tls, 'server-key.pem')),
    cert: readFileSync(join(tls, 'server.pem')),
    keepAliveTimeout: 60_000,
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const origin = `https://localhost:${(server.address() as AddressInfo).port}`;
  const receiver = {
    /** `https://localhost:PORT/path`: the name the certificate covers. */
    url: (path: string) => `${origin}${path}`,
    caFile: join(tls, 'ca.pem'),
    /** Milliseconds between a body's arrival and the answer. */
    delayMs: 0,
    arrivals: [] as Arrival[],
    /** Requests in flight now, and the most ever seen, per path. */
    inFlight: new Map<string, number>(),
    maxInFlight: new Map<string, number>(),
    /** Forgets every arrival and the most in flight (before a new phase). */
    reset() {
      receiver.arrivals = [];
      receiver.maxInFlight = new Map(receiver.inFlight);
    },
    /** Resolves true once `done()` holds (checked every 10 ms), false after `timeoutMs`. */
    async until(done: () => boolean, timeoutMs: number): Promise<boolean> {
      for (const deadline = performance.now() + timeoutMs; !done(); await sleep(10))
        if (performance.now() > deadline) return false;
      return true;
    },
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      return closed;
    },
  };
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('request', (req, res) => {
    const path = req.url ?? '';
    const now = (receiver.inFlight.get(path) ?? 0) + 1;
    receiver.inFlight.set(path, now);
    receiver.maxInFlight.set(path, Math.max(now, receiver.maxInFlight.get(path) ?? 0));
    res.once('close', () => receiver.inFlight.set(path, (receiver.inFlight.get(path) ?? 1) - 1));
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      receiver.arrivals.push({
        at: performance.now(),
        path,
        eventId: String(req.headers['x-svc-event-id'] ?? ''),
        deliveryId: String(req.headers['x-svc-delivery'] ?? ''),
        attempt: Number(req.headers['x-svc-attempt'] ?? 0),
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const answer = () => {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': '2' });
        res.end('ok');
      };
      if (receiver.delayMs > 0) setTimeout(answer, receiver.delayMs);
      else answer();
    });
  });
  return receiver;
}

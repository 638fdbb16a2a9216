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

export interface Arrival {
  /** performance.now() when the whole body had arrived. */
  at: number;
  /** Date.now() at the same moment. */
  wall: number;
  path: string;
  eventId: string;
  deliveryId: string;
  attempt: number;
  body: string;
}

export interface Receiver {
  /** `https://localhost:PORT/path`: the name the certificate covers. */
  url(path: string): string;
  caFile: string;
  /** Milliseconds between a body's arrival and the answer. */
  delayMs: number;
  arrivals: Arrival[];
  /** Requests in flight now, and the most ever seen, per path. */
  inFlight: Map<string, number>;
  maxInFlight: Map<string, number>;
  /** Forgets every arrival and the most in flight (before a new phase). */
  reset(): void;
  /** Resolves true when `done()` holds (checked on each arrival and every 50 ms), false after `timeoutMs`. */
  until(done: () => boolean, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export async function startReceiver(root: string): Promise<Receiver> {
  const tls = join(root, 'test', 'fixtures', 'tls');
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  const server = createServer({
    key: readFileSync(join(tls, 'server-key.pem')),
    cert: readFileSync(join(tls, 'server.pem')),
    keepAliveTimeout: 60_000,
  });
  const receiver: Receiver = {
    url: () => '',
    caFile: join(tls, 'ca.pem'),
    delayMs: 0,
    arrivals: [],
    inFlight: new Map(),
    maxInFlight: new Map(),
    reset() {
      receiver.arrivals = [];
      receiver.maxInFlight = new Map(receiver.inFlight);
    },
    until(done, timeoutMs) {
      return new Promise((resolve) => {
        const finish = (value: boolean) => {
          clearTimeout(timer);
          clearInterval(poll);
          waiters.delete(check);
          resolve(value);
        };
        const check = () => {
          if (done()) finish(true);
        };
        const timer = setTimeout(() => finish(false), timeoutMs);
        const poll = setInterval(check, 50);
        waiters.add(check);
        check();
      });
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
    if (now > (receiver.maxInFlight.get(path) ?? 0)) receiver.maxInFlight.set(path, now);
    res.once('close', () => receiver.inFlight.set(path, (receiver.inFlight.get(path) ?? 1) - 1));
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      receiver.arrivals.push({
        at: performance.now(),
        wall: Date.now(),
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
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const origin = `https://localhost:${(server.address() as AddressInfo).port}`;
  receiver.url = (path) => `${origin}${path}`;
  return receiver;
}

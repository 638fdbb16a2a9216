// The webhook receiver of the delivery benchmark: HTTPS on 127.0.0.1 with the test CA's localhost
// certificate (test/fixtures/tls), keep-alive, answering 200 as soon as a body has arrived. It
// records the arrival time of every request (performance.now() of this process, the clock the feed
// writes are timed with) and what identifies it; nothing is parsed on the way in, so it does the same
// work for the delivery worker and for the ceiling client. Paths under SLOW_PREFIX stand for receivers
// that take their time: they are answered `slowMs` after their body arrived.
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';

export interface Arrival {
  /** performance.now() when the whole body had arrived */
  at: number;
  /** Date.now() at the same moment (to compare with the database's clock) */
  wall: number;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface BenchReceiver {
  /** `https://localhost:PORT/path`: the name the certificate covers. */
  url(path: string): string;
  origin: string;
  caFile: string;
  arrivals: Arrival[];
  /** TLS handshakes completed so far (new connections). */
  tlsConnections(): number;
  /**
   * Lets go of every arrival so far; their count stays, so positions taken before still hold. A
   * run of three rounds receives some 400,000 deliveries, and kept whole they filled the harness's
   * heap (4 GB) before its last configuration.
   */
  forget(): void;
  /** Resolves when `done()` holds (checked on each arrival and every 50 ms), or false after `timeoutMs`. */
  until(done: () => boolean, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** What a forgotten arrival reads as: no path, so no phase takes it. */
const FORGOTTEN: Arrival = { at: 0, wall: 0, path: '', headers: {}, body: '' };

/** Paths answered only after the receiver's `slowMs`. */
export const SLOW_PREFIX = '/s/';

export async function startBenchReceiver(root: string, slowMs = 0): Promise<BenchReceiver> {
  const tls = join(root, 'test', 'fixtures', 'tls');
  const arrivals: Arrival[] = [];
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  const server: Server = createServer({
    key: readFileSync(join(tls, 'server-key.pem')),
    cert: readFileSync(join(tls, 'server.pem')),
    keepAliveTimeout: 60_000,
  });
  let handshakes = 0;
  server.on('secureConnection', () => {
    handshakes += 1;
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      arrivals.push({
        at: performance.now(),
        wall: Date.now(),
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const answer = () => {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': '2' });
        res.end('ok');
      };
      if (slowMs > 0 && req.url?.startsWith(SLOW_PREFIX)) setTimeout(answer, slowMs);
      else answer();
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `https://localhost:${port}`;

  return {
    url: (path) => `${origin}${path}`,
    origin,
    caFile: join(tls, 'ca.pem'),
    arrivals,
    tlsConnections: () => handshakes,
    forget: () => {
      arrivals.fill(FORGOTTEN);
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
}

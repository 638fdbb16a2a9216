// A webhook receiver for tests: HTTPS on 127.0.0.1 with the test CA's certificate for localhost,
// recording every request and answering as the test says (status, delay, a hang or a reset), so
// the sender is exercised over real TLS and TCP, not a mock.
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TLS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'tls');

export interface ReceivedRequest {
  method: string;
  path: string;
  /** Lower-case names; repeated headers joined with ', '. */
  headers: Record<string, string>;
  /** The body exactly as received, decoded as UTF-8. */
  body: string;
  receivedAt: number;
  /** When the answer was written whole (Date.now()); absent while it is not, or when it never was. */
  answeredAt?: number;
  /** When the exchange ended (answered, or its connection closed by either side); absent while open. */
  closedAt?: number;
}

export type Behaviour =
  | { status?: number; body?: string; headers?: Record<string, string>; delayMs?: number }
  | { hang: true }
  | { reset: true }
  /** The answer written by the test (a trickle, a reset half-way); `reset` sends an RST. */
  | { custom: (res: ServerResponse, reset: () => void) => void };

export interface ReceiverOptions {
  /** Serve a self-signed certificate the test CA did not sign, to test TLS refusal. */
  useUntrustedCert?: boolean;
}

export interface Receiver {
  /** `https://localhost:PORT/path`: the name the certificate covers. */
  url(path?: string): string;
  port: number;
  /** Absolute path of the CA that signed the (trusted) server certificate. */
  caFile: string;
  requests: ReceivedRequest[];
  /** How to answer each request; n is its position in `requests` (1-based). The default answers 200 "ok". */
  respond(fn: (req: ReceivedRequest, n: number) => Behaviour): void;
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Stops at once: hanging and keep-alive sockets are destroyed, not waited for. */
  close(): Promise<void>;
}

export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const name = options.useUntrustedCert ? 'untrusted' : 'server';
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const waiters = new Set<() => void>();
  let behaviour: (req: ReceivedRequest, n: number) => Behaviour = () => ({});

  const server: Server = createServer({
    key: readFileSync(join(TLS_DIR, `${name}-key.pem`)),
    cert: readFileSync(join(TLS_DIR, `${name}.pem`)),
  });
  // The raw TCP socket, kept so a reset can send an RST; TLS sockets cannot be reset themselves.
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
      }
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      };
      requests.push(received);
      res.once('finish', () => {
        received.answeredAt = Date.now();
      });
      res.once('close', () => {
        received.closedAt = Date.now();
      });
      for (const wake of waiters) wake();
      const answer = behaviour(received, requests.length);
      if ('hang' in answer) return;
      const reset = () => {
        const tls = req.socket as Socket & { _parent?: unknown };
        const raw = [...sockets].find((s) => s === tls._parent || s.remotePort === tls.remotePort);
        if (raw) raw.resetAndDestroy();
        else req.socket.destroy();
      };
      if ('reset' in answer) return reset();
      if ('custom' in answer) return answer.custom(res, reset);
      const reply = () => {
        res.writeHead(answer.status ?? 200, {
          'content-type': 'text/plain; charset=utf-8',
          ...answer.headers,
        });
        res.end(answer.body ?? 'ok');
      };
      if (answer.delayMs) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          reply();
        }, answer.delayMs);
        timers.add(timer);
      } else {
        reply();
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: (path = '/') => `https://localhost:${port}${path.startsWith('/') ? path : `/${path}`}`,
    port,
    caFile: join(TLS_DIR, 'ca.pem'),
    requests,
    respond(fn) {
      behaviour = fn;
    },
    waitFor(count, timeoutMs = 2_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (requests.length < count) return;
          cleanup();
          resolve(requests.slice(0, count));
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`the receiver got ${requests.length} of ${count} requests in ${timeoutMs} ms`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      return closed;
    },
  };
}

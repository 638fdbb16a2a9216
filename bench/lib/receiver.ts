// The webhook receiver of the benchmarks: HTTPS on 127.0.0.1 with the test CA's localhost
// certificate (test/fixtures/tls), keep-alive, answering 200 `delayMs` after a body has arrived.
// Each path is one webhook. It records every arrival (performance.now() of this process, the clock
// the feed is timed with) with the delivery id and attempt the sender gave, and counts each
// webhook's requests in flight (from their headers to the answer written, or the connection's end)
// with the most ever seen: the sender's own count can only be larger, so a bound exceeded here was
// exceeded by the sender. Beyond `bound`, what was in flight is kept with each sender's pid.
import { execFileSync } from 'node:child_process';
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

/** A request in flight: its delivery and attempt, since when (performance.now()), and its sender's pid. */
interface Open {
  deliveryId: string;
  attempt: number;
  since: number;
  pid: number | null;
}

/** A request beyond a webhook's bound: what was in flight there. */
export interface Excess {
  at: number;
  path: string;
  open: Open[];
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
    /** Above this many in flight at one path, what was open is kept in `excesses`. */
    bound: Number.POSITIVE_INFINITY,
    excesses: [] as Excess[],
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
  const openByPath = new Map<string, Set<Open & { port: number }>>();
  server.on('request', (req, res) => {
    const path = req.url ?? '';
    const now = (receiver.inFlight.get(path) ?? 0) + 1;
    receiver.inFlight.set(path, now);
    receiver.maxInFlight.set(path, Math.max(now, receiver.maxInFlight.get(path) ?? 0));
    const mine = {
      deliveryId: String(req.headers['x-svc-delivery'] ?? ''),
      attempt: Number(req.headers['x-svc-attempt'] ?? 0),
      since: performance.now(),
      pid: null,
      port: req.socket.remotePort ?? 0,
    };
    const here = openByPath.get(path) ?? new Set();
    openByPath.set(path, here.add(mine));
    if (now > receiver.bound) receiver.excesses.push(excess(path, here));
    // Over once the answer is written, or the connection ends first. The answer's 'close' comes
    // later: TLS reports a write done in a later phase of the loop, after the sender may have read
    // the answer and its next request been read here (a fifth request of one sender whose first
    // answer had left a millisecond before, seen in rebalance runs).
    const over = () => {
      if (!here.delete(mine)) return;
      receiver.inFlight.set(path, (receiver.inFlight.get(path) ?? 1) - 1);
    };
    res.once('close', over);
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
        over();
      };
      if (receiver.delayMs > 0) setTimeout(answer, receiver.delayMs);
      else answer();
    });
  });
  /** The senders' processes, by their sockets' ports (`ss`, this machine's loopback). */
  const excess = (path: string, here: Iterable<Open & { port: number }>): Excess => {
    const pids = new Map<number, number>();
    const port = (server.address() as AddressInfo).port;
    const ss = execFileSync('ss', ['-tnpH', 'state', 'established', `dport = :${port}`], {
      encoding: 'utf8',
    });
    for (const line of ss.split('\n')) {
      const m = /:(\d+)\s+\S+:\d+\s+users:\(\("[^"]*",pid=(\d+)/.exec(line);
      if (m) pids.set(Number(m[1]), Number(m[2]));
    }
    const open = [...here].map(({ port, ...o }) => ({ ...o, pid: pids.get(port) ?? null }));
    return { at: performance.now(), path, open };
  };
  return receiver;
}

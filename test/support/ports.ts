// Ports for processes a test or a benchmark starts (apart from test/support/processes.ts, which
// registers node:test hooks a benchmark must not).
import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';

/**
 * A TCP port free on loopback right now, for a process started next to listen on. Taken below the
 * kernel's ephemeral range (32768 and up on Linux): a port from that range, once released, could
 * be handed to any other process binding port 0 or connecting out before the one it was meant for
 * binds it (seen: a receiver of another test file took `npm start`'s operator port).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = randomInt(10_000, 32_768);
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (!bound) continue;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }
}

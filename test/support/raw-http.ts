// HTTP over a bare socket, for what a client library will not send: trickled headers or bodies,
// oversized headers, bytes that are not HTTP.
import { connect } from 'node:net';

export interface Exchange {
  status: number;
  headers: Record<string, string>;
  /** The body parsed as JSON, or as received when it is not JSON. */
  body: any;
  ms: number;
}

/**
 * Opens a socket to `port` on loopback, writes `head`, then one byte of `trickle` every `everyMs`
 * until the server answers and closes; resolves with the answer and how long it took. Fails after
 * 10 s without a close.
 */
export function exchange(
  port: number,
  head: string | Buffer,
  trickle = '',
  everyMs = 100,
): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let i = 0;
    const timer = setInterval(() => {
      if (i < trickle.length && socket.writable) socket.write(trickle[i++] as string);
    }, everyMs);
    const guard = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within 10 s; got: ${received}`));
    }, 10_000);
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(guard);
      const [top = '', body = ''] = received.split('\r\n\r\n');
      const [statusLine = '', ...lines] = top.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const at = line.indexOf(':');
        headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim();
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = body;
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: parsed, ms: Date.now() - started });
    });
    socket.write(head);
  });
}

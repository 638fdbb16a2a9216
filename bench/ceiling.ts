// The ceiling: a bare node:http server that answers every captured request with the exact bytes the
// API answered (status, headers, body) and does no other work. What the harness can drive through
// it on this machine is the most any Node.js API could reach here.
//
//   node --import tsx bench/ceiling.ts <captures.json> <port>
import { readFileSync } from 'node:fs';
import { createServer, type OutgoingHttpHeaders } from 'node:http';

export interface Capture {
  status: number;
  headers: Record<string, string>;
  /** The body, base64, byte for byte. */
  body: string;
}

/** Headers node:http writes itself; replaying them would duplicate them. */
const OWN_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length']);

interface Prepared {
  status: number;
  headers: OutgoingHttpHeaders;
  body: Buffer;
}

function prepare(capture: Capture): Prepared {
  const body = Buffer.from(capture.body, 'base64');
  const headers: OutgoingHttpHeaders = { 'content-length': body.length };
  for (const [name, value] of Object.entries(capture.headers)) {
    if (!OWN_HEADERS.has(name.toLowerCase())) headers[name] = value;
  }
  return { status: capture.status, headers, body };
}

function main(): void {
  const [file, portText] = process.argv.slice(2);
  if (!file || !portText) throw new Error('usage: ceiling.ts <captures.json> <port>');
  const captures = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Capture>;
  const byUrl = new Map(Object.entries(captures).map(([url, c]) => [url, prepare(c)]));

  const server = createServer((req, res) => {
    const answer = byUrl.get(req.url ?? '');
    if (!answer) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  });
  // Same keep-alive behaviour as Fastify's defaults, so connections are reused the same way.
  server.keepAliveTimeout = 72_000;
  server.listen(Number(portText), '127.0.0.1', () => process.stdout.write('ready\n'));
  process.once('SIGTERM', () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}

main();

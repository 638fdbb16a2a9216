// A process of its own: it measures the process's array buffers.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { after, before, beforeEach, test } from 'node:test';
import { type Receiver, startReceiver } from '../../test/support/https-receiver.js';
import type { Address, Resolver } from '../security/url-guard.js';
import { type Attempt, createSender, judgedStatus, pinnedLookup, type SenderOptions } from './send.js';

const lax = { allowPrivateTargets: true };
// localhost pinned to the address the receiver listens on, whatever the machine's hosts file says.
const loopback: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];

let receiver: Receiver;
let ca: Buffer;
const senders: { close(): Promise<void> }[] = [];

function sender(overrides: Partial<SenderOptions> = {}) {
  const s = createSender({ policy: lax, resolve: loopback, timeoutMs: 5_000, ca, ...overrides });
  senders.push(s);
  return s;
}

function attempt(path = '/hook', body = '{"id":"e1"}'): Attempt {
  return { url: receiver.url(path), headers: { 'content-type': 'application/json' }, body };
}

before(async () => {
  receiver = await startReceiver();
  ca = readFileSync(receiver.caFile);
});
beforeEach(() => {
  receiver.requests.length = 0;
  receiver.respond(() => ({}));
});
after(async () => {
  await Promise.all(senders.map((s) => s.close()));
  await receiver.close();
});

test('a 2xx is a success: the exact bytes and headers arrive', async () => {
  const body = '{"id":"e1","texto":"Café ☕ — ñandú","n":1}';
  const result = await sender().send({
    url: receiver.url('/hook?x=1'),
    headers: {
      'Content-Type': 'application/json',
      'User-Agent': 'SVC-Webhooks/1',
      'X-SVC-Event-Id': 'e1',
      'X-SVC-Signature': 'v1=abc',
      'Content-Length': '1', // ours wins: it must match the bytes that were signed
    },
    body,
  });
  assert.equal(result.status, 200);
  assert.equal(result.error, null);
  assert.equal(result.refused, undefined);
  assert.ok(Number.isInteger(result.durationMs) && result.durationMs >= 0);
  const [got] = await receiver.waitFor(1);
  assert.ok(got);
  assert.equal(got.method, 'POST');
  assert.equal(got.path, '/hook?x=1');
  assert.equal(got.body, body);
  assert.equal(got.headers['content-length'], String(Buffer.byteLength(body)));
  assert.equal(got.headers['content-type'], 'application/json');
  assert.equal(got.headers['user-agent'], 'SVC-Webhooks/1');
  assert.equal(got.headers['x-svc-event-id'], 'e1');
  assert.equal(got.headers['x-svc-signature'], 'v1=abc');
  assert.equal(got.headers.host, `localhost:${receiver.port}`);
});

test('a 500 fails with the status and a clean snippet of the answer', async () => {
  receiver.respond(() => ({ status: 500, body: `boom\r\n\u0000\u001b[31mred ${'x'.repeat(5_000)}` }));
  const result = await sender().send(attempt());
  assert.equal(result.status, 500);
  // The ESC character goes; the printable rest of an ANSI sequence is harmless text.
  const error = String(result.error);
  assert.ok(error.startsWith('HTTP 500: boom [31mred xxx'), error);
  assert.equal(error, `HTTP 500: boom [31mred ${'x'.repeat(200 - 'boom [31mred '.length)}…`);
  assert.doesNotMatch(error, /\p{Cc}/u);

  receiver.respond(() => ({ status: 410, body: '' }));
  assert.equal((await sender().send(attempt())).error, 'HTTP 410');
});

test('a large answer is not read beyond the first KiB', async () => {
  receiver.respond(() => ({ status: 200, body: 'y'.repeat(1_000_000) }));
  const ok = await sender().send(attempt());
  assert.deepEqual([ok.status, ok.error], [200, null]);
  receiver.respond(() => ({ status: 422, body: 'z'.repeat(1_000_000) }));
  const failed = await sender().send(attempt());
  assert.equal(failed.status, 422, String(failed.error));
  assert.equal(failed.error, `HTTP 422: ${'z'.repeat(200)}…`);
});

/** Writes one byte every `everyMs` until the connection closes. */
function trickle(res: ServerResponse, everyMs: number) {
  const timer = setInterval(() => res.write('.'), everyMs);
  res.on('close', () => clearInterval(timer));
}

test('a 200 whose answer trickles past the time-out is a failure, recorded with its status', async () => {
  receiver.respond(() => ({
    custom: (res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      trickle(res, 40);
    },
  }));
  const result = await sender({ timeoutMs: 400 }).send(attempt());
  assert.equal(result.status, 200);
  assert.equal(result.partial, true);
  assert.equal(result.error, 'respuesta 200 incompleta: tiempo de espera agotado (400 ms)');
  assert.equal(judgedStatus(result), null, 'not a success for the retry policy');
  assert.ok(result.durationMs >= 380 && result.durationMs < 3_000, `${result.durationMs} ms`);
});

test('a 200 with a declared length and a reset before the end is a failure, recorded with its status', async () => {
  receiver.respond(() => ({
    custom: (res, reset) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('x'.repeat(10));
      setTimeout(reset, 30);
    },
  }));
  const result = await sender().send(attempt());
  assert.equal(result.status, 200);
  assert.equal(result.partial, true);
  assert.match(String(result.error), /^respuesta 200 incompleta: /);
  assert.equal(judgedStatus(result), null);
});

test('a complete 2xx is judged by its status; a cut answer of another status keeps its status', async () => {
  const ok = await sender().send(attempt());
  assert.equal(judgedStatus(ok), 200);
  receiver.respond(() => ({
    custom: (res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.write('busy');
      trickle(res, 40);
    },
  }));
  const cutShort = await sender({ timeoutMs: 300 }).send(attempt());
  assert.equal(cutShort.status, 503);
  assert.equal(cutShort.partial, undefined);
  assert.equal(judgedStatus(cutShort), 503);
  assert.match(String(cutShort.error), /^HTTP 503: busy/);
});

test('an answer of several MB is read only to 1 MiB, keeping the first KiB', async () => {
  receiver.respond(() => ({ status: 200, body: 'y'.repeat(5_000_000) }));
  const result = await sender().send(attempt());
  assert.deepEqual([result.status, result.error, result.partial], [200, null, undefined]);
});

test('eight answers of 5 MB at once: what the sender holds stays far below their size', async (ctx) => {
  const big = Buffer.alloc(5 * 1024 * 1024, 'y');
  receiver.respond(() => ({
    custom: (res) => {
      res.writeHead(200, { 'content-length': String(big.length) });
      res.end(big);
    },
  }));
  const base = process.memoryUsage().arrayBuffers;
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().arrayBuffers - base);
  }, 2);
  try {
    const s = sender();
    const results = await Promise.all(Array.from({ length: 8 }, () => s.send(attempt())));
    for (const r of results) assert.deepEqual([r.status, r.error], [200, null]);
  } finally {
    clearInterval(sampler);
  }
  ctx.diagnostic(`peak growth of array buffers: ${(peak / 1024 / 1024).toFixed(1)} MiB for 40 MiB answered`);
  // Reading them whole would hold 40 MiB; keeping even the 1 MiB read of each, 8 MiB.
  assert.ok(peak < 4 * 1024 * 1024, `${peak} bytes`);
});

test('a redirect is not followed', async () => {
  receiver.respond(() => ({ status: 302, headers: { location: 'https://169.254.169.254/latest' } }));
  const result = await sender().send(attempt());
  assert.equal(result.status, 302);
  assert.equal(result.error, 'redirección no seguida (302 a https://169.254.169.254/latest)');
  assert.equal(receiver.requests.length, 1);
});

test('a receiver that hangs times out within the attempt time-out', async () => {
  receiver.respond(() => ({ hang: true }));
  const result = await sender({ timeoutMs: 300 }).send(attempt());
  assert.equal(result.status, null);
  assert.equal(result.error, 'tiempo de espera agotado (300 ms)');
  assert.ok(result.durationMs >= 250 && result.durationMs < 1_500, `${result.durationMs} ms`);
});

test('an answer slower than the time-out is a time-out too', async () => {
  receiver.respond(() => ({ status: 503, delayMs: 1_000 }));
  const result = await sender({ timeoutMs: 300 }).send(attempt());
  assert.equal(result.status, null);
  assert.equal(result.error, 'tiempo de espera agotado (300 ms)');
});

test('a reset connection is a network error', async () => {
  receiver.respond(() => ({ reset: true }));
  const result = await sender().send(attempt());
  assert.equal(result.status, null);
  assert.equal(result.error, 'conexión reiniciada (ECONNRESET)');
});

test('a certificate the CA did not sign is refused', async () => {
  const untrusted = await startReceiver({ useUntrustedCert: true });
  try {
    const result = await sender().send({ url: untrusted.url('/hook'), headers: {}, body: '{}' });
    assert.equal(result.status, null);
    assert.match(
      String(result.error),
      /^certificado TLS no válido \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED)/,
    );
    assert.equal(untrusted.requests.length, 0);
  } finally {
    await untrusted.close();
  }
});

test('without the extra CA the test certificate is not trusted', async () => {
  const result = await sender({ ca: null }).send(attempt());
  assert.match(String(result.error), /^certificado TLS no válido/);
  assert.equal(receiver.requests.length, 0);
});

test('with private targets not allowed, loopback is refused before connecting', async () => {
  const strict = sender({ policy: { allowPrivateTargets: false } });
  // The receiver's own url: refused for its port before any resolution.
  const own = await strict.send(attempt());
  assert.equal(own.status, null);
  assert.equal(own.refused, 'port');
  assert.equal(own.error, 'destino no permitido: la url debe usar el puerto 443.');
  const named = await strict.send({ url: 'https://localhost/hook', headers: {}, body: '{}' });
  assert.equal(named.refused, 'not_public');
  assert.equal(named.error, 'destino no permitido: la dirección 127.0.0.1 (de localhost) no es pública.');
  for (const url of [
    'https://127.0.0.1/',
    'https://[::1]/',
    'https://0x7f.1/',
    'https://[::ffff:127.0.0.1]/',
  ]) {
    assert.equal((await strict.send({ url, headers: {}, body: '' })).refused, 'not_public', url);
  }
  assert.equal(
    (await strict.send({ url: 'http://example.com/', headers: {}, body: '' })).refused,
    'not_https',
  );
  assert.equal(receiver.requests.length, 0);
});

test('the pinned address is dialled but the certificate is checked against the name', async () => {
  let calls = 0;
  const resolve: Resolver = async () => {
    calls++;
    return [{ address: '127.0.0.1', family: 4 }];
  };
  const result = await sender({ resolve }).send({
    url: `https://hooks.test:${receiver.port}/hook`,
    headers: {},
    body: '{}',
  });
  assert.equal(result.status, null);
  assert.equal(result.error, 'el certificado TLS no corresponde a hooks.test (ERR_TLS_CERT_ALTNAME_INVALID)');
  assert.equal(calls, 1);
  assert.equal(receiver.requests.length, 0);
});

test('the resolver is asked once per attempt: the connection uses the answer that was vetted', async () => {
  const answers: Address[][] = [
    [{ address: '127.0.0.1', family: 4 }],
    [{ address: '192.0.2.1', family: 4 }], // TEST-NET-1: nothing answers there
  ];
  let calls = 0;
  const rebinding: Resolver = async () => answers[Math.min(calls++, answers.length - 1)] ?? [];
  // A fresh sender each time, so each attempt opens a new connection and needs a lookup.
  const first = await sender({ resolve: rebinding }).send(attempt());
  assert.equal(first.status, 200);
  assert.equal(calls, 1, 'the socket lookup did not resolve again');
  const second = await sender({ resolve: rebinding, timeoutMs: 500 }).send(attempt());
  assert.equal(calls, 2);
  assert.equal(second.status, null);
  assert.equal(receiver.requests.length, 1, 'the second attempt went to its own vetted address');
});

test('a lookup for a host that was not vetted fails instead of resolving', async () => {
  const lookup = pinnedLookup(new Map([['hooks.test', [{ address: '203.0.113.5', family: 4 }]]]));
  const ask = (host: string, options: { all?: boolean; family?: number }) =>
    new Promise<unknown>((resolve) =>
      lookup(host, options, (err, address, family) => resolve({ err, address, family })),
    );
  assert.deepEqual(await ask('hooks.test', {}), { err: null, address: '203.0.113.5', family: 4 });
  assert.deepEqual(await ask('hooks.test', { all: true }), {
    err: null,
    address: [{ address: '203.0.113.5', family: 4 }],
    family: undefined,
  });
  const missing = (await ask('example.com', {})) as { err: NodeJS.ErrnoException };
  assert.equal(missing.err.code, 'ENOTFOUND');
  const wrongFamily = (await ask('hooks.test', { family: 6 })) as { err: NodeJS.ErrnoException };
  assert.equal(wrongFamily.err.code, 'ENOTFOUND');
});

test('the default resolver answers localhost without DNS, end to end', async () => {
  const result = await sender({ resolve: undefined }).send(attempt());
  assert.equal(result.status, 200);
});

test('a busy event loop does not make a host with several addresses time out', async () => {
  // localhost as DNS often gives it: the receiver's IPv4 address first, then ::1 where nothing
  // listens. Each address is tried for a while before the next is tried beside it, a while counted
  // by timers: an event loop that stalls right after the connection started (400 ms here, as a
  // busy worker may) must not make it run out before the connection's answer is read.
  const stall = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  };
  const both: Resolver = async () => {
    setImmediate(() => stall(400));
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  };
  const result = await sender({ resolve: both }).send(attempt('/stalled'));
  assert.equal(result.error, null);
  assert.equal(result.status, 200);
});

// The ceiling of webhook delivery: a plain undici Pool, in a process of its own as the delivery
// worker is, POSTing captured delivery requests (headers and bodies as the worker sent them) to the
// same receiver at the same concurrency, with nothing else to do. Prints one JSON line.
//
//   node --import tsx bench/webhook-ceiling.ts <captures.json> <origin> <ca.pem> <concurrency> <seconds> <warmup>
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { Pool } from 'undici';

interface Capture {
  path: string;
  headers: Record<string, string>;
  body: string;
}

const [file, origin, caFile, concurrencyArg, secondsArg, warmupArg] = process.argv.slice(2);
if (!file || !origin || !caFile)
  throw new Error('usage: webhook-ceiling.ts captures.json origin ca.pem c s w');
const captures = (JSON.parse(readFileSync(file, 'utf8')) as Capture[]).map((c) => ({
  ...c,
  body: Buffer.from(c.body, 'utf8'),
}));
const concurrency = Number(concurrencyArg);
const seconds = Number(secondsArg);
const warmup = Number(warmupArg);
if (captures.length === 0) throw new Error('no captured deliveries');

const pool = new Pool(origin, {
  connections: concurrency,
  connect: { ca: [...rootCertificates, readFileSync(caFile, 'utf8')] },
});

async function send(): Promise<boolean> {
  const c = captures[next++ % captures.length] as (typeof captures)[number];
  try {
    const res = await pool.request({
      path: c.path,
      method: 'POST',
      headers: { ...c.headers, 'content-length': String(c.body.length) },
      body: c.body,
    });
    await res.body.dump();
    return res.statusCode === 200;
  } catch {
    return false;
  }
}

let next = 0;
// Every connection opened (TLS handshakes) before the clock starts: on a busy machine they can take
// longer than the warm-up.
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    for (let i = 0; i < 3; i++) await send();
  }),
);
const start = performance.now();
const measureFrom = start + warmup * 1000;
const end = measureFrom + seconds * 1000;
const latencies: number[] = [];
let failures = 0;

async function lane(): Promise<void> {
  for (;;) {
    const began = performance.now();
    if (began >= end) return;
    const ok = await send();
    if (!ok) failures++;
    const done = performance.now();
    if (began >= measureFrom && done <= end) latencies.push(done - began);
  }
}

await Promise.all(Array.from({ length: concurrency }, lane));
await pool.close();
latencies.sort((a, b) => a - b);
const q = (p: number) =>
  Math.round((latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0) * 10) / 10;
process.stdout.write(
  `${JSON.stringify({
    requests: latencies.length,
    seconds,
    requestsPerSecond: Math.round(latencies.length / seconds),
    latencyMs: { p50: q(0.5), p99: q(0.99) },
    failures,
    bodies: captures.length,
    bodyBytes: Math.round(captures.reduce((s, c) => s + c.body.length, 0) / captures.length),
  })}\n`,
);

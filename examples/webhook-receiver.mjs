#!/usr/bin/env node
// An example webhook receiver for the SVC Integration API, in plain Node (no framework):
//
//   - serves HTTPS (webhooks are https only) and verifies every delivery with verifyWebhook from
//     @svc/integration-client before reading it;
//   - deduplicates by X-SVC-Event-Id: the ids it has processed are kept in a JSON state file, so a
//     retry or a delivery that arrives twice is acknowledged and ignored, across restarts too;
//   - on start reconciles through the event log, as the contract recommends: walks GET /events
//     from the newest event down to the last one it reconciled, and reads each booking named by
//     an event it has not processed with GET /bookings/{resource.id};
//   - without SVC_WEBHOOK_SECRET it registers itself as a webhook of the key's integration (once;
//     the secret, shown only at creation, is kept in the state file) and asks for a test delivery.
//
// Run it (Node >= 20.19), for the local demo of `npm start`:
//   node --env-file=data/demo.env examples/webhook-receiver.mjs
//
// Environment:
//   SVC_BASE_URL         the API, default http://localhost:8080/api/v1
//   SVC_API_KEY          a key with bookings:read, events:read, webhooks:read, webhooks:write
//   SVC_WEBHOOK_SECRET   the secret of an existing webhook pointing here; omit to self-register
//   RECEIVER_PORT        default 8443
//   RECEIVER_HOST        the address to listen on, default 127.0.0.1
//   RECEIVER_URL         the url to register, default https://localhost:RECEIVER_PORT/webhooks
//                        (set it to a public https address that reaches this port, e.g. a tunnel)
//   RECEIVER_STATE       the state file, default data/webhook-receiver.json
//   RECEIVER_TLS_CERT, RECEIVER_TLS_KEY  default examples/tls/localhost.pem and -key.pem (a
//                        localhost certificate the local demo trusts); RECEIVER_TLS=off serves
//                        plain HTTP, for a tunnel that terminates TLS in front of it
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { verifyWebhook, WebhookVerificationError } from '@svc/integration-client';

const here = dirname(fileURLToPath(import.meta.url));
const env = process.env;
const BASE_URL = (env.SVC_BASE_URL || 'http://localhost:8080/api/v1').replace(/\/+$/, '');
const API_KEY = env.SVC_API_KEY;
const PORT = Number(env.RECEIVER_PORT || 8443);
const HOST = env.RECEIVER_HOST || '127.0.0.1';
const TLS = env.RECEIVER_TLS !== 'off';
const PATH = '/webhooks';
const URL_TO_REGISTER = env.RECEIVER_URL || `https://localhost:${PORT}${PATH}`;
const STATE_FILE = env.RECEIVER_STATE || 'data/webhook-receiver.json';
const MAX_BODY_BYTES = 1024 * 1024;
/** Processed event ids remembered; older ones are older than any retry. */
const MAX_SEEN = 10_000;

if (!API_KEY) {
  console.error('SVC_API_KEY is required (for the local demo: node --env-file=data/demo.env …)');
  process.exit(2);
}

const log = (line) => console.log(`${new Date().toISOString().slice(11, 23)} ${line}`);

// --- state: the webhook we registered, the ids we processed, where reconciliation stopped -------

/** @type {{ webhook: { id: string, url: string, secret: string } | null, lastEventId: string | null, seen: string[] }} */
let state = { webhook: null, lastEventId: null, seen: [] };
let seen = new Set();

async function loadState() {
  try {
    state = { ...state, ...JSON.parse(await readFile(STATE_FILE, 'utf8')) };
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
  }
  seen = new Set(state.seen);
}

let saving = Promise.resolve();
/** Written whole to a temporary file, then renamed: a crash never leaves half a file. Owner-only: it holds the secret. */
function saveState() {
  state.seen = [...seen].slice(-MAX_SEEN);
  const text = JSON.stringify(state, null, 2);
  saving = saving.then(async () => {
    await mkdir(dirname(STATE_FILE), { recursive: true });
    const tmp = `${STATE_FILE}.${process.pid}.tmp`;
    await writeFile(tmp, text, { mode: 0o600 });
    await rename(tmp, STATE_FILE);
  });
  return saving;
}

/** Marks an event processed; false when it already was. */
function firstTime(eventId) {
  if (seen.has(eventId)) return false;
  seen.add(eventId);
  if (seen.size > MAX_SEEN) seen.delete(seen.values().next().value);
  return true;
}

// --- the API ---------------------------------------------------------------------------------------

/** One call, retried on 429 (after Retry-After) and on 5xx or network errors, a few times. */
async function api(method, path, body) {
  for (let attempt = 1; ; attempt += 1) {
    let res;
    try {
      res = await fetch(`${BASE_URL}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${API_KEY}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      if (attempt >= 4) throw error;
      await sleep(500 * attempt);
      continue;
    }
    if ((res.status === 429 || res.status >= 500) && attempt < 4) {
      await sleep(Number(res.headers.get('retry-after') || attempt) * 1000);
      continue;
    }
    const text = await res.text();
    const json = text ? JSON.parse(text) : null;
    return { status: res.status, body: json };
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function fail(what, res) {
  const error = res.body?.error;
  return new Error(`${what}: HTTP ${res.status} ${error ? `${error.code}: ${error.message}` : ''}`);
}

// --- processing ------------------------------------------------------------------------------------

/** What this receiver does with a booking; a real one would update its own system here. */
function describe(booking) {
  if (!booking) return 'no longer visible';
  return `booking ${booking.reference ?? booking.id} ${booking.status}`;
}

/** Walks the log from the newest event down to the last reconciled one and reads what it missed. */
async function reconcile() {
  const stopAt = state.lastEventId;
  let newest = null;
  let cursor = null;
  const missed = [];
  let reachedBookmark = stopAt === null;
  walk: for (;;) {
    const query = new URLSearchParams({ limit: '100', ...(cursor ? { cursor } : {}) });
    const res = await api('GET', `/events?${query}`);
    if (res.status !== 200) throw fail('GET /events', res);
    for (const event of res.body.data) {
      newest ??= event.id;
      if (event.id === stopAt) {
        reachedBookmark = true;
        break walk;
      }
      // The first start has no bookmark: it starts from the newest event, it does not replay the log.
      if (stopAt === null) break walk;
      if (!seen.has(event.id)) missed.push(event);
    }
    cursor = res.body.next_cursor;
    if (!cursor) break;
  }
  if (!reachedBookmark) {
    log(
      `reconcile: the last reconciled event ${stopAt} is no longer in the log (kept 30 days); ` +
        'run examples/mirror-bookings.mjs for a full copy',
    );
  }
  // Oldest first, each booking read once: its current state answers every event about it.
  const read = new Map();
  for (const event of missed.reverse()) {
    const id = event.resource.id;
    if (!read.has(id)) {
      const res = await api('GET', `/bookings/${id}`);
      if (res.status !== 200 && res.status !== 404) throw fail(`GET /bookings/${id}`, res);
      read.set(id, res.status === 200 ? res.body : null);
    }
    firstTime(event.id);
    log(`reconciled ${event.type} ${event.id} ${describe(read.get(id))}`);
  }
  if (newest) state.lastEventId = newest;
  await saveState();
  log(
    stopAt === null
      ? `reconcile: first start, the log is followed from event ${newest ?? '(none yet)'}`
      : `reconcile: ${missed.length} missed event(s), ${read.size} booking(s) read, down to ${stopAt}`,
  );
}

/** The secret to verify with: given, or that of the webhook this receiver registered. */
async function ensureWebhook() {
  if (env.SVC_WEBHOOK_SECRET) return { secret: env.SVC_WEBHOOK_SECRET, id: null };
  if (state.webhook && state.webhook.url === URL_TO_REGISTER) {
    const res = await api('GET', `/webhooks/${state.webhook.id}`);
    if (res.status === 200) {
      log(`webhook ${state.webhook.id} -> ${URL_TO_REGISTER}`);
      return state.webhook;
    }
    if (res.status !== 404) throw fail('GET /webhooks/{id}', res);
  }
  // A webhook's secret is shown once: one left at this url by an earlier state file is replaced.
  const list = await api('GET', '/webhooks');
  if (list.status !== 200) throw fail('GET /webhooks', list);
  for (const old of list.body.data.filter((w) => w.url === URL_TO_REGISTER)) {
    await api('DELETE', `/webhooks/${old.id}`);
  }
  const created = await api('POST', '/webhooks', {
    url: URL_TO_REGISTER,
    events: ['*'],
    description: 'examples/webhook-receiver.mjs',
  });
  if (created.status !== 201) throw fail('POST /webhooks', created);
  state.webhook = { id: created.body.id, url: created.body.url, secret: created.body.secret };
  await saveState();
  log(`registered webhook ${state.webhook.id} -> ${URL_TO_REGISTER} (secret kept in ${STATE_FILE})`);
  return state.webhook;
}

// --- the server ------------------------------------------------------------------------------------

let secret = null;

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(Object.assign(new Error('body too large'), { status: 413 }));
        req.destroy();
      } else {
        chunks.push(chunk);
      }
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

async function handle(req, res) {
  const reply = (status, text) => {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(text);
  };
  if (req.method !== 'POST' || new URL(req.url, 'http://x').pathname !== PATH) return reply(404, 'not found');
  // Not ready to verify yet: the service retries later.
  if (!secret) return reply(503, 'starting');
  let raw;
  try {
    raw = await readBody(req);
  } catch (error) {
    return reply(error.status ?? 400, error.message);
  }
  let event;
  try {
    // The raw bytes, before any JSON parsing: that is what was signed.
    event = verifyWebhook(raw, req.headers, secret);
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error;
    log(`refused (${error.reason}) ${req.headers['x-svc-event-id'] ?? '-'}: ${error.message}`);
    return reply(400, error.reason);
  }
  const eventId = req.headers['x-svc-event-id'] ?? event.id;
  if (!firstTime(eventId)) {
    log(`duplicate ${event.type} ${eventId} (attempt ${req.headers['x-svc-attempt']}): already processed`);
    return reply(200, 'duplicate');
  }
  // Recorded before answering: once the service has its 2xx it will not send this event again.
  await saveState();
  reply(200, 'ok');
  log(
    `verified ${event.type} ${eventId} ${event.type === 'webhook.test' ? 'test delivery' : describe(event.data)}`,
  );
}

await loadState();
const server = TLS
  ? createHttpsServer({
      cert: readFileSync(env.RECEIVER_TLS_CERT || join(here, 'tls', 'localhost.pem')),
      key: readFileSync(env.RECEIVER_TLS_KEY || join(here, 'tls', 'localhost-key.pem')),
    })
  : createHttpServer();
server.on('request', (req, res) =>
  handle(req, res).catch((error) => {
    log(`error: ${error.stack ?? error}`);
    if (!res.headersSent) res.writeHead(500).end();
  }),
);
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(PORT, HOST, resolve);
});
log(`listening on ${TLS ? 'https' : 'http'}://${HOST}:${PORT}${PATH} for ${BASE_URL}`);

const stop = async () => {
  log('stopping');
  server.close();
  server.closeAllConnections?.();
  await saving;
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

try {
  const webhook = await ensureWebhook();
  secret = webhook.secret;
  await reconcile();
  if (webhook.id) {
    const test = await api('POST', `/webhooks/${webhook.id}/test`);
    if (test.status === 202) log(`asked for a test delivery (event ${test.body.event_id})`);
    else log(`test delivery not sent: HTTP ${test.status} ${test.body?.error?.code ?? ''}`);
  }
} catch (error) {
  log(`error: ${error.message}`);
  process.exit(1);
}

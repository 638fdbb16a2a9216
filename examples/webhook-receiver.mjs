#!/usr/bin/env node
// An example webhook receiver for the SVC Integration API that keeps a local copy of every booking
// current, in plain Node (no framework):
//
//   - a full walk of GET /bookings once (the first start, or when its bookmark has left the log),
//     into data/bookings.json, the file examples/mirror-bookings.mjs writes;
//   - then webhooks: each delivery is verified with verifyWebhook from @svc/integration-client
//     before it is read, and its booking (`data`, the booking as the change left it) goes into the
//     copy unless the copy already reflects a later event of that booking (deliveries are
//     concurrent and may arrive out of order);
//   - then the event log after any gap: at start and every RECEIVER_RECONCILE_SECONDS it walks
//     GET /events from the newest event down to its bookmark and reads each booking named by an
//     event it has not processed. The bookmark moves to the newest event of each pass and is saved
//     with the copy, in the same file, so the copy and its bookmark always agree: a restart after
//     hours walks back only to the last pass, not the whole log;
//   - deliveries are deduplicated by X-SVC-Event-Id: the ids processed in the last
//     RECEIVER_DEDUP_MINUTES (longer than the service's retries, about 70 minutes) are kept in a
//     state file, older ones are forgotten (a late repeat would change nothing anyway);
//   - without SVC_WEBHOOK_SECRET it registers itself as a webhook of the key's integration (once;
//     the secret, shown only at creation, is kept in the state file) and asks for a test delivery;
//   - at start it checks that its webhook is active; a deactivated one (paused, or after repeated
//     failures) receives nothing, which it says, and `--reactivate` turns it back on.
//
// Run it (Node >= 20.19), for the local demo of `npm start`:
//   node --env-file=data/demo.env examples/webhook-receiver.mjs [--reactivate]
//
// Environment:
//   SVC_BASE_URL         the API, default http://localhost:8080/api/v1
//   SVC_API_KEY          a key with bookings:read, events:read, webhooks:read, webhooks:write
//   SVC_WEBHOOK_SECRET   the secret of an existing webhook pointing here, or the one
//                        `npx @svc/integration-client listen` printed; omit to self-register
//   RECEIVER_PORT        default 8443
//   RECEIVER_HOST        the address to listen on, default 127.0.0.1
//   RECEIVER_URL         the url to register, default https://localhost:RECEIVER_PORT/webhooks
//                        (set it to a public https address that reaches this port, e.g. a tunnel)
//   RECEIVER_STATE       the state file (webhook, secret, recent event ids), default
//                        data/webhook-receiver.json
//   MIRROR_FILE          the copy of the bookings and its bookmark, default data/bookings.json
//   RECEIVER_RECONCILE_SECONDS  between two walks of the event log, default 30
//   RECEIVER_DEDUP_MINUTES      how long a processed event id is remembered, default 180
//   RECEIVER_TLS_CERT, RECEIVER_TLS_KEY  default examples/tls/localhost.pem and -key.pem (a
//                        localhost certificate the local demo trusts); RECEIVER_TLS=off serves
//                        plain HTTP, for a tunnel that terminates TLS in front of it
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { verifyWebhook, WebhookVerificationError } from '@svc/integration-client';
import { apiClient, apiError, fullCopy, readMirror, writeMirror } from './mirror-bookings.mjs';

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
const MIRROR_FILE = env.MIRROR_FILE || 'data/bookings.json';
const RECONCILE_MS = Number(env.RECEIVER_RECONCILE_SECONDS || 30) * 1000;
const DEDUP_MS = Number(env.RECEIVER_DEDUP_MINUTES || 180) * 60_000;
const MAX_BODY_BYTES = 1024 * 1024;

let options;
try {
  ({ values: options } = parseArgs({ options: { reactivate: { type: 'boolean', default: false } } }));
} catch (error) {
  console.error(
    `${error.message}\nUsage: node --env-file=data/demo.env examples/webhook-receiver.mjs [--reactivate]`,
  );
  process.exit(2);
}
if (!API_KEY) {
  console.error('SVC_API_KEY is required (for the local demo: node --env-file=data/demo.env …)');
  process.exit(2);
}

const log = (line) => console.log(`${new Date().toISOString().slice(11, 23)} ${line}`);
const api = apiClient(BASE_URL, API_KEY);

// --- what is kept ----------------------------------------------------------------------------------

/** The state file: the webhook we registered and the event ids processed recently (id -> ms). */
const state = { webhook: null, seen: {} };
/** The copy: bookings by id, and per booking the newest event it reflects (`created_at id`). */
const bookings = new Map();
const asOf = new Map();
/** The newest event of the log whose change, and every older one's, is in the copy; undefined: no copy yet. */
let lastEventId;
/** Per booking, a counter of the deliveries applied to it: a read that raced one is not trusted. */
const touched = new Map();
let ticks = 0;

async function load() {
  try {
    const saved = JSON.parse(await readFile(STATE_FILE, 'utf8'));
    state.webhook = saved.webhook ?? null;
    // A state file of an earlier version kept a list of ids: they are simply forgotten.
    if (saved.seen && !Array.isArray(saved.seen)) state.seen = saved.seen;
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
  }
  const mirror = await readMirror(MIRROR_FILE);
  // A copy without a bookmark (an older file) cannot be brought up to date: it is made again.
  if (mirror && mirror.last_event_id !== undefined) {
    for (const booking of mirror.bookings) bookings.set(booking.id, booking);
    for (const [id, key] of Object.entries(mirror.as_of ?? {})) asOf.set(id, key);
    lastEventId = mirror.last_event_id;
  }
}

/** Forgets event ids older than the dedup window, and the marks of bookings gone for as long. */
function prune() {
  const horizon = Date.now() - DEDUP_MS;
  for (const [id, at] of Object.entries(state.seen)) if (at < horizon) delete state.seen[id];
  const oldest = new Date(horizon).toISOString();
  for (const [id, key] of asOf) if (!bookings.has(id) && key < oldest) asOf.delete(id);
}

async function writeAll() {
  prune();
  // The copy first: an event is marked processed only once its change is on disk.
  await writeMirror(MIRROR_FILE, {
    bookings: [...bookings.values()],
    lastEventId: lastEventId ?? null,
    asOf: Object.fromEntries(asOf),
  });
  await mkdir(dirname(STATE_FILE), { recursive: true });
  const tmp = `${STATE_FILE}.${process.pid}.tmp`;
  // Owner-only: it holds the webhook's secret.
  await writeFile(tmp, JSON.stringify(state, null, 2), { mode: 0o600 });
  await rename(tmp, STATE_FILE);
}

/**
 * Saves both files; resolves once a write that began after the call has finished. Calls made
 * while a write runs share the next one, so a burst of deliveries costs two writes, not one each.
 */
let waiting = null;
let writing = false;
function persist() {
  return new Promise((resolve, reject) => {
    waiting ??= [];
    waiting.push({ resolve, reject });
    if (!writing) void drain();
  });
}
async function drain() {
  writing = true;
  while (waiting) {
    const batch = waiting;
    waiting = null;
    try {
      await writeAll();
      for (const w of batch) w.resolve();
    } catch (error) {
      for (const w of batch) w.reject(error);
    }
  }
  writing = false;
}

// --- the copy --------------------------------------------------------------------------------------

const eventKey = (event) => `${event.created_at} ${event.id}`;

function describe(booking) {
  if (!booking) return 'no longer visible';
  return `booking ${booking.reference ?? booking.id} ${booking.status}`;
}

/** A delivered event into the copy, unless the copy already reflects a later event of its booking. */
function applyEvent(event) {
  const id = event.resource.id;
  const key = eventKey(event);
  if ((asOf.get(id) ?? '') >= key) return false;
  asOf.set(id, key);
  ticks += 1;
  touched.set(id, ticks);
  // `data` is null for an executor that lost the booking; a deleted booking leaves the copy.
  if (event.data && event.type !== 'booking.deleted') bookings.set(id, event.data);
  else bookings.delete(id);
  return true;
}

/** The booking as it is now into the copy; read again when a delivery changed it meanwhile. */
async function readBooking(id, key) {
  for (;;) {
    const before = touched.get(id);
    const res = await api('GET', `/bookings/${id}`);
    if (res.status !== 200 && res.status !== 404) throw apiError(`GET /bookings/${id}`, res);
    if (touched.get(id) !== before) continue;
    if (res.status === 200) bookings.set(id, res.body);
    else bookings.delete(id);
    if ((asOf.get(id) ?? '') < key) asOf.set(id, key);
    return res.status === 200 ? res.body : null;
  }
}

/** The first start, or a bookmark gone from the log: every booking, from the list. */
async function copyAll(why) {
  const mark = ticks;
  const copy = await fullCopy(api);
  // A booking a delivery changed during the walk keeps what the delivery brought.
  const fresh = (id) => (touched.get(id) ?? 0) > mark;
  for (const id of bookings.keys()) if (!fresh(id)) bookings.delete(id);
  for (const booking of copy.bookings) if (!fresh(booking.id)) bookings.set(booking.id, booking);
  lastEventId = copy.lastEventId;
  await persist();
  log(
    `full copy (${why}): ${copy.bookings.length} bookings in ${copy.pages} page(s) to ${MIRROR_FILE}, ` +
      `followed from event ${lastEventId ?? '(none yet)'}`,
  );
}

/**
 * Walks the log from the newest event down to the bookmark and reads every booking named by an
 * event not processed yet. `quiet`: say nothing when nothing was missed (the periodic passes).
 */
async function reconcile(quiet) {
  const stopAt = lastEventId;
  let newest = null;
  let cursor = null;
  let reached = stopAt === null;
  const missed = [];
  walk: for (;;) {
    const query = new URLSearchParams({ limit: '100', ...(cursor ? { cursor } : {}) });
    const res = await api('GET', `/events?${query}`);
    if (res.status !== 200) throw apiError('GET /events', res);
    for (const event of res.body.data) {
      newest ??= event.id;
      if (event.id === stopAt) {
        reached = true;
        break walk;
      }
      if (!(event.id in state.seen)) missed.push(event);
    }
    cursor = res.body.next_cursor;
    if (!cursor) break;
  }
  if (!reached) {
    log(`reconcile: the bookmark ${stopAt} is no longer in the log (kept 30 days): copying everything again`);
    await copyAll('bookmark gone');
    return;
  }
  // Oldest first, each booking read once: its current state answers every event about it.
  const newestFor = new Map();
  for (const event of missed.reverse()) newestFor.set(event.resource.id, event);
  for (const [id, event] of newestFor) {
    const booking = await readBooking(id, eventKey(event));
    log(`reconciled ${event.type} ${event.id} ${describe(booking)}`);
  }
  const now = Date.now();
  for (const event of missed) state.seen[event.id] = now;
  if (newest) lastEventId = newest;
  await persist();
  if (!quiet || missed.length > 0) {
    log(
      `reconcile: ${missed.length} missed event(s), ${newestFor.size} booking(s) read, ` +
        `down to ${stopAt ?? '(the start of the log)'}`,
    );
  }
}

/** One pass at a time, the next RECONCILE_MS after the end of the previous. */
let timer = null;
let passing = Promise.resolve();
function reconcileNow(quiet) {
  passing = passing.catch(() => {}).then(() => reconcile(quiet));
  return passing;
}
function schedule() {
  timer = setTimeout(() => {
    reconcileNow(true)
      .catch((error) => log(`reconcile failed, tried again in ${RECONCILE_MS / 1000} s: ${error.message}`))
      .finally(schedule);
  }, RECONCILE_MS);
  timer.unref();
}

// --- the webhook -----------------------------------------------------------------------------------

/** The webhook to verify with: given (its id looked up by url), or the one this receiver registered. */
async function ensureWebhook() {
  if (env.SVC_WEBHOOK_SECRET) {
    const list = await api('GET', '/webhooks');
    if (list.status !== 200) throw apiError('GET /webhooks', list);
    const found = list.body.data.find((w) => w.url === URL_TO_REGISTER);
    return { id: found?.id ?? null, secret: env.SVC_WEBHOOK_SECRET };
  }
  if (state.webhook && state.webhook.url === URL_TO_REGISTER) {
    const res = await api('GET', `/webhooks/${state.webhook.id}`);
    if (res.status === 200) {
      log(`webhook ${state.webhook.id} -> ${URL_TO_REGISTER}`);
      return state.webhook;
    }
    if (res.status !== 404) throw apiError('GET /webhooks/{id}', res);
  }
  // A webhook's secret is shown once: one left at this url by an earlier state file is replaced.
  const list = await api('GET', '/webhooks');
  if (list.status !== 200) throw apiError('GET /webhooks', list);
  for (const old of list.body.data.filter((w) => w.url === URL_TO_REGISTER)) {
    await api('DELETE', `/webhooks/${old.id}`);
  }
  const created = await api('POST', '/webhooks', {
    url: URL_TO_REGISTER,
    events: ['*'],
    description: 'examples/webhook-receiver.mjs',
  });
  if (created.status !== 201) throw apiError('POST /webhooks', created);
  state.webhook = { id: created.body.id, url: created.body.url, secret: created.body.secret };
  await persist();
  log(`registered webhook ${state.webhook.id} -> ${URL_TO_REGISTER} (secret kept in ${STATE_FILE})`);
  return state.webhook;
}

/** A deactivated webhook receives nothing: say so, and turn it back on when asked to. */
async function checkActive(id) {
  const res = await api('GET', `/webhooks/${id}`);
  if (res.status !== 200) throw apiError(`GET /webhooks/${id}`, res);
  const webhook = res.body;
  if (webhook.active) return;
  const why = `${webhook.disabled_reason ?? 'deactivated'} since ${webhook.disabled_at ?? '?'}`;
  if (!options.reactivate) {
    log(
      `WEBHOOK INACTIVE: webhook ${id} is deactivated (${why}). The service sends it no deliveries; ` +
        `the copy is kept from GET /events every ${RECONCILE_MS / 1000} s meanwhile. ` +
        'To reactivate it, start this receiver again with --reactivate',
    );
    return;
  }
  const patched = await api('PATCH', `/webhooks/${id}`, { active: true });
  if (patched.status !== 200) throw apiError(`PATCH /webhooks/${id}`, patched);
  log(`reactivated webhook ${id} (it was ${why}); what happened meanwhile comes from GET /events`);
}

// --- the server ------------------------------------------------------------------------------------

let secret = null;
/** Deliveries are taken once the copy is up to date; before, 503 (the service retries). */
let ready = false;

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
  if (!ready) return reply(503, 'starting');
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
  if (event.type === 'webhook.test') {
    reply(200, 'ok');
    log(`verified webhook.test ${eventId} test delivery`);
    return;
  }
  if (eventId in state.seen) {
    log(`duplicate ${event.type} ${eventId} (attempt ${req.headers['x-svc-attempt']}): already processed`);
    return reply(200, 'duplicate');
  }
  const applied = event.resource?.type === 'booking' && applyEvent(event);
  state.seen[eventId] = Date.now();
  // On disk before answering: once the service has its 2xx it will not send this event again.
  await persist();
  reply(200, 'ok');
  log(
    `verified ${event.type} ${eventId} ${describe(event.data)}${applied ? '' : ' (the copy already has a later change)'}`,
  );
}

await load();
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
  clearTimeout(timer);
  server.close();
  server.closeAllConnections?.();
  await persist();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

try {
  const webhook = await ensureWebhook();
  secret = webhook.secret;
  if (webhook.id) await checkActive(webhook.id);
  if (lastEventId === undefined) await copyAll('first start');
  await reconcileNow(false);
  ready = true;
  schedule();
  if (webhook.id) {
    const test = await api('POST', `/webhooks/${webhook.id}/test`);
    if (test.status === 202) log(`asked for a test delivery (event ${test.body.event_id})`);
    else log(`test delivery not sent: HTTP ${test.status} ${test.body?.error?.code ?? ''}`);
  }
} catch (error) {
  log(`error: ${error.message}`);
  process.exit(1);
}

#!/usr/bin/env node
// An example full copy: every booking the key's organization sees, written to a local JSON file,
// walking every page of GET /bookings with its cursor (plain Node, no dependencies).
//
// Run it (Node >= 20.19), for the local demo of `npm start`:
//   node --env-file=data/demo.env examples/mirror-bookings.mjs
//
// Environment:
//   SVC_BASE_URL   the API, default http://localhost:8080/api/v1
//   SVC_API_KEY    a key with bookings:read and events:read
//   MIRROR_FILE    where to write, default data/bookings.json
//   PAGE_SIZE      bookings per request, 1 to 100, default 100
//
// The list is ordered newest first and a new booking never shifts the others, so the walk sees
// every booking that existed when it started. Changes made meanwhile are in GET /events: before
// walking, the copy notes the newest event of the log (`last_event_id`), and
// examples/webhook-receiver.mjs, which shares this file, keeps the copy current from there on
// (webhooks, and the log after any gap). It makes the copy itself on its first start; run this
// one for a fresh copy while the receiver is stopped.
//
// The file: { updated_at, last_event_id, count, bookings: [newest first], as_of: {} }
// (`as_of` is the receiver's: per booking, the newest event its copy reflects).
import { realpathSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Calls of the API with one key: retried after Retry-After on 429, and a little later on 5xx and
 * on network errors, a few times. Resolves with `{ status, body }`.
 */
export function apiClient(baseUrl, key) {
  const base = baseUrl.replace(/\/+$/, '');
  return async function api(method, path, body) {
    for (let attempt = 1; ; attempt += 1) {
      let res;
      try {
        res = await fetch(`${base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${key}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (error) {
        if (attempt >= 5) throw error;
        await sleep(500 * attempt);
        continue;
      }
      if ((res.status === 429 || res.status >= 500) && attempt < 5) {
        await sleep(Number(res.headers.get('retry-after') || attempt) * 1000);
        continue;
      }
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    }
  };
}

export function apiError(what, res) {
  const error = res.body?.error;
  return new Error(`${what}: HTTP ${res.status}${error ? ` ${error.code}: ${error.message}` : ''}`);
}

/**
 * The API's order, newest first. The sort is stable and `created_at` is shown to the millisecond:
 * bookings of the same millisecond keep the order they came in (the walk's, which is the API's).
 */
export function byListOrder(a, b) {
  return a.created_at === b.created_at ? 0 : a.created_at < b.created_at ? 1 : -1;
}

/**
 * Every booking, page by page, and the newest event of the log read before the walk: every change
 * the walk may have missed is after that event.
 */
export async function fullCopy(api, pageSize = 100) {
  const log = await api('GET', '/events?limit=1');
  if (log.status !== 200) throw apiError('GET /events', log);
  const lastEventId = log.body.data[0]?.id ?? null;
  const bookings = [];
  let pages = 0;
  let cursor = null;
  do {
    const query = new URLSearchParams({ limit: String(pageSize), ...(cursor ? { cursor } : {}) });
    const res = await api('GET', `/bookings?${query}`);
    if (res.status !== 200) throw apiError('GET /bookings', res);
    pages += 1;
    bookings.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return { bookings, lastEventId, pages };
}

/** The copy in `file`, or null when there is none yet. */
export async function readMirror(file) {
  try {
    return JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Written whole to a temporary file, then renamed: a crash never leaves half a file, and the copy
 * and its bookmark always agree. Owner-only: bookings hold passengers' names and phones.
 */
export async function writeMirror(file, { bookings, lastEventId, asOf = {} }) {
  const sorted = [...bookings].sort(byListOrder);
  const text = JSON.stringify(
    {
      updated_at: new Date().toISOString(),
      last_event_id: lastEventId,
      count: sorted.length,
      bookings: sorted,
      as_of: asOf,
    },
    null,
    2,
  );
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${text}\n`, { mode: 0o600 });
  await rename(tmp, file);
}

async function main() {
  const env = process.env;
  if (!env.SVC_API_KEY) {
    console.error('SVC_API_KEY is required (for the local demo: node --env-file=data/demo.env …)');
    return 2;
  }
  const api = apiClient(env.SVC_BASE_URL || 'http://localhost:8080/api/v1', env.SVC_API_KEY);
  const file = env.MIRROR_FILE || 'data/bookings.json';
  const { bookings, lastEventId, pages } = await fullCopy(api, Number(env.PAGE_SIZE || 100));
  await writeMirror(file, { bookings, lastEventId });
  console.log(`mirrored ${bookings.length} bookings in ${pages} page(s) to ${file}`);
  return 0;
}

// Run as a program; imported by the receiver for the functions above.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  process.exitCode = await main();
}

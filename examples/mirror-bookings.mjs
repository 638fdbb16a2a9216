#!/usr/bin/env node
// An example full copy: every booking the key's organization sees, written to a local JSON file,
// walking every page of GET /bookings with its cursor (plain Node, no dependencies).
//
// Run it (Node >= 20.19), for the local demo of `npm start`:
//   node --env-file=data/demo.env examples/mirror-bookings.mjs
//
// Environment:
//   SVC_BASE_URL   the API, default http://localhost:8080/api/v1
//   SVC_API_KEY    a key with bookings:read
//   MIRROR_FILE    where to write, default data/bookings.json
//   PAGE_SIZE      bookings per request, 1 to 100, default 100
//
// The list is ordered newest first and a new booking never shifts the others, so the walk sees
// every booking that existed when it started; changes made meanwhile are in GET /events, which is
// how to keep the copy current afterwards (see examples/webhook-receiver.mjs).
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

const env = process.env;
const BASE_URL = (env.SVC_BASE_URL || 'http://localhost:8080/api/v1').replace(/\/+$/, '');
const API_KEY = env.SVC_API_KEY;
const FILE = env.MIRROR_FILE || 'data/bookings.json';
const PAGE_SIZE = Number(env.PAGE_SIZE || 100);

if (!API_KEY) {
  console.error('SVC_API_KEY is required (for the local demo: node --env-file=data/demo.env …)');
  process.exit(2);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One page, retried after Retry-After on 429 and a little later on 5xx. */
async function page(cursor) {
  const query = new URLSearchParams({ limit: String(PAGE_SIZE), ...(cursor ? { cursor } : {}) });
  for (let attempt = 1; ; attempt += 1) {
    const res = await fetch(`${BASE_URL}/bookings?${query}`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    if ((res.status === 429 || res.status >= 500) && attempt < 5) {
      await sleep(Number(res.headers.get('retry-after') || attempt) * 1000);
      continue;
    }
    const body = await res.json();
    if (res.status !== 200) {
      throw new Error(`GET /bookings: HTTP ${res.status} ${body.error?.code}: ${body.error?.message}`);
    }
    return body;
  }
}

const bookings = [];
let pages = 0;
let cursor = null;
do {
  const body = await page(cursor);
  pages += 1;
  bookings.push(...body.data);
  cursor = body.next_cursor;
} while (cursor);

await mkdir(dirname(FILE), { recursive: true });
const tmp = `${FILE}.${process.pid}.tmp`;
await writeFile(
  tmp,
  `${JSON.stringify({ fetched_at: new Date().toISOString(), count: bookings.length, bookings }, null, 2)}\n`,
  { mode: 0o600 },
);
await rename(tmp, FILE);
console.log(`mirrored ${bookings.length} bookings in ${pages} page(s) to ${FILE}`);

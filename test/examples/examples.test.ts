// The examples as an integrator runs them: real processes with `node --env-file=data/demo.env`
// against a real `svc serve --demo`, whose worker delivers over HTTPS to the example receiver.
// (The client package is loaded from its TypeScript source here, so no build is needed first.)
// The receiver keeps a copy of every booking: after seeded traffic through the platform feed, a
// receiver outage and a deactivated webhook, the copy must equal GET /bookings exactly.
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { seededRandom } from '../../src/demo/random.js';
import { bookingBody } from '../support/feed.js';
import { dataDirMigrated } from '../support/pglite-template.js';
import { freePort, type Started, start, svc } from '../support/processes.js';
import { until } from '../support/wait.js';

const TOKEN = 'examples-test-operator-token-0123456789';
const CA = readFileSync('examples/tls/ca.pem');

let dir: string;
let base: string;
let operator: string;
let envFile: string;
let key: string;
let server: Started;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-examples-'));
  // Past initdb already (a first start is serve.happy's subject); the demo data is made by serve.
  await dataDirMigrated(join(dir, 'data'));
  const port = await freePort();
  const operatorPort = await freePort();
  base = `http://127.0.0.1:${port}/api/v1`;
  operator = `http://127.0.0.1:${operatorPort}/operator/v1`;
  server = svc(['serve', '--demo'], {
    SVC_DATA_DIR: join(dir, 'data'),
    SVC_PORT: String(port),
    SVC_OPERATOR_PORT: String(operatorPort),
    SVC_OPERATOR_TOKEN: TOKEN,
    SVC_HOST: '127.0.0.1',
  });
  await server.waitFor(/Operator API: .*\n/, 90_000);
  envFile = join(dir, 'data', 'demo.env');
  key = /^SVC_API_KEY=(.*)$/m.exec(await readFile(envFile, 'utf8'))?.[1] ?? '';
  assert.match(key, /^svc_live_/);
});

after(async () => {
  await server.stop('SIGTERM');
  await rm(dir, { recursive: true, force: true });
});

function example(file: string, env: Record<string, string>, args: string[] = []): Started {
  return start(
    process.execPath,
    ['--conditions=svc-source', '--import', 'tsx', `--env-file=${envFile}`, `examples/${file}`, ...args],
    { env: { ...process.env, ...env } },
  );
}

async function api(path: string, method = 'GET', body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.equal(res.status, 200, `${method} ${path}`);
  return res.json();
}

type Booking = { id: string; reference: string; role: string; status: string };

/** Every booking the key sees, walking every page. */
async function allBookings(): Promise<Booking[]> {
  const all: Booking[] = [];
  let cursor: string | null = null;
  do {
    const page: { data: Booking[]; next_cursor: string | null } = await api(
      `/bookings?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    all.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return all;
}

const byId = (list: Booking[]) => [...list].sort((a, b) => (a.id < b.id ? -1 : 1));

/** Resolves once the copy in `file` equals GET /bookings; the last difference otherwise. */
async function copyMatches(file: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const expected = byId(await allBookings());
    const copy = JSON.parse(await readFile(file, 'utf8'));
    const actual = byId(copy.bookings);
    if (Date.now() > deadline) assert.deepEqual(actual, expected, 'the copy equals GET /bookings');
    if (isDeepStrictEqual(actual, expected)) return { copy, expected };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A UUID drawn from the generator, so the bookings created are the same on every run. */
function uuidFrom(random: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

/**
 * Platform traffic through the operator feed, as the simulator makes it: `count` changes drawn
 * from `random` (a new booking, a status, a distance, a deletion), three at a time, each on a
 * booking of its own, so that deliveries overlap and may arrive out of order.
 */
async function traffic(organizationId: string, random: () => number, count: number): Promise<void> {
  const statuses = ['confirmada', 'en_camino', 'en_curso', 'completada', 'cancelada', 'no_show'];
  const ours = (await allBookings()).filter((b) => b.role !== 'executor').map((b) => b.id);
  const call = async (method: string, id: string, body?: unknown) => {
    const res = await fetch(`${operator}/organizations/${organizationId}/bookings/${id}`, {
      method,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    assert.ok(res.status === 200 || res.status === 201, `${method} ${id}: ${await res.text()}`);
  };
  const tenth = () => Math.round(random() * 1000) / 10;
  for (let done = 0; done < count; ) {
    const batch: Promise<void>[] = [];
    const busy = new Set<string>();
    const created: string[] = [];
    for (; batch.length < 3 && done < count; done += 1) {
      const kind = random();
      const free = ours.filter((id) => !busy.has(id));
      const id = free[Math.floor(random() * free.length)] as string;
      busy.add(id);
      if (kind < 0.2) {
        const fresh = uuidFrom(random);
        created.push(fresh);
        batch.push(call('PUT', fresh, bookingBody({ distance_km: tenth() })));
      } else if (kind < 0.55) {
        batch.push(call('PATCH', id, { status: statuses[Math.floor(random() * statuses.length)] }));
      } else if (kind < 0.9 || ours.length < 20) {
        batch.push(call('PATCH', id, { distance_km: tenth() }));
      } else {
        ours.splice(ours.indexOf(id), 1);
        batch.push(call('DELETE', id));
      }
    }
    await Promise.all(batch);
    ours.push(...created);
  }
}

/** Polls `check` every 200 ms until it holds; fails after `timeoutMs`. */

/** The events of the log newer than `id`, newest first. */
async function eventsAfter(id: string): Promise<{ id: string }[]> {
  const events: { id: string }[] = [];
  let cursor: string | null = null;
  for (;;) {
    const page: { data: { id: string }[]; next_cursor: string | null } = await api(
      `/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    for (const event of page.data) {
      if (event.id === id) return events;
      events.push(event);
    }
    cursor = page.next_cursor;
    assert.ok(cursor, `event ${id} is in the log`);
  }
}

/** A change from the platform, through the operator feed: one booking.updated event. */
async function changeBooking(organizationId: string, bookingId: string, distance: number) {
  const res = await fetch(`${operator}/organizations/${organizationId}/bookings/${bookingId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ distance_km: distance }),
  });
  assert.equal(res.status, 200, await res.text());
}

/** A POST to the receiver over TLS, trusting the examples' CA as the service does. */
function post(port: number, headers: Record<string, string>, body: string) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(
      { host: 'localhost', port, path: '/webhooks', method: 'POST', ca: CA, headers },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('examples', () => {
  test('mirror-bookings.mjs walks every page and writes every booking once, with its bookmark', async () => {
    const file = join(dir, 'mirror', 'bookings.json');
    const run = example('mirror-bookings.mjs', { MIRROR_FILE: file, PAGE_SIZE: '7' });
    assert.equal(await run.exited(), 0, run.output());
    const mirror = JSON.parse(await readFile(file, 'utf8'));
    const ids: string[] = mirror.bookings.map((b: { id: string }) => b.id);
    assert.equal(new Set(ids).size, ids.length, 'no booking twice');

    const expected = (await allBookings()).map((b) => b.id);
    assert.deepEqual(ids, expected, 'the same bookings in the same order');
    assert.equal(mirror.count, expected.length);
    const [newest] = (await api('/events?limit=1')).data;
    assert.equal(
      mirror.last_event_id,
      newest.id,
      'the newest event before the walk: where a receiver goes on',
    );
    assert.match(
      run.output(),
      new RegExp(`mirrored ${expected.length} bookings in ${Math.ceil(expected.length / 7)} page\\(s\\)`),
    );
  });

  test('webhook-receiver.mjs keeps an exact copy through traffic, an outage and a deactivated webhook', async () => {
    const port = await freePort();
    const stateFile = join(dir, 'receiver.json');
    const mirrorFile = join(dir, 'receiver-bookings.json');
    const env = {
      RECEIVER_PORT: String(port),
      RECEIVER_STATE: stateFile,
      MIRROR_FILE: mirrorFile,
      RECEIVER_RECONCILE_SECONDS: '1',
    };
    const me = await api('/integrations/me');
    const organizationId: string = me.organization.id;
    const random = seededRandom(20_261_124).next;

    // First start: registered, a full copy, then deliveries.
    const first = example('webhook-receiver.mjs', env);
    const registered = await first.waitFor(/registered webhook \S+ -> https:\/\/localhost:\d+\/webhooks/);
    const webhookId = /registered webhook (\S+) ->/.exec(registered)?.[1];
    await first.waitFor(/full copy \(first start\): \d+ bookings in 1 page\(s\)/);
    await first.waitFor(/verified webhook\.test \S+ test delivery/, 15_000);
    await copyMatches(mirrorFile);

    // A change on the platform arrives signed, is verified and goes into the copy.
    const [one] = (await allBookings()).filter((b) => b.role !== 'executor');
    assert.ok(one);
    await changeBooking(organizationId, one.id, 11.5);
    const line = new RegExp(`verified booking\\.updated (\\S+) booking ${one.reference} `);
    const eventId = line.exec(await first.waitFor(line, 15_000))?.[1];
    const [newest] = (await api('/events?limit=1')).data;
    assert.equal(eventId, newest.id, 'the event of the log');

    // The same event id again (as a retry would bring it): acknowledged, not processed twice.
    const state = JSON.parse(await readFile(stateFile, 'utf8'));
    assert.match(state.webhook.secret, /^whsec_/);
    const body = JSON.stringify({ ...newest, version: 1, organization: { id: organizationId }, data: null });
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = `v1=${createHmac('sha256', state.webhook.secret).update(`${timestamp}.${body}`).digest('hex')}`;
    const headers = {
      'content-type': 'application/json',
      'x-svc-event-id': newest.id,
      'x-svc-timestamp': timestamp,
      'x-svc-attempt': '2',
    };
    const again = await post(port, { ...headers, 'x-svc-signature': signature }, body);
    assert.deepEqual(again, { status: 200, text: 'duplicate' });
    await first.waitFor(new RegExp(`duplicate booking\\.updated ${newest.id} \\(attempt 2\\)`));
    const forged = await post(port, { ...headers, 'x-svc-signature': `v1=${'0'.repeat(64)}` }, body);
    assert.deepEqual(forged, { status: 400, text: 'signature_mismatch' });
    await first.waitFor(/refused \(signature_mismatch\)/);
    assert.equal(first.output().match(/verified booking\.updated \S+ booking/g)?.length, 1);

    // A delivery of an earlier change arriving late (deliveries overlap): acknowledged, but it does
    // not overwrite the later state the copy has.
    const current = await api(`/bookings/${one.id}`);
    const late = JSON.stringify({
      ...newest,
      id: randomUUID(),
      created_at: '2026-01-01T00:00:00.000Z',
      version: 1,
      organization: { id: organizationId },
      data: { ...current, distance_km: 999 },
    });
    const lateSignature = `v1=${createHmac('sha256', state.webhook.secret).update(`${timestamp}.${late}`).digest('hex')}`;
    const lateReply = await post(
      port,
      { ...headers, 'x-svc-event-id': JSON.parse(late).id, 'x-svc-signature': lateSignature },
      late,
    );
    assert.deepEqual(lateReply, { status: 200, text: 'ok' });
    await first.waitFor(/\(the copy already has a later change\)/);
    await copyMatches(mirrorFile);

    // Seeded traffic, deliveries overlapping: the copy follows, and its bookmark moves as the
    // receiver runs (not only at its start).
    await traffic(organizationId, random, 30);
    await copyMatches(mirrorFile);
    const [top] = (await api('/events?limit=1')).data;
    await until('the bookmark reaches the newest event', async () => {
      return JSON.parse(await readFile(mirrorFile, 'utf8')).last_event_id === top.id;
    });
    assert.equal(await first.stop('SIGTERM'), 0);
    const saved = JSON.parse(await readFile(stateFile, 'utf8'));
    assert.equal(typeof saved.seen[newest.id], 'number', 'a processed id is kept with when it was processed');

    // An outage: the receiver is down, its webhook paused, the platform goes on.
    const paused = await api(`/webhooks/${webhookId}`, 'PATCH', { active: false });
    assert.equal(paused.active, false);
    await traffic(organizationId, random, 12);
    const missed = await eventsAfter(top.id);
    assert.ok(missed.length >= 5, `the outage made events: ${missed.length}`);

    // The next start says the webhook is inactive, walks the log back to its bookmark only and
    // reads what it missed: the copy is exact again.
    const second = example('webhook-receiver.mjs', env);
    const out = await second.waitFor(/reconcile: \d+ missed event/, 30_000);
    assert.match(out, /WEBHOOK INACTIVE: webhook \S+ is deactivated \(paused since .*--reactivate/);
    assert.match(
      out,
      new RegExp(
        `reconcile: ${missed.length} missed event\\(s\\), \\d+ booking\\(s\\) read, down to ${top.id}`,
      ),
    );
    assert.ok(!out.includes('full copy'), 'no second full walk');
    assert.ok(!out.includes('registered webhook'), 'the webhook of the first start is kept');
    await copyMatches(mirrorFile);
    assert.equal(await second.stop('SIGINT'), 0);

    // --reactivate turns the webhook back on; deliveries resume. Event ids are remembered for a
    // time only (here 60 ms): the first run's are forgotten.
    const third = example('webhook-receiver.mjs', { ...env, RECEIVER_DEDUP_MINUTES: '0.001' }, [
      '--reactivate',
    ]);
    await third.waitFor(/reactivated webhook \S+ \(it was paused since /);
    assert.equal((await api(`/webhooks/${webhookId}`)).active, true);
    await third.waitFor(/verified webhook\.test /, 15_000);
    await traffic(organizationId, random, 9);
    await third.waitFor(/verified booking\.\w+ /, 15_000);
    const { copy, expected } = await copyMatches(mirrorFile);
    assert.equal(copy.count, expected.length);
    assert.equal(await third.stop('SIGTERM'), 0);
    const last = JSON.parse(await readFile(stateFile, 'utf8'));
    assert.ok(!(newest.id in last.seen), 'ids older than RECEIVER_DEDUP_MINUTES are forgotten');
  });
});

// The examples as an integrator runs them: real processes with `node --env-file=data/demo.env`
// against a real `svc serve --demo`, whose worker delivers over HTTPS to the example receiver.
// (The client package is loaded from its TypeScript source here, so no build is needed first.)
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dataDirAfterInitdb } from '../support/pglite-template.js';
import { freePort, type Started, start, svc } from '../support/processes.js';

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
  await dataDirAfterInitdb(join(dir, 'data'));
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

function example(file: string, env: Record<string, string>): Started {
  return start(
    process.execPath,
    ['--conditions=svc-source', '--import', 'tsx', `--env-file=${envFile}`, `examples/${file}`],
    { env: { ...process.env, ...env } },
  );
}

async function api(path: string) {
  const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200, path);
  return res.json();
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
  test('mirror-bookings.mjs walks every page and writes every booking once', async () => {
    const file = join(dir, 'mirror', 'bookings.json');
    const run = example('mirror-bookings.mjs', { MIRROR_FILE: file, PAGE_SIZE: '7' });
    assert.equal(await run.exited(), 0, run.output());
    const mirror = JSON.parse(await readFile(file, 'utf8'));
    const ids: string[] = mirror.bookings.map((b: { id: string }) => b.id);
    assert.equal(new Set(ids).size, ids.length, 'no booking twice');

    const expected: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { id: string }[]; next_cursor: string | null } = await api(
        `/bookings?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expected.push(...page.data.map((b) => b.id));
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(ids, expected, 'the same bookings in the same order');
    assert.equal(mirror.count, expected.length);
    assert.match(
      run.output(),
      new RegExp(`mirrored ${expected.length} bookings in ${Math.ceil(expected.length / 7)} page\\(s\\)`),
    );
  });

  test('webhook-receiver.mjs registers, verifies, deduplicates and reconciles after a restart', async () => {
    const port = await freePort();
    const stateFile = join(dir, 'receiver.json');
    const env = { RECEIVER_PORT: String(port), RECEIVER_STATE: stateFile };
    const me = await api('/integrations/me');
    const organizationId: string = me.organization.id;
    const bookings: { id: string; reference: string }[] = (await api('/bookings?limit=20')).data.filter(
      (b: { role: string }) => b.role !== 'executor',
    );
    const [one, two, three] = bookings;
    assert.ok(one && two && three);

    const first = example('webhook-receiver.mjs', env);
    await first.waitFor(/registered webhook \S+ -> https:\/\/localhost:\d+\/webhooks/);
    await first.waitFor(/reconcile: first start/);
    await first.waitFor(/verified webhook\.test \S+ test delivery/, 15_000);

    // A change on the platform arrives signed, is verified and processed.
    await changeBooking(organizationId, one.id, 11.5);
    const arrived = await first.waitFor(
      new RegExp(`verified booking\\.updated (\\S+) booking ${one.reference} `),
      15_000,
    );
    const eventId = new RegExp(`verified booking\\.updated (\\S+) booking ${one.reference} `).exec(
      arrived,
    )?.[1];
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
    assert.equal(first.output().match(/verified booking\.updated/g)?.length, 1);

    assert.equal(await first.stop('SIGTERM'), 0);
    const saved = JSON.parse(await readFile(stateFile, 'utf8'));
    assert.ok(saved.seen.includes(newest.id));

    // Two changes while the receiver is down: the next start finds them in the log.
    await changeBooking(organizationId, two.id, 12.5);
    await changeBooking(organizationId, three.id, 13.5);
    const missed = (await api('/events?limit=2')).data as { id: string }[];
    const second = example('webhook-receiver.mjs', env);
    const out = await second.waitFor(/reconcile: \d+ missed event/, 30_000);
    assert.match(
      out,
      new RegExp(`reconcile: 2 missed event\\(s\\), 2 booking\\(s\\) read, down to ${saved.lastEventId}`),
    );
    for (const [event, booking] of [
      [missed[1], two],
      [missed[0], three],
    ] as const) {
      assert.match(
        out,
        new RegExp(`reconciled booking\\.updated ${event?.id} booking ${booking.reference} `),
      );
    }
    assert.ok(!out.includes('registered webhook'), 'the webhook of the first start is kept');
    assert.match(out, /webhook \S+ -> https:\/\/localhost/);
    assert.equal(await second.stop('SIGINT'), 0);
    const last = JSON.parse(await readFile(stateFile, 'utf8'));
    assert.equal(last.lastEventId, missed[0]?.id);
  });
});

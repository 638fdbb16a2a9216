// `npx @svc/integration-client listen` as a developer runs it (from the package's source): it
// follows a live service's event log and forwards every event to the example receiver
// (examples/webhook-receiver.mjs over plain HTTP, with the secret listen printed), which verifies
// each one with verifyWebhook as it would a delivery. Through an outage of the receiver it retries,
// reports and goes on; Ctrl-C stops it with 0.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { notice, wanted } from '../../packages/client/src/listen.js';
import { seededRandom } from '../../src/demo/random.js';
import { startService } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { freePort, type Started, start } from '../support/processes.js';
import { expectOk } from '../support/tenants.js';
import { webhookTenant } from '../support/webhooks.js';

const svc = await startService();
await svc.api.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(svc.api.server.address() as AddressInfo).port}/api/v1`;
const dir = await mkdtemp(join(tmpdir(), 'svc-listen-'));
after(async () => {
  await svc.close();
  await rm(dir, { recursive: true, force: true });
});

const fromSource = (args: string[], env: Record<string, string>): Started =>
  start(process.execPath, ['--conditions=svc-source', '--import', 'tsx', ...args], {
    env: { ...process.env, ...env },
  });

test('only the types asked for are forwarded; the notice says what differs from a delivery', () => {
  assert.ok(wanted([], 'booking.created'));
  assert.ok(wanted(['*'], 'booking.deleted'));
  assert.ok(wanted(['booking.*'], 'booking.no_show'));
  assert.ok(wanted(['booking.cancelled', 'booking.created'], 'booking.created'));
  assert.ok(!wanted(['booking.cancelled'], 'booking.created'));
  assert.ok(!wanted(['booking.c*'], 'booking.created'), 'only a whole segment is a wildcard');
  const text = notice(2000, [1000, 2000]);
  assert.match(text, /as GET \/bookings\/\{id\} reads it when forwarded, not as the change left it/);
  assert.match(text, /polling GET \/events every 2 s \(30 requests a minute/);
  assert.match(text, /retried 2 times over 3 s, not 8 over an hour/);
});

test('every event reaches the example receiver verified, through an outage; Ctrl-C stops', async () => {
  const t = await webhookTenant(svc);
  const org = t.organization.id;
  const random = seededRandom(41);
  const ids = [random.uuid(), random.uuid(), random.uuid()];
  for (const id of ids) await putBooking(svc, org, {}, id);

  const receiverPort = await freePort();
  const listen = fromSource(
    [
      'packages/client/src/cli.ts',
      'listen',
      '--forward-to',
      `http://localhost:${receiverPort}/webhooks`,
      '--events',
      'booking.*',
      '--interval',
      '0.5',
      '--retry-gaps',
      '0.1,0.2',
    ],
    { SVC_API_KEY: t.key, SVC_BASE_URL: base },
  );
  const banner = await listen.waitFor(/Listening; Ctrl-C stops\./, 60_000);
  const secret = /^(whsec_[A-Za-z0-9+/]{43}=)$/m.exec(banner)?.[1];
  assert.ok(secret, `the secret on a line of its own:\n${banner}`);
  assert.match(banner, /Not a real delivery:/);

  const receiverEnv = {
    SVC_BASE_URL: base,
    SVC_API_KEY: t.key,
    SVC_WEBHOOK_SECRET: secret,
    RECEIVER_TLS: 'off',
    RECEIVER_PORT: String(receiverPort),
    RECEIVER_STATE: join(dir, 'receiver.json'),
    MIRROR_FILE: join(dir, 'bookings.json'),
    // Events must come through listen, not from the receiver's own walks of the log.
    RECEIVER_RECONCILE_SECONDS: '3600',
  };
  const receiver = () => fromSource(['examples/webhook-receiver.mjs'], receiverEnv);
  let running = receiver();
  await running.waitFor(/reconcile: \d+ missed event/, 60_000);

  /** Seeded changes through the platform feed: new bookings, updates, cancellations. */
  async function traffic(count: number): Promise<void> {
    for (let i = 0; i < count; i += 1) {
      const pick = random.next();
      if (pick < 0.3) {
        const id = random.uuid();
        ids.push(id);
        await putBooking(svc, org, {}, id);
      } else {
        const id = random.pick(ids);
        const change = pick < 0.8 ? { distance_km: 10 + i } : { status: 'cancelada' };
        await putBooking(svc, org, change, id);
      }
    }
  }
  const events = async (since: string | null) => {
    const page = await expectOk(await svc.call('GET', '/events?limit=100', { key: t.key }));
    const all = page.data as { id: string; type: string }[];
    const cut = since === null ? all.length : all.findIndex((e) => e.id === since);
    return all.slice(0, cut);
  };
  const newest = async () => (await events(null))[0]?.id ?? null;

  let mark = await newest();
  await traffic(12);
  const first = await events(mark);
  assert.ok(first.length >= 8, `${first.length} events (a change to what a booking already is fires none)`);
  for (const e of first) {
    await running.waitFor(new RegExp(`verified ${e.type.replace('.', '\\.')} ${e.id} booking`), 30_000);
  }
  assert.ok(!running.output().includes('refused'), running.output());

  // The receiver is down: listen retries, reports the event it could not forward, and goes on.
  assert.equal(await running.stop('SIGINT'), 0, running.output());
  mark = await newest();
  await putBooking(svc, org, {}, random.uuid());
  const [lost] = await events(mark);
  assert.ok(lost);
  await listen.waitFor(
    new RegExp(
      `FAILED ${lost.type.replace('.', '\\.')} ${lost.id} after 3 attempts: the receiver is unreachable`,
    ),
    30_000,
  );
  assert.match(
    listen.output(),
    new RegExp(`${lost.id}: the receiver is unreachable \\(\\w+\\); attempt 2 in 0\\.1 s`),
  );

  running = receiver();
  await running.waitFor(/reconcile: \d+ missed event/, 60_000);
  mark = await newest();
  await traffic(3);
  const after = await events(mark);
  for (const e of after) {
    await running.waitFor(new RegExp(`verified ${e.type.replace('.', '\\.')} ${e.id} booking`), 30_000);
  }
  assert.ok(!running.output().includes('refused'), running.output());
  assert.equal(await running.stop('SIGINT'), 0);

  assert.equal(await listen.stop('SIGINT'), 0, listen.output());
  assert.match(listen.output(), new RegExp(`stopped: ${first.length + after.length} forwarded, 1 failed`));
});

// The embedded worker of `svc serve` stands by while a `svc worker` process is at work on its
// database: the process that answers the API leaves deliveries to the processes deployed for them,
// takes only what waited SVC_WEBHOOK_SHARE_AFTER_MS, and delivers again once none is left. A `svc
// worker` is known by its engine's sessions (Db.sessionsOf), so a session opened under that name
// stands for one here: it never claims, which makes what the embedded worker leaves to it
// observable.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { publishEvents } from '../../src/delivery/publish.js';
import { DEDICATED_WORKERS } from '../../src/delivery/standby.js';
import { usingServer } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { until } from '../support/wait.js';
import {
  arrivalsAt,
  claimsMade,
  createWebhook,
  deliveryWorker,
  requestsTo,
  webhookService,
  webhookTenant,
} from '../support/webhooks.js';

/**
 * A service whose webhook sends to `path`, and a session named as a `svc worker`'s that stands for
 * one at work: it never claims. Close the session to stop it.
 */
async function besideASvcWorker(path: string, env: Record<string, string>) {
  const { svc, receiver } = await webhookService(env);
  const t = await webhookTenant(svc);
  await createWebhook(svc, t, receiver.url(path), ['booking.created']);
  const dedicated = svc.db.withPlansKept(1, DEDICATED_WORKERS);
  await dedicated.query('SELECT 1');
  return { svc, receiver, t, dedicated };
}

test('an embedded worker stands by while a svc worker is at work, and delivers once none is', {
  skip: usingServer ? false : 'needs PostgreSQL: `svc worker` processes run only on a server',
}, async () => {
  // Nothing waits long enough here to be taken from the svc worker.
  const { svc, receiver, t, dedicated } = await besideASvcWorker('/standby', {
    SVC_WEBHOOK_SHARE_AFTER_MS: '600000',
  });
  try {
    assert.equal(await svc.db.sessionsOf(DEDICATED_WORKERS), 1, 'the session is known by its name');
    await deliveryWorker(svc);
    for (let i = 0; i < 3; i++) await putBooking(svc, t.organization.id);
    // It still asks (for a share of a webhook whose holder falls behind), and takes nothing.
    const claims = await claimsMade(svc);
    await until(
      'the embedded worker claimed twice more',
      async () => (await claimsMade(svc)) >= claims + 2,
      10_000,
    );
    assert.equal(
      requestsTo(receiver, '/standby').length,
      0,
      'nothing was sent while a svc worker is at work',
    );
    const [queue] = await svc.db.query<{ pending: number }>(
      "SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending FROM delivery_states",
    );
    assert.equal(queue?.pending, 3, 'the deliveries wait in the queue for the svc worker');
  } finally {
    await dedicated.close();
  }
  // A closed connection's backend leaves pg_stat_activity as it exits, a moment after the close.
  await until('the session gone', async () => (await svc.db.sessionsOf(DEDICATED_WORKERS)) === 0);
  // Once no svc worker is at work (seen at its next housekeeping), the embedded worker delivers.
  const arrived = await arrivalsAt(receiver, '/standby', 3, 15_000);
  assert.equal(arrived.length, 3);
});

test('standing by, it takes a webhook no one holds once its deliveries waited SVC_WEBHOOK_SHARE_AFTER_MS', {
  skip: usingServer ? false : 'needs PostgreSQL',
}, async () => {
  // A svc worker is at work but does not take these deliveries (it hangs, or is saturated with
  // other webhooks): what waits is delivered by the worker standing by, at the webhook's bound.
  const { svc, receiver, t, dedicated } = await besideASvcWorker('/waited', {
    SVC_WEBHOOK_SHARE_AFTER_MS: '200',
  });
  try {
    await deliveryWorker(svc);
    const written = Date.now();
    for (let i = 0; i < 3; i++) await putBooking(svc, t.organization.id);
    const arrived = await arrivalsAt(receiver, '/waited', 3, 15_000);
    assert.equal(arrived.length, 3, 'delivered while the svc worker is still at work');
    assert.equal(await svc.db.sessionsOf(DEDICATED_WORKERS), 1);
    const first = Math.min(...arrived.map((r) => r.receivedAt));
    assert.ok(first - written >= 190, `not before they had waited: the first after ${first - written} ms`);
  } finally {
    await dedicated.close();
  }
});

test('a worker that begins to stand by leaves a backlog to the worker that delivers for a gap first', {
  skip: usingServer ? false : 'needs PostgreSQL',
}, async () => {
  // A backlog that waited long (an outage): a worker standing by may take it, but not at its
  // first look, when the worker that delivers, starting beside it, has yet to claim.
  const { svc, receiver, t, dedicated } = await besideASvcWorker('/gap', {
    SVC_WEBHOOK_SHARE_AFTER_MS: '800',
  });
  try {
    for (let i = 0; i < 3; i++) await putBooking(svc, t.organization.id);
    await publishEvents(svc.db);
    await svc.db.query("UPDATE delivery_queue SET next_retry_at = now() - interval '1 minute'");
    const started = Date.now();
    await deliveryWorker(svc);
    const arrived = await arrivalsAt(receiver, '/gap', 3, 15_000);
    const first = Math.min(...arrived.map((r) => r.receivedAt));
    assert.ok(
      first - started >= 750,
      `its first claim came SVC_WEBHOOK_SHARE_AFTER_MS after it began to stand by: ${first - started} ms`,
    );
  } finally {
    await dedicated.close();
  }
});

test('sessions of another schema are not counted: deployments sharing a database keep to their own', {
  skip: usingServer ? false : 'needs PostgreSQL',
}, async () => {
  const a = await webhookService();
  const b = await webhookService();
  const inA = a.svc.db.withPlansKept(1, DEDICATED_WORKERS);
  try {
    await inA.query('SELECT 1');
    assert.equal(await a.svc.db.sessionsOf(DEDICATED_WORKERS), 1);
    assert.equal(await b.svc.db.sessionsOf(DEDICATED_WORKERS), 0);
  } finally {
    await inA.close();
  }
});

test('a svc worker that starts beside a delivering embedded worker is known within SVC_WEBHOOK_POLL_MS', {
  skip: usingServer ? false : 'needs PostgreSQL',
}, async () => {
  // The housekeeping comes every 5 s here (a lease of 60 s): the embedded worker learns sooner,
  // from its look every SVC_WEBHOOK_POLL_MS.
  const { svc, receiver } = await webhookService({
    SVC_WEBHOOK_POLL_MS: '100',
    SVC_WEBHOOK_LEASE_SECONDS: '60',
    SVC_WEBHOOK_SHARE_AFTER_MS: '600000',
  });
  const t = await webhookTenant(svc);
  await createWebhook(svc, t, receiver.url('/arrives'), ['booking.created']);
  await deliveryWorker(svc);
  // Its first round has looked, found no svc worker, and delivers.
  await putBooking(svc, t.organization.id);
  await arrivalsAt(receiver, '/arrives', 1, 5000);
  const dedicated = svc.db.withPlansKept(1, DEDICATED_WORKERS);
  try {
    await dedicated.query('SELECT 1');
    await sleep(150); // past SVC_WEBHOOK_POLL_MS since its last look
    const claims = await claimsMade(svc);
    for (let i = 0; i < 3; i++) await putBooking(svc, t.organization.id);
    await until(
      'the embedded worker claimed twice more',
      async () => (await claimsMade(svc)) >= claims + 2,
      10_000,
    );
    assert.equal(
      requestsTo(receiver, '/arrives').length,
      1,
      'the events written once a svc worker was at work were left to it',
    );
  } finally {
    await dedicated.close();
  }
});

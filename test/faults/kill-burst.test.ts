// Kill burst: booking changes pushed through the operator feed to three webhooks while a
// `svc worker` is SIGKILLed every 2 to 3 s (which one, and when, from a fixed seed) and restarted,
// and the `svc serve` that takes the feed is SIGKILLed once and restarted on its ports. When the
// dust settles every delivery has succeeded at the receiver, none is left leased, and every
// duplicate the receiver saw is an attempt that a kill interrupted. PostgreSQL and Redis only.
// A process of its own: it measures the delay of the process's event loop.
//
// CI runs a small burst; `npm run bench:killburst` runs 5,000 changes
// (SVC_KILLBURST_CHANGES, SVC_KILLBURST_RATE changes/s, 0 for as fast as the feed takes them) and
// writes the figures into BENCHMARKS.md (SVC_KILLBURST_REPORT=1).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, describe, test } from 'node:test';
import { withMarkdownSection } from '../../bench/lib/sections.js';
import { seededRandom } from '../../src/demo/random.js';
import {
  clusterTenant,
  freshSchema,
  needsServers,
  OPERATOR_TOKEN,
  request,
  SERVER_REDIS_URL,
  type ServeProcess,
  serviceEnv,
  sleep,
  startServe,
  startWorker,
  until,
  type WorkerProcess,
} from '../support/cluster.js';
import { bookingBody } from '../support/feed.js';
import { startReceiver } from '../support/https-receiver.js';
import { freePort } from '../support/processes.js';
import { FAST_SCHEDULE, signatureMatches } from '../support/webhooks.js';

const CHANGES = Number(process.env.SVC_KILLBURST_CHANGES || 180);
const RATE = Number(process.env.SVC_KILLBURST_RATE ?? (CHANGES > 1000 ? 0 : 30));
const SEED = Number(process.env.SVC_KILLBURST_SEED || 20261124);
// Generous for a loaded machine: an attempt that times out would be a duplicate no kill caused.
const TIMEOUT_MS = 5000;
const LEASE_MS = 8000;
const SETTLE_MS = Math.max(90_000, CHANGES * 40);

describe('kill burst', { skip: needsServers }, () => {
  test('workers killed every 2-3 s and the API once: every delivery arrives, duplicates only from interrupted attempts', {
    timeout: SETTLE_MS + 120_000,
  }, async (t) => {
    const random = seededRandom(SEED).next;
    const receiver = await startReceiver();
    after(() => receiver.close());
    // A little work at the receiver, so attempts are in flight when a process dies.
    receiver.respond(() => ({ status: 200, delayMs: Math.floor(random() * 20) }));
    const schema = await freshSchema();
    const env = serviceEnv({
      databaseUrl: schema.url,
      redisUrl: SERVER_REDIS_URL,
      caFile: receiver.caFile,
      extra: {
        SVC_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
        SVC_WEBHOOK_LEASE_SECONDS: String(LEASE_MS / 1000),
        SVC_WEBHOOK_RETRY_SCHEDULE: FAST_SCHEDULE,
        SVC_RATE_PER_KEY: '100000',
        SVC_RATE_PER_ORGANIZATION: '100000',
        SVC_RATE_PER_ENDPOINT: '100000',
      },
    });
    const ports = { api: await freePort(), op: await freePort() };
    let serve: ServeProcess | null = await startServe(env, ports);
    const workers: (WorkerProcess | null)[] = await Promise.all([startWorker(env), startWorker(env)]);
    const tenant = await clusterTenant(
      serve,
      ['/a', '/b', '/c'].map((p) => receiver.url(p)),
    );
    const op = serve.op;
    const kills: { at: number; what: string }[] = [];
    // The receiver stamps a request when this process's loop reads it, which on a busy machine is
    // later than the kernel took it: a request a worker sent just before its kill can be stamped
    // after it by as much as this loop was late. Its worst lateness widens the window below.
    const loopLag = monitorEventLoopDelay({ resolution: 10 });
    loopLag.enable();
    const started = Date.now();

    // The feed: creations first, then a change of each booking created, at RATE changes/s, 4 at a
    // time. A PUT that meets the API down is sent again (the same state: at most one event).
    const ids = Array.from({ length: Math.ceil(CHANGES / 2) }, () => randomUUID());
    const changes = Array.from({ length: CHANGES }, (_, i) =>
      i < ids.length
        ? { id: ids[i] as string, body: bookingBody() }
        : { id: ids[i - ids.length] as string, body: bookingBody({ distance_km: 60 + (i % 50) }) },
    );
    let next = 0;
    let fed = 0;
    let feedRetries = 0;
    const feedFailures = new Map<string, number>();
    const feed = Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = next++; i < changes.length; i = next++) {
          if (RATE > 0) {
            const due = started + (i * 1000) / RATE;
            if (due > Date.now()) await sleep(due - Date.now());
          }
          const { id, body } = changes[i] as (typeof changes)[number];
          await until(
            `PUT booking ${i}`,
            async () => {
              const res = await request(
                `${op}/organizations/${tenant.organizationId}/bookings/${id}`,
                'PUT',
                OPERATOR_TOKEN,
                body,
              ).catch(() => null);
              if (res && res.status < 300) return true;
              feedRetries += 1;
              const why = res ? `${res.status} ${res.body?.error?.code ?? ''}` : 'no answer';
              feedFailures.set(why, (feedFailures.get(why) ?? 0) + 1);
              return false;
            },
            60_000,
            100,
          );
          fed += 1;
        }
      }),
    );

    // The killer: a worker every 2 to 3 s, replaced at once; the API once, at half the feed.
    let stopKilling = false;
    let servedKilled = false;
    const killer = (async () => {
      while (!stopKilling) {
        await sleep(2000 + Math.floor(random() * 1000));
        if (stopKilling) break;
        if (!servedKilled && fed >= CHANGES / 2 && serve) {
          servedKilled = true;
          kills.push({ at: Date.now(), what: 'serve' });
          await serve.proc.stop('SIGKILL');
          serve = await startServe(env, ports);
          continue;
        }
        const n = random() < 0.5 ? 0 : 1;
        const victim = workers[n];
        workers[n] = null;
        kills.push({ at: Date.now(), what: `worker ${n}` });
        await victim?.proc.stop('SIGKILL');
        workers[n] = await startWorker(env);
      }
    })();

    await feed;
    const fedAt = Date.now();
    console.log(
      `# kill burst: feed done after ${fedAt - started} ms, ${kills.length} kills so far, feed retries ${JSON.stringify([...feedFailures])}`,
    );
    const [{ events } = { events: 0 }] = await schema.db.query<{ events: number }>(
      'SELECT count(*)::int AS events FROM events WHERE organization_id = $1',
      [tenant.organizationId],
    );
    // Every change made one event, except a PUT whose first try committed before the API died.
    assert.ok(
      events >= CHANGES - feedRetries && events <= CHANGES,
      `${events} events for ${CHANGES} changes`,
    );
    const expected = events * 3;
    const done = async () => {
      const [row] = await schema.db.query<{ ok: number; all: number }>(
        `SELECT count(*) FILTER (WHERE d.status = 'succeeded')::int AS ok, count(*)::int AS all
           FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.organization_id = $1`,
        [tenant.organizationId],
      );
      return row?.ok === expected && row.all === expected;
    };
    let lastReport = 0;
    await until(
      'every delivery succeeded',
      async () => {
        if (Date.now() - lastReport > 10_000) {
          lastReport = Date.now();
          const counts = await schema.db.query<{ status: string; n: number }>(
            'SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status',
          );
          console.log(
            `# kill burst: t=${Date.now() - started} ms ${JSON.stringify(counts)}, received ${receiver.requests.length}`,
          );
        }
        return done();
      },
      SETTLE_MS,
      200,
    );
    stopKilling = true;
    await killer;
    const settledAt = Date.now();

    // Nothing left leased, nothing not final.
    const [left] = await schema.db.query<{ leased: number; open: number }>(
      `SELECT (SELECT count(*) FROM delivery_queue WHERE lease_until < now())::int AS leased,
              count(*) FILTER (WHERE status <> 'succeeded')::int AS open
         FROM webhook_deliveries`,
    );
    assert.deepEqual(left, { leased: 0, open: 0 });

    // Every delivery's recorded success is an attempt the receiver got.
    const byDelivery = new Map<string, typeof receiver.requests>();
    for (const r of receiver.requests) {
      const id = r.headers['x-svc-delivery'] as string;
      byDelivery.set(id, [...(byDelivery.get(id) ?? []), r]);
    }
    const rows = await schema.db.query<{ id: string; attempt: number }>(
      'SELECT id, attempt FROM webhook_deliveries',
    );
    assert.equal(rows.length, expected);
    for (const row of rows) {
      const got = byDelivery.get(row.id) ?? [];
      assert.ok(
        got.some((r) => Number(r.headers['x-svc-attempt']) === row.attempt),
        `delivery ${row.id}: attempt ${row.attempt} recorded as succeeded never reached the receiver`,
      );
    }
    assert.equal(byDelivery.size, expected, 'the receiver saw every delivery and no other');

    // A duplicate is an earlier attempt of the same delivery that a kill cut off: it arrived at
    // most one lease before a kill, and the attempts that followed carry higher numbers.
    loopLag.disable();
    const stampSlack = 50 + Math.ceil(loopLag.max / 1e6);
    let duplicates = 0;
    const unexplained: string[] = [];
    for (const [id, got] of byDelivery) {
      const attempts = got.map((r) => Number(r.headers['x-svc-attempt']));
      const ordered = attempts.every((a, i) => i === 0 || a > (attempts[i - 1] as number));
      if (!ordered) {
        unexplained.push(
          `${id} attempts out of order: ${got.map((r) => `${r.headers['x-svc-attempt']}@${r.receivedAt - started}`).join(',')}`,
        );
      }
      for (const earlier of got.slice(0, -1)) {
        duplicates += 1;
        // Cut off by a kill of its worker, or on the wire: the receiver never finished its answer.
        const cut =
          earlier.answeredAt === undefined ||
          kills.some(
            (k) => earlier.receivedAt <= k.at + stampSlack && earlier.receivedAt >= k.at - LEASE_MS - 500,
          );
        if (!cut) {
          const nearest = kills.map((k) => `${k.what}@${k.at - started}`).join(' ');
          unexplained.push(
            `${id} attempts ${got.map((r) => `${r.headers['x-svc-attempt']}@${r.receivedAt - started}+${(r.answeredAt ?? Number.NaN) - r.receivedAt}`).join(',')} (kills: ${nearest}; stamps up to ${stampSlack} ms late)`,
          );
        }
      }
    }
    const secrets = new Map(tenant.webhooks.map((w) => [new URL(w.url).pathname, w.secret]));
    for (const r of receiver.requests)
      assert.ok(signatureMatches(secrets.get(r.path) as string, r.headers, r.body));

    const figures: Figures = {
      changes: CHANGES,
      rate: RATE,
      seed: SEED,
      events,
      deliveries: expected,
      received: receiver.requests.length,
      unique: byDelivery.size,
      duplicates,
      workerKills: kills.filter((k) => k.what !== 'serve').length,
      serveKills: kills.filter((k) => k.what === 'serve').length,
      feedRetries,
      feedSeconds: (fedAt - started) / 1000,
      settledSeconds: (settledAt - started) / 1000,
    };
    await Promise.all([serve?.proc.stop('SIGKILL'), ...workers.map((w) => w?.proc.stop('SIGKILL'))]);
    t.diagnostic(JSON.stringify(figures));
    console.log(`# kill burst: ${JSON.stringify(figures)}`);
    assert.deepEqual(unexplained, [], 'duplicates that no kill explains');
    if (process.env.SVC_KILLBURST_REPORT === '1') await report(figures);
  });
});

interface Figures {
  changes: number;
  rate: number;
  seed: number;
  events: number;
  deliveries: number;
  received: number;
  unique: number;
  duplicates: number;
  workerKills: number;
  serveKills: number;
  feedRetries: number;
  feedSeconds: number;
  settledSeconds: number;
}

async function report(f: Figures): Promise<void> {
  // scripts/test.mjs runs the suite from the repository's root.
  const path = join(process.cwd(), 'BENCHMARKS.md');
  const section = `## Kill burst

Measured by \`npm run bench:killburst\` (test/faults/kill-burst.test.ts on PostgreSQL and Redis;
CI runs the same file with 180 changes), ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, seed ${f.seed}.
One \`svc serve\` (feed, API and its embedded worker) and two \`svc worker\`; a worker SIGKILLed every
2 to 3 s and restarted, the serve SIGKILLed once and restarted on its ports; attempt time-out
${TIMEOUT_MS / 1000} s, lease ${LEASE_MS / 1000} s, three webhooks on one HTTPS receiver on loopback.

| | |
|---|---:|
| booking changes through the feed${f.rate ? ` (at ${f.rate}/s)` : ' (as fast as the feed takes them)'} | ${f.changes} |
| events in the log | ${f.events} |
| deliveries expected (events × 3) | ${f.deliveries} |
| distinct deliveries received | ${f.unique} |
| lost | ${f.deliveries - f.unique} |
| requests received | ${f.received} |
| duplicates (every one an attempt cut off by a kill) | ${f.duplicates} |
| worker kills / serve kills | ${f.workerKills} / ${f.serveKills} |
| feed PUTs sent again while the API was down | ${f.feedRetries} |
| feed finished / every delivery succeeded, s | ${f.feedSeconds.toFixed(1)} / ${f.settledSeconds.toFixed(1)} |
`;
  const markdown = await readFile(path, 'utf8').catch(() => '# Benchmarks\n');
  await writeFile(path, withMarkdownSection(markdown, '## Kill burst', section));
}

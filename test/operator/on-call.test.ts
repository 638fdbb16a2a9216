// The on-call view of every tenant's webhooks through the operator API: the list across
// organizations and its filters (organization, inactive, failing, consecutive failures), page by
// page; one webhook with its recent deliveries, their errors and its queue; each organization's
// backlog. The states come from a real worker delivering to a real receiver: one webhook's receiver
// answers 410 (dead after three attempts), another's 500 (failed, its next retry 30 s away).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { Position } from '../../src/http/cursor.js';
import {
  BACKLOG_SQL,
  RECENT_DELIVERIES_SQL,
  WEBHOOK_QUEUE_SQL,
  type WebhookFilters,
  webhookPageSql,
} from '../../src/operator/webhooks-queries.js';
import { OPERATOR_TOKEN } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { outputAfterExit, svc as svcCommand } from '../support/processes.js';
import { expectOk, type Tenant } from '../support/tenants.js';
import { until } from '../support/wait.js';
import { createWebhook, deliveryWorker, webhookService, webhookTenant } from '../support/webhooks.js';

// Two quick retries, then 30 s: a 410 is dead at its third attempt, a 500 waits in `failed` after it.
const { svc, receiver } = await webhookService({ SVC_WEBHOOK_RETRY_SCHEDULE: '0.05,0.05,30,30,30,30,30' });

const GONE = '/on-call/gone';
const BROKEN = '/on-call/broken';
receiver.respond((req) =>
  req.path.startsWith(GONE)
    ? { status: 410 }
    : req.path.startsWith(BROKEN)
      ? { status: 500 }
      : { status: 200 },
);

interface Hook {
  id: string;
  organization_id: string;
}

async function hook(t: Tenant, path: string): Promise<Hook> {
  const created = await createWebhook(svc, t, receiver.url(`${path}/${randomUUID()}`));
  return { id: created.id, organization_id: t.organization.id };
}

const ops = async (path: string) => expectOk(await svc.op('GET', path));
const ids = (page: { data: { id: string }[] }) => page.data.map((w) => w.id);

// Tenant A: a webhook that works, one answered 410, one answered 500. Tenant B: one that works, one
// paused. Bookings for each; a worker delivers until the states are reached, then stops.
const a = await webhookTenant(svc);
const b = await webhookTenant(svc);
const aOk = await hook(a, '/on-call/ok');
const aGone = await hook(a, GONE);
const aBroken = await hook(a, BROKEN);
const bOk = await hook(b, '/on-call/ok');
const bPaused = await hook(b, '/on-call/paused');
await expectOk(await svc.call('PATCH', `/webhooks/${bPaused.id}`, { key: b.key, body: { active: false } }));
for (let i = 0; i < 2; i++) await putBooking(svc, a.organization.id);
await putBooking(svc, b.organization.id);
{
  const worker = await deliveryWorker(svc);
  const deliveriesOf = async (id: string) => (await ops(`/webhooks/${id}`)).deliveries;
  await until('two deliveries to the 410 are dead', async () =>
    (await deliveriesOf(aGone.id)).every((d: { status: string }) => d.status === 'dead'),
  );
  await until('two deliveries to the 500 failed three times each, their next retry 30 s away', async () =>
    (await deliveriesOf(aBroken.id)).every(
      (d: { status: string; attempt: number; in_flight: boolean }) =>
        d.status === 'failed' && d.attempt === 3 && !d.in_flight,
    ),
  );
  await until(
    'the working webhooks delivered',
    async () =>
      (await deliveriesOf(aOk.id)).every((d: { status: string }) => d.status === 'succeeded') &&
      (await deliveriesOf(bOk.id)).every((d: { status: string }) => d.status === 'succeeded'),
  );
  await worker.stop(1000);
}

test('webhooks across organizations, newest first, by organization and activity', async () => {
  const ofA = await ops(`/webhooks?organization_id=${a.organization.id}`);
  assert.deepEqual(ids(ofA), [aBroken.id, aGone.id, aOk.id]);
  assert.equal(ofA.has_more, false);
  assert.equal(ofA.next_cursor, null);
  const inactive = await ops('/webhooks?active=false');
  assert.deepEqual(ids(inactive), [bPaused.id]);
  assert.equal(inactive.data[0].organization_id, b.organization.id);
  const all = await ops('/webhooks');
  assert.deepEqual(ids(all), [bPaused.id, bOk.id, aBroken.id, aGone.id, aOk.id]);
  assert.equal(all.data[2].consecutive_failures, 0);
  assert.equal(all.data[3].consecutive_failures, 2, 'two dead deliveries in a row');
});

test('failing: a delivery waiting for a retry after a failed attempt, or one dead in the last hour', async () => {
  assert.deepEqual(ids(await ops('/webhooks?failing=true')), [aBroken.id, aGone.id]);
  assert.deepEqual(ids(await ops(`/webhooks?failing=true&organization_id=${b.organization.id}`)), []);
  assert.deepEqual(ids(await ops('/webhooks?consecutive_failures_above=1')), [aGone.id]);
  assert.deepEqual(ids(await ops('/webhooks?consecutive_failures_above=2')), []);
  assert.deepEqual(ids(await ops('/webhooks?failing=true&active=true&consecutive_failures_above=0')), [
    aGone.id,
  ]);
});

test('pages: every webhook once, in order, with the filters kept by the caller', async () => {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { data: { id: string }[]; next_cursor: string | null; has_more: boolean } = await ops(
      `/webhooks?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
    );
    assert.equal(page.has_more, page.next_cursor !== null);
    seen.push(...ids(page));
    cursor = page.next_cursor;
  } while (cursor);
  assert.deepEqual(seen, [bPaused.id, bOk.id, aBroken.id, aGone.id, aOk.id]);

  const first = await ops(`/webhooks?limit=1&organization_id=${a.organization.id}`);
  const second = await ops(
    `/webhooks?limit=1&organization_id=${a.organization.id}&cursor=${first.next_cursor}`,
  );
  assert.deepEqual(ids(second), [aGone.id]);
  // A cursor is bound to its organization (or to all of them) as the public API's are.
  for (const path of [
    `/webhooks?cursor=${first.next_cursor}`,
    `/webhooks?organization_id=${b.organization.id}&cursor=${first.next_cursor}`,
    '/webhooks?cursor=nonsense',
  ]) {
    const res = await svc.op('GET', path);
    assert.equal(res.status, 400, path);
    assert.equal(res.body.error.code, 'invalid_cursor');
  }
});

test('bad filters are 400 validation_error naming the parameter', async () => {
  for (const [query, param] of [
    ['active=no', 'active'],
    ['failing=false', 'failing'],
    ['consecutive_failures_above=-1', 'consecutive_failures_above'],
    ['organization_id=acme', 'organization_id'],
    ['limit=0', 'limit'],
    ['since=2026-01-01', 'since'],
  ]) {
    const res = await svc.op('GET', `/webhooks?${query}`);
    assert.equal(res.status, 400, query);
    assert.equal(res.body.error.code, 'validation_error', query);
    assert.match(JSON.stringify(res.body.error.details), new RegExp(param as string), query);
  }
});

test('one webhook: its recent deliveries with their errors, and its queue', async () => {
  const gone = await ops(`/webhooks/${aGone.id}`);
  assert.equal(gone.organization_id, a.organization.id);
  assert.equal(gone.consecutive_failures, 2);
  assert.equal(gone.deliveries.length, 2);
  for (const d of gone.deliveries) {
    assert.equal(d.status, 'dead');
    assert.equal(d.attempt, 3, 'a permanent 4xx stops after three attempts');
    assert.equal(d.last_status, 410);
    assert.equal(d.in_flight, false);
    assert.equal(d.event_type, 'booking.created');
  }
  assert.deepEqual(gone.queue, {
    due: 0,
    oldest_due_at: null,
    oldest_due_seconds: null,
    in_flight: 0,
    scheduled: 0,
  });

  const broken = await ops(`/webhooks/${aBroken.id}?deliveries=1`);
  assert.equal(broken.deliveries.length, 1, 'as many as asked');
  assert.equal(broken.deliveries[0].last_status, 500);
  assert.equal(typeof broken.deliveries[0].last_error, 'string');
  assert.ok(broken.deliveries[0].next_retry_at);
  assert.equal(broken.queue.scheduled, 2, 'retries waiting for their time');
  assert.equal(broken.queue.due, 0);

  assert.equal((await svc.op('GET', `/webhooks/${randomUUID()}`)).status, 404);
  assert.equal((await svc.op('GET', `/webhooks/${aGone.id}?deliveries=101`)).status, 400);
});

test('backlog per organization: deliveries due and not leased, and the oldest one’s age', async () => {
  const c = await webhookTenant(svc);
  const cHook = await hook(c, '/on-call/ok');
  // No worker runs now: the feed's publish queues the deliveries, and they wait.
  for (let i = 0; i < 3; i++) await putBooking(svc, c.organization.id);
  const own = await ops(`/organizations/${c.organization.id}/backlog`);
  assert.equal(own.organization_id, c.organization.id);
  assert.equal(own.due, 3);
  assert.equal(own.in_flight, 0);
  assert.equal(own.webhooks_due, 1);
  assert.ok(own.oldest_due_seconds >= 0);
  assert.ok(Date.parse(own.oldest_due_at) <= Date.now() + 1000);

  const all = await ops('/backlog');
  assert.deepEqual(
    all.data.map((r: { organization_id: string }) => r.organization_id),
    [c.organization.id],
    'A waits only for retries not due yet; B has nothing',
  );
  // The same figures; the age grows between the two reads.
  const withoutAge = ({ oldest_due_seconds: _, ...rest }: { oldest_due_seconds: number }) => rest;
  assert.deepEqual(withoutAge(all.data[0]), withoutAge(own));
  assert.ok(all.data[0].oldest_due_seconds >= own.oldest_due_seconds);
  assert.deepEqual((await ops(`/backlog?organization_id=${a.organization.id}`)).data, []);
  assert.deepEqual(await ops(`/organizations/${b.organization.id}/backlog`), {
    organization_id: b.organization.id,
    due: 0,
    oldest_due_at: null,
    oldest_due_seconds: null,
    in_flight: 0,
    webhooks_due: 0,
  });
  assert.equal((await svc.op('GET', `/organizations/${randomUUID()}/backlog`)).status, 404);
  assert.equal((await ops(`/webhooks/${cHook.id}`)).queue.due, 3);
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function* nodes(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* nodes(child);
}

/** The plan of `sql` with sequential scans priced out: a table still read whole has no index for it. */
async function planOf(sql: string, params: unknown[]): Promise<PlanNode> {
  return svc.db.tx(async (q) => {
    await q.query('SET LOCAL enable_seqscan = off');
    const literal = (v: unknown) =>
      v === null ? 'NULL' : `'${(v instanceof Date ? v.toISOString() : String(v)).replaceAll("'", "''")}'`;
    const name = `plan_${randomUUID().replaceAll('-', '')}`;
    await q.query(`PREPARE ${name} AS ${sql}`);
    const [row] = await q.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) EXECUTE ${name}(${params.map(literal).join(', ')})`,
    );
    await q.query(`DEALLOCATE ${name}`);
    return (row as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan;
  });
}

const TABLES = ['webhooks', 'delivery_queue', 'webhook_deliveries'];

test('every read is served by an index: no table read whole, the list never sorted', async () => {
  const after: Position = { createdAt: new Date(), id: randomUUID() };
  const lists: [string, WebhookFilters, Position | null][] = [
    ['all', {}, null],
    ['all, after a position', {}, after],
    ['one organization', { organizationId: a.organization.id }, after],
    ['inactive', { active: false }, null],
    ['failing', { failing: true }, null],
    ['failing of one organization', { failing: true, organizationId: a.organization.id }, after],
    ['consecutive failures', { consecutiveFailuresAbove: 5 }, null],
  ];
  const reads: [string, string, unknown[]][] = [
    ...lists.map(([what, filters, position]): [string, string, unknown[]] => {
      const { sql, params } = webhookPageSql(filters, position, 26);
      return [`list: ${what}`, sql, params];
    }),
    ['recent deliveries', RECENT_DELIVERIES_SQL, [aGone.id, 20]],
    ['a webhook’s queue', WEBHOOK_QUEUE_SQL, [aGone.id]],
    ['backlog', BACKLOG_SQL, [null, 50]],
    ['backlog of one organization', BACKLOG_SQL, [a.organization.id, 50]],
  ];
  for (const [what, sql, params] of reads) {
    const plan = await planOf(sql, params);
    const whole = [...nodes(plan)].filter(
      (n) => n['Node Type'] === 'Seq Scan' && TABLES.includes(n['Relation Name'] ?? ''),
    );
    assert.deepEqual(whole, [], `${what} reads a table whole: ${JSON.stringify(plan)}`);
    if (what.startsWith('list')) {
      assert.ok(
        ![...nodes(plan)].some((n) => n['Node Type'] === 'Sort'),
        `${what} sorts: ${JSON.stringify(plan)}`,
      );
    }
  }
});

test('svc admin webhooks list --failing prints the same page', async () => {
  await svc.operator.listen({ host: '127.0.0.1', port: 0 });
  const admin = svcCommand(['admin', 'webhooks', 'list', '--failing', '--limit', '1'], {
    SVC_OPERATOR_URL: `http://127.0.0.1:${(svc.operator.server.address() as AddressInfo).port}`,
    SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
  });
  assert.equal(await admin.exited(), 0, admin.output());
  assert.deepEqual(JSON.parse(await outputAfterExit(admin)), await ops('/webhooks?failing=true&limit=1'));
});

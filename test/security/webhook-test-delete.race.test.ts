// POST /webhooks/{id}/test racing DELETE /webhooks/{id}: the test either is queued before the
// webhook goes (202, and the delete takes its delivery with it) or finds it gone (404). It never
// answers 500 (the delivery row inserted for a webhook deleted meanwhile, a foreign-key violation).
// The race shows on PostgreSQL, where the two requests run on separate connections.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError } from '../api/read-support.js';
import { serviceForFile } from '../support/context.js';
import { expectOk } from '../support/tenants.js';
import { createWebhook, webhookTenant } from '../support/webhooks.js';

// Names resolve to a public address: the url guard admits them, and nothing is ever delivered (no worker).
const svc = await serviceForFile({}, async () => [{ address: '93.184.216.34', family: 4 }]);

const ROUNDS = 40;

test(`${ROUNDS} races of a test against a delete: each test answers 202 or 404, never 500`, async () => {
  const t = await webhookTenant(svc);
  const answers = new Map<number, number>();
  for (let round = 0; round < ROUNDS; round++) {
    // Each round in a fresh minute of the limiter's clock (5 tests a minute per host, 60 an hour).
    svc.clock.advance(61_000);
    const hook = await createWebhook(svc, t, `https://hooks.example.com/r${round}`, ['booking.created']);
    // The delete starts with the test in even rounds, 1 to 4 ms after it in odd ones: the order in
    // which their statements reach the database varies.
    const del = async () => {
      if (round % 2 === 1) await new Promise((r) => setTimeout(r, 1 + (round % 4)));
      return svc.call('DELETE', `/webhooks/${hook.id}`, { key: t.key });
    };
    const [sent, deleted] = await Promise.all([
      svc.call('POST', `/webhooks/${hook.id}/test`, { key: t.key }),
      del(),
    ]);
    answers.set(sent!.status, (answers.get(sent!.status) ?? 0) + 1);
    await expectOk(deleted!);
    if (sent!.status === 404) assertError(sent!, 404, 'not_found');
    else assert.equal(sent!.status, 202, sent!.text);
    // Gone either way: no delivery outlives its webhook.
    assertError(await svc.call('GET', `/webhooks/${hook.id}/deliveries`, { key: t.key }), 404, 'not_found');
  }
  const [orphans] = await svc.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_deliveries d
     WHERE NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.id = d.webhook_id)`,
  );
  assert.equal(orphans?.n, 0);
  console.log(`# test vs delete: ${JSON.stringify(Object.fromEntries(answers))}`);
});

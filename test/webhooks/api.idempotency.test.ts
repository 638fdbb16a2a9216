// POST /webhooks with Idempotency-Key: the creation runs once, a replay never shows the secret
// again, concurrent requests create one webhook, and the record commits with the webhook or not
// at all (a failure inside the transaction, even at COMMIT, leaves neither behind).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fingerprint } from '../../src/http/idempotency.js';
import type { Resolver } from '../../src/security/url-guard.js';
import { assertError } from '../api/read-support.js';
import { type Response, serviceForFile } from '../support/context.js';
import type { Tenant } from '../support/tenants.js';
import { webhookTenant } from '../support/webhooks.js';

const resolve: Resolver = async (hostname) => {
  if (hostname.endsWith('.example.test')) return [{ address: '93.184.216.34', family: 4 }];
  throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
};
const svc = await serviceForFile({}, resolve);

const ROUTE = '/api/v1/webhooks';

const post = (t: Tenant, body: unknown, key?: string) =>
  svc.call('POST', '/webhooks', {
    key: t.key,
    body,
    headers: key === undefined ? {} : { 'idempotency-key': key },
  });

const bodyFor = (n: string) => ({
  url: `https://hooks.example.test/${n}`,
  events: ['booking.created'],
  description: `hook ${n}`,
});

async function webhookCount(t: Tenant): Promise<number> {
  const [row] = await svc.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM webhooks WHERE integration_id = $1',
    [t.integration.id],
  );
  return row?.n ?? -1;
}

interface KeyRow {
  fingerprint: string;
  completed_at: Date | null;
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_body: string | null;
}

async function keyRow(t: Tenant, key: string): Promise<KeyRow | undefined> {
  const [row] = await svc.db.query<KeyRow>(
    `SELECT fingerprint, completed_at, response_status, response_headers, response_body
     FROM idempotency_keys WHERE integration_id = $1 AND method = 'POST' AND route = $2 AND key = $3`,
    [t.integration.id, ROUTE, key],
  );
  return row;
}

function assertNoSqlIn(res: Response) {
  assert.ok(!/simulated|webhooks|trigger|insert|sql/i.test(res.body.error.message), res.text);
}

describe('replay', () => {
  test('the same key twice: one webhook; the replay has the same id, secret null, secret_shown_once', async () => {
    const t = await webhookTenant(svc);
    const body = bodyFor('once');
    const first = await post(t, body, 'create-1');
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    assert.match(first.body.secret, /^whsec_/);
    assert.equal(first.body.secret_shown_once, undefined);

    const second = await post(t, body, 'create-1');
    assert.equal(second.status, 201, second.text);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.match(String(second.headers['content-type']), /^application\/json/);
    assert.notEqual(second.headers['x-svc-request-id'], first.headers['x-svc-request-id']);
    assert.deepEqual(second.body, { ...first.body, secret: null, secret_shown_once: true });
    assert.ok(!second.text.includes(first.body.secret.slice(6)));
    assert.equal(await webhookCount(t), 1);

    const third = await post(t, { ...body }, 'create-1');
    assert.equal(third.headers['idempotent-replayed'], 'true');
    assert.equal(third.body.id, first.body.id);
    assert.equal(await webhookCount(t), 1);
  });

  test('the record is completed with 201 and keeps no secret', async () => {
    const t = await webhookTenant(svc);
    const first = await post(t, bodyFor('record'), 'rec');
    assert.equal(first.status, 201, first.text);
    const row = await keyRow(t, 'rec');
    assert.ok(row);
    assert.ok(row.completed_at instanceof Date, 'completed');
    assert.equal(row.response_status, 201);
    assert.ok(row.response_body?.includes('"secret":null'), row.response_body ?? '');
    assert.ok(!row.response_body?.includes(first.body.secret));
    assert.ok(!row.response_body?.includes(first.body.secret.slice(6)));
    assert.ok(!JSON.stringify(row.response_headers).includes(first.body.secret.slice(6)));
    const kept = JSON.parse(row.response_body ?? '{}');
    assert.deepEqual(kept, { ...first.body, secret: null, secret_shown_once: true });
  });

  test('the same key with another body: 409 idempotency_conflict, nothing more created', async () => {
    const t = await webhookTenant(svc);
    assert.equal((await post(t, bodyFor('a'), 'shared')).status, 201);
    for (const other of [
      bodyFor('b'),
      { ...bodyFor('a'), description: 'changed' },
      { ...bodyFor('a'), events: ['*'] },
    ]) {
      const res = await post(t, other, 'shared');
      assertError(res, 409, 'idempotency_conflict', { param: 'Idempotency-Key' });
      assert.equal(res.headers['idempotent-replayed'], undefined);
    }
    assert.equal(await webhookCount(t), 1);
    // The same data with its keys in another order is the same request.
    const reordered = await post(
      t,
      { description: 'hook a', events: ['booking.created'], url: bodyFor('a').url },
      'shared',
    );
    assert.equal(reordered.headers['idempotent-replayed'], 'true', reordered.text);
  });

  test('keys belong to the integration: another integration’s same key creates its own webhook', async () => {
    const t = await webhookTenant(svc);
    const sibling = await webhookTenant(svc, { organizationId: t.organization.id });
    const a = await post(t, bodyFor('x'), 'same-key');
    const b = await post(sibling, bodyFor('x'), 'same-key');
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.equal(b.headers['idempotent-replayed'], undefined);
    assert.notEqual(a.body.id, b.body.id);
    assert.match(b.body.secret, /^whsec_/);
  });

  test('without the header each POST creates one; a malformed key is 400 and creates nothing', async () => {
    const t = await webhookTenant(svc);
    assert.equal((await post(t, bodyFor('n'))).status, 201);
    assert.equal((await post(t, bodyFor('n'))).status, 201);
    assert.equal(await webhookCount(t), 2);
    for (const bad of [' lead', 'trail ', 'x'.repeat(256), 'tab\there']) {
      assertError(await post(t, bodyFor('n'), bad), 400, 'validation_error', { param: 'Idempotency-Key' });
    }
    assert.equal(await webhookCount(t), 2);
  });
});

describe('concurrency', () => {
  test('8 rounds of two simultaneous POSTs with one key: one webhook each round', async () => {
    const t = await webhookTenant(svc);
    for (let round = 0; round < 8; round += 1) {
      const key = `together-${round}`;
      const body = bodyFor(`r${round}`);
      const answers = await Promise.all([post(t, body, key), post(t, body, key)]);
      const summary = JSON.stringify(
        answers.map((a) => [a.status, a.headers['idempotent-replayed'], a.text]),
      );
      const executed = answers.filter(
        (a) => a.status === 201 && a.headers['idempotent-replayed'] === undefined,
      );
      assert.equal(executed.length, 1, summary);
      const winner = executed[0]!;
      assert.match(winner.body.secret, /^whsec_/);
      for (const other of answers) {
        if (other === winner) continue;
        if (other.status === 409) {
          assert.equal(other.body.error.code, 'idempotency_in_progress', summary);
        } else {
          assert.equal(other.status, 201, summary);
          assert.equal(other.headers['idempotent-replayed'], 'true', summary);
          assert.deepEqual(other.body, { ...winner.body, secret: null, secret_shown_once: true });
        }
      }
      assert.equal(await webhookCount(t), round + 1, `round ${round}: ${summary}`);
      const [rows] = await svc.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM webhooks WHERE integration_id = $1 AND description = $2',
        [t.integration.id, body.description],
      );
      assert.equal(rows?.n, 1);
      const row = await keyRow(t, key);
      assert.equal(row?.response_status, 201);
      assert.equal(JSON.parse(row?.response_body ?? '{}').id, winner.body.id);
      // After both, the key replays.
      const later = await post(t, body, key);
      assert.equal(later.headers['idempotent-replayed'], 'true');
      assert.equal(later.body.id, winner.body.id);
    }
  });
});

describe('the record commits with the webhook, or neither exists', () => {
  test('the insert fails inside the transaction: 500, no webhook, the claim released; a retry creates one', async () => {
    const t = await webhookTenant(svc);
    await svc.db.exec(`
      CREATE FUNCTION test_fail_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'simulated failure after the count check'; END $$;
      CREATE TRIGGER test_fail_insert BEFORE INSERT ON webhooks
        FOR EACH ROW EXECUTE FUNCTION test_fail_insert();`);
    let res: Response;
    try {
      res = await post(t, bodyFor('crash'), 'crash-key');
    } finally {
      await svc.db.exec('DROP TRIGGER test_fail_insert ON webhooks; DROP FUNCTION test_fail_insert();');
    }
    assertError(res, 500, 'internal');
    assertNoSqlIn(res);
    assert.equal(await webhookCount(t), 0);
    assert.equal(await keyRow(t, 'crash-key'), undefined, 'the claim was released');

    const retry = await post(t, bodyFor('crash'), 'crash-key');
    assert.equal(retry.status, 201, retry.text);
    assert.equal(retry.headers['idempotent-replayed'], undefined, 'ran again, not replayed');
    assert.match(retry.body.secret, /^whsec_/);
    assert.equal(await webhookCount(t), 1);
    const again = await post(t, bodyFor('crash'), 'crash-key');
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.id, retry.body.id);
    assert.equal(await webhookCount(t), 1);
  });

  test('a failure at COMMIT, after the record was written: both vanish; a retry creates exactly one', async () => {
    const t = await webhookTenant(svc);
    // Fires at COMMIT, after the insert AND the completion of the record: if the record were
    // written outside the webhook's transaction it would survive as a completed 201 for a webhook
    // that does not exist, and the retry would replay it instead of creating one.
    await svc.db.exec(`
      CREATE FUNCTION test_fail_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'simulated failure at commit'; END $$;
      CREATE CONSTRAINT TRIGGER test_fail_commit AFTER INSERT ON webhooks
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_fail_commit();`);
    let res: Response;
    try {
      res = await post(t, bodyFor('commit'), 'commit-key');
    } finally {
      await svc.db.exec('DROP TRIGGER test_fail_commit ON webhooks; DROP FUNCTION test_fail_commit();');
    }
    assertError(res, 500, 'internal');
    assertNoSqlIn(res);
    assert.equal(await webhookCount(t), 0);
    const row = await keyRow(t, 'commit-key');
    assert.ok(row === undefined || row.completed_at === null, `no completed record: ${JSON.stringify(row)}`);

    const retry = await post(t, bodyFor('commit'), 'commit-key');
    assert.equal(retry.status, 201, retry.text);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(await webhookCount(t), 1);
    const [stored] = await svc.db.query<{ id: string }>('SELECT id FROM webhooks WHERE integration_id = $1', [
      t.integration.id,
    ]);
    assert.equal(stored?.id, retry.body.id);
    const done = await keyRow(t, 'commit-key');
    assert.equal(done?.response_status, 201);
    assert.equal(JSON.parse(done?.response_body ?? '{}').id, retry.body.id);
  });

  test('a process that died mid-request left a bare claim: in progress until it expires, then taken over once', async () => {
    const t = await webhookTenant(svc);
    const body = bodyFor('orphan');
    const print = fingerprint({ method: 'POST', params: {}, query: {}, body });
    // What a process that died before its COMMIT leaves: a claim, no record, no webhook.
    await svc.db.query(
      `INSERT INTO idempotency_keys (integration_id, method, route, key, fingerprint, claimed_at)
       VALUES ($1, 'POST', $2, 'orphan', $3, now() - interval '1 minute')`,
      [t.integration.id, ROUTE, print],
    );
    assertError(await post(t, body, 'orphan'), 409, 'idempotency_in_progress', { param: 'Idempotency-Key' });
    assert.equal(await webhookCount(t), 0);

    await svc.db.query(
      `UPDATE idempotency_keys SET claimed_at = now() - interval '6 minutes'
       WHERE integration_id = $1 AND key = 'orphan'`,
      [t.integration.id],
    );
    const [a, b] = await Promise.all([post(t, body, 'orphan'), post(t, body, 'orphan')]);
    const executed = [a, b].filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined);
    assert.equal(executed.length, 1, JSON.stringify([a?.text, b?.text]));
    assert.equal(await webhookCount(t), 1);
    const row = await keyRow(t, 'orphan');
    assert.equal(row?.response_status, 201);
    assert.ok(row?.completed_at);
  });
});

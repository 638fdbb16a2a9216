// Several requests with one key at the same time, abandoned claims, and two API instances that
// share nothing but the database.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { App } from '../../src/http/kit.js';
import { type Response, startService, type TestService } from '../support/context.js';
import { createTenant, type Tenant } from '../support/tenants.js';
import { buildProbeApp, gate, newProbe, type Probe, send, started } from './idempotency.fixture.js';

let svc: TestService;
let app: App;
let other: App;
let probe: Probe;
before(async () => {
  svc = await startService();
  probe = newProbe();
  app = await buildProbeApp(svc, probe);
  // A second instance: its own kit, guard, identity cache and limits; only the database is shared.
  other = await buildProbeApp(svc, probe);
});
after(async () => {
  await app.close();
  await other.close();
  await svc.close();
});

const tenant = () => createTenant(svc, { scopes: ['bookings:read'] });

/** Makes every claim of the integration look `minutes` old. */
const ageClaims = (t: Tenant, minutes: number) =>
  svc.db.query(
    `UPDATE idempotency_keys SET claimed_at = claimed_at - make_interval(mins => $2) WHERE integration_id = $1`,
    [t.integration.id, minutes],
  );

/** Every answer but the executing one is in_progress or a replay of the executing one. */
function assertOneExecution(responses: Response[], name: string, run: number) {
  const executed = responses.filter(
    (r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined,
  );
  assert.equal(executed.length, 1, JSON.stringify(responses.map((r) => [r.status, r.text])));
  assert.deepEqual(executed[0]!.body, { name, run });
  for (const r of responses) {
    if (r === executed[0]) continue;
    if (r.status === 409) assert.equal(r.body.error.code, 'idempotency_in_progress');
    else {
      assert.equal(r.status, 201);
      assert.equal(r.headers['idempotent-replayed'], 'true');
      assert.deepEqual(r.body, { name, run });
    }
  }
}

describe('Idempotency-Key: concurrency', () => {
  test('requests sent together with one key execute exactly once', async () => {
    const t = await tenant();
    for (let round = 0; round < 8; round += 1) {
      const name = `together-${round}`;
      const responses = await Promise.all(
        [app, other, app, other].map((a) => send(a, t.key, `/probe/${name}`, {}, `k-${round}`)),
      );
      assert.equal(probe.runs.get(name), 1, `round ${round}`);
      assertOneExecution(responses, name, 1);
    }
    const [row] = await svc.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM idempotency_keys WHERE integration_id = $1',
      [t.integration.id],
    );
    assert.equal(row?.n, 8);
  });

  test('a second instance replays what the first stored', async () => {
    const t = await tenant();
    const first = await send(app, t.key, '/probe/cross', {}, 'k');
    const second = await send(other, t.key, '/probe/cross', {}, 'k');
    assert.equal(first.status, 201);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(second.text, first.text);
    assert.equal(probe.runs.get('cross'), 1);
  });
});

describe('Idempotency-Key: abandoned claims', () => {
  test('a claim younger than the timeout stays in progress', async () => {
    const t = await tenant();
    const open = gate(probe);
    const first = send(app, t.key, '/probe/young', {}, 'k');
    await started(probe, 'young', 1);
    await ageClaims(t, 4);
    const res = await send(other, t.key, '/probe/young', {}, 'k');
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'idempotency_in_progress');
    open();
    await first;
    assert.equal(probe.runs.get('young'), 1);
  });

  test('a claim older than the timeout is taken over; the stale owner cannot overwrite the record', async () => {
    const t = await tenant();
    const openFirst = gate(probe);
    const first = send(app, t.key, '/probe/takeover', {}, 'k');
    await started(probe, 'takeover', 1);
    await ageClaims(t, 6);

    const second = await (async () => {
      const openSecond = gate(probe);
      const pending = send(other, t.key, '/probe/takeover', {}, 'k');
      await started(probe, 'takeover', 2);
      openSecond();
      return pending;
    })();
    assert.equal(second.status, 201);
    assert.deepEqual(second.body, { name: 'takeover', run: 2 });

    openFirst();
    assert.deepEqual((await first).body, { name: 'takeover', run: 1 }, 'its client still gets an answer');
    const replay = await send(app, t.key, '/probe/takeover', {}, 'k');
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body, { name: 'takeover', run: 2 }, 'the record is the taker’s');
    assert.equal(probe.runs.get('takeover'), 2);
  });

  test('several requests racing for one abandoned claim: exactly one takes it over', async () => {
    const t = await tenant();
    const openFirst = gate(probe);
    const first = send(app, t.key, '/probe/race', {}, 'k');
    await started(probe, 'race', 1);
    await ageClaims(t, 10);

    const openTakers = gate(probe);
    const racing = Promise.all([app, other, app, other].map((a) => send(a, t.key, '/probe/race', {}, 'k')));
    await started(probe, 'race', 2);
    openTakers();
    const responses = await racing;
    openFirst();
    await first;
    assert.equal(probe.runs.get('race'), 2, 'one takeover among four');
    assertOneExecution(responses, 'race', 2);
  });

  test('an abandoned claim is not taken over by a different request', async () => {
    const t = await tenant();
    const open = gate(probe);
    const first = send(app, t.key, '/probe/abandoned-diff', {}, 'k');
    await started(probe, 'abandoned-diff', 1);
    await ageClaims(t, 6);
    const res = await send(other, t.key, '/probe/abandoned-diff', { reject: true }, 'k');
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'idempotency_conflict');
    open();
    await first;
    assert.equal(probe.runs.get('abandoned-diff'), 1);
  });
});

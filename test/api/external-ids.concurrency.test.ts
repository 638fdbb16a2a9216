// Two public API instances on one database, racing on the same links: the unique index and the
// idempotency record decide, never a read before the write.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { buildPublicApp, PUBLIC_PREFIX } from '../../src/apps/public.js';
import { createIdentityCache } from '../../src/http/auth.js';
import type { App } from '../../src/http/kit.js';
import { createMemoryStore } from '../../src/ratelimit/memory.js';
import { type Response, startService, type TestService } from '../support/context.js';
import { putBooking } from '../support/feed.js';
import { bookedTenant, linkPath } from './external-ids.fixture.js';

let svc: TestService;
let second: App;
before(async () => {
  svc = await startService();
  // Its own kit, guard, identity cache and limits: only the database is shared, as between processes.
  second = await buildPublicApp({
    ...svc.deps,
    identities: createIdentityCache(svc.db, svc.config.authCacheTtlMs, svc.clock.now),
    limiter: createMemoryStore(svc.clock.now),
  });
  await second.ready();
});
after(async () => {
  await second.close();
  await svc.close();
});

async function put(
  app: App,
  key: string,
  bookingId: string,
  externalId: string,
  idempotencyKey?: string,
): Promise<Response> {
  const res = await app.inject({
    method: 'PUT',
    url: PUBLIC_PREFIX + linkPath(bookingId),
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    payload: JSON.stringify({ external_id: externalId }),
  });
  return { status: res.statusCode, headers: res.headers, body: res.json(), text: res.body };
}

describe('two instances, one database', () => {
  test('one external_id raced onto two bookings: exactly one wins, the other is 409 conflict', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const other = randomUUID();
    await putBooking(svc, tenant.organization.id, {}, other);
    for (let round = 0; round < 6; round += 1) {
      const value = `RACE-${round}`;
      const [a, b] = await Promise.all([
        put(svc.api, tenant.key, bookingId, value),
        put(second, tenant.key, other, value),
      ]);
      const statuses = [a.status, b.status].sort();
      assert.deepEqual(statuses, [200, 409], `${a.text} ${b.text}`);
      const loser = a.status === 409 ? a : b;
      assert.equal(loser.body.error.code, 'conflict');
      assert.deepEqual(loser.body.error.details, { field: 'external_id' });
      const rows = await svc.db.query<{ booking_id: string }>(
        'SELECT booking_id FROM booking_external_ids WHERE integration_id = $1 AND external_id = $2',
        [tenant.integration.id, value],
      );
      assert.equal(rows.length, 1);
      // Free both bookings for the next round.
      await svc.db.query('DELETE FROM booking_external_ids WHERE integration_id = $1', [
        tenant.integration.id,
      ]);
    }
  });

  test('two values raced onto one booking: both succeed and one link remains', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const [a, b] = await Promise.all([
      put(svc.api, tenant.key, bookingId, 'LEFT'),
      put(second, tenant.key, bookingId, 'RIGHT'),
    ]);
    assert.deepEqual([a.status, b.status], [200, 200]);
    const rows = await svc.db.query<{ external_id: string }>(
      'SELECT external_id FROM booking_external_ids WHERE booking_id = $1',
      [bookingId],
    );
    assert.equal(rows.length, 1);
    assert.ok(['LEFT', 'RIGHT'].includes(rows[0]!.external_id));
  });

  test('one Idempotency-Key through both instances at once: one execution, then replays', async () => {
    const { tenant, bookingId } = await bookedTenant(svc);
    const responses = await Promise.all([
      put(svc.api, tenant.key, bookingId, 'ONCE', 'idem-both'),
      put(second, tenant.key, bookingId, 'ONCE', 'idem-both'),
    ]);
    const fresh = responses.filter((r) => r.status === 200 && r.headers['idempotent-replayed'] === undefined);
    assert.equal(fresh.length, 1, responses.map((r) => r.text).join(' | '));
    for (const r of responses) {
      if (r === fresh[0]) continue;
      if (r.status === 409) assert.equal(r.body.error.code, 'idempotency_in_progress');
      else assert.equal(r.headers['idempotent-replayed'], 'true');
    }
    const replay = await put(second, tenant.key, bookingId, 'ONCE', 'idem-both');
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body, fresh[0]!.body);
  });
});

test('an answer means a record to replay: a record that cannot be written takes the link back with it', async () => {
  const { tenant, bookingId } = await bookedTenant(svc);
  await svc.db.exec(`
    CREATE FUNCTION refuse_completion() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'refused'; END $$;
    CREATE TRIGGER refuse_completion BEFORE UPDATE ON idempotency_keys FOR EACH ROW
      WHEN (NEW.completed_at IS NOT NULL) EXECUTE FUNCTION refuse_completion();`);
  let failed: Response;
  try {
    failed = await put(svc.api, tenant.key, bookingId, 'KEPT', 'idem-record');
  } finally {
    await svc.db.exec(
      'DROP TRIGGER refuse_completion ON idempotency_keys; DROP FUNCTION refuse_completion()',
    );
  }
  assert.equal(failed.status, 500, failed.text);
  const links = await svc.db.query('SELECT 1 FROM booking_external_ids WHERE booking_id = $1', [bookingId]);
  assert.equal(links.length, 0, 'the link went with its record');
  const retried = await put(svc.api, tenant.key, bookingId, 'KEPT', 'idem-record');
  assert.equal(retried.status, 200, retried.text);
  assert.equal(retried.headers['idempotent-replayed'], undefined, 'the retry ran: nothing had been kept');
  const replay = await put(svc.api, tenant.key, bookingId, 'KEPT', 'idem-record');
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.deepEqual(replay.body, retried.body);
});

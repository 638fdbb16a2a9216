// Writes that race: the checks inside the transaction cannot see a concurrent transaction's rows,
// so the constraints decide, and their refusal must be a 400/409 naming the field, never a 500.
// On PGlite the requests run one after another; on PostgreSQL they truly overlap.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { startService, type TestService } from '../support/context.js';
import { bookingBody, putDriver } from '../support/feed.js';
import { eventsOf, newOrg } from './feed.fixture.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

const statuses = (responses: { status: number }[]) => responses.map((r) => r.status);

test('parallel creations of one booking id: one 201, the others 200 or 409 on id', async () => {
  const org = await newOrg(svc, { outbox_enabled: true });
  const id = randomUUID();
  const path = `/organizations/${org.id}/bookings/${id}`;
  const responses = await Promise.all(Array.from({ length: 6 }, () => svc.op('PUT', path, bookingBody())));
  assert.equal(statuses(responses).filter((s) => s === 201).length, 1, String(statuses(responses)));
  for (const res of responses) {
    if (res.status === 409) assert.deepEqual(res.body.error.details, { field: 'id' });
    else assert.ok(res.status === 200 || res.status === 201, res.text);
  }
  const created = (await eventsOf(svc, org.id)).filter((e) => e.type === 'booking.created');
  assert.equal(created.length, 1);
});

test('parallel bookings claiming one number: one wins, the others 409 on reference', async () => {
  const org = await newOrg(svc);
  const body = bookingBody({ reference: `${org.code}4242` });
  const responses = await Promise.all(
    Array.from({ length: 6 }, () => svc.op('PUT', `/organizations/${org.id}/bookings/${randomUUID()}`, body)),
  );
  assert.equal(statuses(responses).filter((s) => s === 201).length, 1, String(statuses(responses)));
  for (const res of responses.filter((r) => r.status !== 201)) {
    assert.equal(res.status, 409, res.text);
    assert.deepEqual(res.body.error.details, { field: 'reference' });
  }
});

test('a driver deleted while bookings are assigned to it: 201 then unassigned, or 400 on driver_id', async () => {
  const org = await newOrg(svc);
  for (let round = 0; round < 5; round += 1) {
    const driver = (await putDriver(svc, org.id)).id;
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const pending = ids.map((id) =>
      svc.op('PUT', `/organizations/${org.id}/bookings/${id}`, bookingBody({ driver_id: driver })),
    );
    // Rounds shift the delete a little so that it lands before, between and after the writes.
    await new Promise((resolve) => setTimeout(resolve, round));
    const removed = await svc.op('DELETE', `/organizations/${org.id}/drivers/${driver}`);
    const writes = await Promise.all(pending);
    assert.equal(removed.status, 200, removed.text);
    for (const res of writes) {
      if (res.status === 400) assert.deepEqual(res.body.error.details, { field: 'driver_id' });
      else assert.equal(res.status, 201, res.text);
    }
    const rows = await svc.db.query('SELECT 1 FROM bookings WHERE driver_id = $1', [driver]);
    assert.deepEqual(rows, [], 'no booking points at a deleted driver');
  }
});

// docs/operator-feed.md shows a complete booking body; the README's production section sends
// examples/feed-booking.json. They are the same body, and the feed stores it as sent.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { serviceForFile } from '../support/context.js';
import { newOrg } from './feed.fixture.js';

const example = JSON.parse(readFileSync('examples/feed-booking.json', 'utf8'));

function documentedBody(): unknown {
  const doc = readFileSync('docs/operator-feed.md', 'utf8');
  const blocks = [...doc.matchAll(/^```json\n([\s\S]*?)^```/gm)];
  assert.equal(blocks.length, 1, 'one JSON block: the booking body');
  return JSON.parse(blocks[0]?.[1] ?? '');
}

test('the documented booking body is examples/feed-booking.json', () => {
  assert.deepEqual(documentedBody(), example);
});

test('the feed stores the documented body as sent (201)', async () => {
  const svc = await serviceForFile();
  const org = await newOrg(svc);
  const id = randomUUID();
  const res = await svc.op('PUT', `/organizations/${org.id}/bookings/${id}`, documentedBody());
  assert.equal(res.status, 201, res.text);
  const { id: storedId, originator_organization_id, reference, created_at, updated_at, ...stored } = res.body;
  assert.equal(storedId, id);
  assert.equal(originator_organization_id, org.id);
  assert.deepEqual(stored, example);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deliveryBodies } from './body.js';
import type { AttemptContext } from './engine.js';

const ORG = '7d3c9a52-0000-4000-8000-000000000001';
const context = (over: Partial<AttemptContext> = {}): AttemptContext => ({
  webhook_active: true,
  url: 'https://receiver.example/h',
  secret: Buffer.alloc(0),
  previous_secret: null,
  previous_valid: false,
  integration_active: true,
  scopes: ['bookings:read'],
  organization_id: ORG,
  integration_id: '7d3c9a52-0000-4000-8000-000000000003',
  webhooks_enabled: true,
  event_type: 'booking.created',
  event_created_at: new Date('2026-11-25T10:00:00.000Z'),
  resource_type: 'booking',
  resource_id: '7d3c9a52-0000-4000-8000-000000000002',
  changes: [],
  previous_status: null,
  booking: null,
  link_external_id: null,
  ...over,
});

/** A context that counts how often a body is shaped from it. */
function counted(over: Partial<AttemptContext> = {}) {
  const tally = { shaped: 0 };
  const ctx = context(over);
  Object.defineProperty(ctx, 'changes', {
    get() {
      tally.shaped++;
      return [];
    },
  });
  return { ctx, tally };
}

test('one body per event and view of it: scopes and external id read at the claim shape it again', () => {
  const bodyOf = deliveryBodies();
  const a = counted();
  const first = bodyOf('e1', a.ctx);
  assert.equal(JSON.parse(first.toString()).id, 'e1');
  const sameView = counted({ url: 'https://other.example/h' });
  assert.equal(bodyOf('e1', sameView.ctx), first);
  assert.equal(sameView.tally.shaped, 0, 'another webhook of the same view: the body is not shaped again');
  for (const over of [
    { link_external_id: 'ERP-1' },
    { scopes: ['bookings:read', 'pricing:read'] },
    { organization_id: '7d3c9a52-0000-4000-8000-000000000009' },
  ]) {
    const other = counted(over);
    bodyOf('e1', other.ctx);
    assert.equal(other.tally.shaped, 1, `shaped again for ${JSON.stringify(over)}`);
  }
  assert.equal(JSON.parse(bodyOf('e2', context()).toString()).id, 'e2', 'another event');
});

test('the memory is bounded: old bodies are shaped again, not kept', () => {
  const bodyOf = deliveryBodies();
  const old = counted();
  bodyOf('old', old.ctx);
  for (let i = 0; i < 300; i++) bodyOf(`e${i}`, context());
  bodyOf('old', old.ctx);
  assert.equal(old.tally.shaped, 2, 'the oldest body was forgotten and shaped again');
});

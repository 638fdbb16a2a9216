import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FAST_ANSWER_MS, webhookSlots } from './webhook-slots.js';

test('room at a webhook: its bound, or the cap of the latest claim if lower, less the attempts under way', () => {
  const slots = webhookSlots(4);
  slots.started('a');
  assert.equal(slots.roomAt('a'), 3);
  slots.capped('a', 2);
  assert.equal(slots.roomAt('a'), 1);
  slots.started('a');
  slots.started('a');
  assert.equal(slots.roomAt('a'), 0, 'past a cap lowered after attempts started: none starts');
  slots.capped('a', 9);
  assert.equal(slots.roomAt('a'), 1, 'never past the bound');
  assert.equal(slots.roomAt('b'), 4, 'a webhook never claimed: its bound');
});

test('a cap is forgotten only once no attempt of its webhook is under way', () => {
  const slots = webhookSlots(4);
  slots.capped('a', 1);
  slots.started('a');
  slots.forget('a');
  assert.equal(slots.roomAt('a'), 0, 'kept while an attempt is under way');
  slots.ended('a');
  assert.equal(slots.sendingTo('a'), 0);
  assert.deepEqual([...slots.sending()], []);
  slots.forget('a');
  assert.equal(slots.roomAt('a'), 4);
});

test('fast: the webhooks held or sent to whose receivers answered their last attempt fast', () => {
  const slots = webhookSlots(4);
  slots.answered('held-fast', FAST_ANSWER_MS - 1);
  slots.answered('held-slow', FAST_ANSWER_MS);
  slots.answered('sent-fast', 3);
  slots.answered('idle-fast', 3);
  slots.started('sent-fast');
  assert.deepEqual(slots.fast(['held-fast', 'held-slow', 'never-answered']).sort(), [
    'held-fast',
    'sent-fast',
  ]);
  slots.answered('held-fast', FAST_ANSWER_MS + 100);
  assert.deepEqual(slots.fast(['held-fast']), ['sent-fast'], 'judged by the last answer');
});

test('all answered within: only while every webhook held or sent to did, and some webhook is', () => {
  const slots = webhookSlots(4);
  assert.equal(slots.allAnsweredWithin([], 50), false, 'nothing held or sent to: not known');
  slots.answered('a', 3);
  slots.answered('b', 49);
  slots.started('a');
  assert.equal(slots.allAnsweredWithin(['b'], 50), true);
  assert.equal(slots.allAnsweredWithin(['b', 'never-answered'], 50), false, 'a receiver not yet answered');
  slots.answered('b', 50);
  assert.equal(slots.allAnsweredWithin(['b'], 50), false, 'one slower receiver among them');
  assert.equal(slots.allAnsweredWithin([], 50), true, 'the webhooks sent to count with those held');
});

test('answer times are remembered for the 1,000 webhooks answered last', () => {
  const slots = webhookSlots(4);
  slots.answered('first', 1);
  for (let i = 0; i < 999; i++) slots.answered(`w${i}`, 1);
  slots.answered('first', 1);
  slots.answered('one-more', 1);
  assert.deepEqual(slots.fast(['first', 'w0', 'w1']), ['first', 'w1'], 'the oldest answer forgotten first');
});

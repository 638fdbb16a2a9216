import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { createFailureLog, failureKind } from './failure-log.js';

test('the first failure of a kind is logged whole; the rest are counted onto the next one logged', () => {
  let t = 0;
  const lines: Record<string, unknown>[] = [];
  const logger = { error: (obj: Record<string, unknown>) => lines.push(obj) } as unknown as FastifyBaseLogger;
  const log = createFailureLog(30_000, () => t);
  for (let i = 0; i < 50; i++) log(logger, new Error(`connect ECONNREFUSED 10.0.0.${i}:5432`), 'failure');
  log(logger, new TypeError('x is undefined'), 'failure');
  assert.equal(lines.length, 2, 'one of each kind');
  t += 30_000;
  log(logger, new Error('connect ECONNREFUSED 10.0.0.1:5432'), 'failure');
  assert.equal(lines.length, 3);
  assert.equal(lines[2]?.repeated_unlogged, 49);
});

test('ids and numbers do not make a new kind; codes and messages do', () => {
  assert.equal(
    failureKind(new Error('row 0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10 at 12')),
    failureKind(new Error('row 1b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a11 at 13')),
  );
  assert.notEqual(failureKind(new Error('a')), failureKind(new Error('b')));
});

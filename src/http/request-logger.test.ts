import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { createLogger } from '../logger.js';
import { addLogFields, requestLogger } from './request-logger.js';

/** A logger at `level` writing into `lines`, counting the children made from it. */
function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const parent = createLogger(level, sink);
  const counted = { children: 0 };
  // pino's children inherit from their parent: `this` is whichever logger the child is made from.
  const child = parent.child;
  parent.child = function (this: FastifyBaseLogger, bindings, options) {
    counted.children += 1;
    return child.call(this, bindings, options);
  };
  return { parent, lines, counted };
}

const KEY = `svc_live_${'k'.repeat(40)}`;

test('below the level nothing is written and no child logger is made', () => {
  const { parent, lines, counted } = capture('warn');
  const log = requestLogger(parent, { reqId: 'req_1' }, {});
  log.info({ path: '/x' }, 'incoming request');
  log.debug('detail');
  log.trace('detail');
  assert.equal(lines.length, 0);
  assert.equal(counted.children, 0);
  assert.equal(log.level, 'warn');
});

test('a line at the level carries the request id and the redaction of the parent', () => {
  const { parent, lines, counted } = capture('warn');
  const log = requestLogger(parent, { reqId: 'req_2' }, {});
  log.warn({ headers: { authorization: `Bearer ${KEY}` } }, 'first');
  log.error(new Error('boom'), 'second');
  assert.equal(counted.children, 1, 'one child for the whole request');
  assert.deepEqual(
    lines.map((l) => [l.reqId, l.msg]),
    [
      ['req_2', 'first'],
      ['req_2', 'second'],
    ],
  );
  assert.deepEqual(lines[0]?.headers, { authorization: '[redacted]' });
  assert.equal(JSON.stringify(lines).includes(KEY), false);
  assert.equal((lines[1]?.err as { message?: string } | undefined)?.message, 'boom');
});

test('children of the request logger keep its bindings; a route level gets a child at once', () => {
  const { parent, lines, counted } = capture('info');
  const log = requestLogger(parent, { reqId: 'req_3' }, {});
  log.child({ part: 'delivery' }).info('nested');
  assert.deepEqual([lines[0]?.reqId, lines[0]?.part, lines[0]?.msg], ['req_3', 'delivery', 'nested']);

  const own: FastifyBaseLogger = requestLogger(parent, { reqId: 'req_4' }, { level: 'error' });
  assert.equal(counted.children, 3);
  assert.equal(own.level, 'error');
  own.warn('dropped');
  assert.equal(lines.length, 1);
});

test('fields added to the request logger reach every later line, before or after its first', () => {
  const { parent, lines, counted } = capture('info');
  const log = requestLogger(parent, { reqId: 'req_5' }, {});
  addLogFields(log, { organization_id: 'org_1' });
  assert.equal(counted.children, 0, 'remembered, no child made yet');
  log.info('first');
  addLogFields(log, { error_code: 'not_found' });
  log.info('second');
  assert.deepEqual(
    lines.map((l) => [l.reqId, l.organization_id, l.error_code, l.msg]),
    [
      ['req_5', 'org_1', undefined, 'first'],
      ['req_5', 'org_1', 'not_found', 'second'],
    ],
  );
  const own = requestLogger(parent, { reqId: 'req_6' }, { level: 'info' });
  addLogFields(own, { integration_id: 'int_1' });
  own.info('third');
  assert.equal(lines[2]?.integration_id, 'int_1', "a route's own pino child takes them too");
});

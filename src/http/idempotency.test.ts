import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { canonicalJson, fingerprint, isValidIdempotencyKey } from './idempotency.js';

describe('Idempotency-Key format', () => {
  test('accepts 1 to 255 printable ASCII characters with inner spaces', () => {
    for (const key of [
      'a',
      '~',
      'order-42',
      'a b',
      '!"#$%&\'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~',
      'k'.repeat(255),
    ]) {
      assert.equal(isValidIdempotencyKey(key), true, key);
    }
  });

  test('refuses empty, too long, leading or trailing space, control and non-ASCII characters', () => {
    for (const key of [
      '',
      ' ',
      ' a',
      'a ',
      'k'.repeat(256),
      'a\tb',
      'a\nb',
      'a\u0000',
      'a\u007f',
      'café',
      '🔑',
      'ａ',
    ]) {
      assert.equal(isValidIdempotencyKey(key), false, JSON.stringify(key));
    }
  });
});

describe('canonical JSON', () => {
  test('sorts keys at every depth and keeps array order', () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }),
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  test('equal data gives equal text whatever the key order', () => {
    assert.equal(canonicalJson({ x: 'é', y: [1, 2] }), canonicalJson({ y: [1, 2], x: 'é' }));
    assert.notEqual(canonicalJson([1, 2]), canonicalJson([2, 1]));
  });

  test('an absent body and undefined members read as null or absent', () => {
    assert.equal(canonicalJson(undefined), 'null');
    assert.equal(canonicalJson({ a: undefined, b: 1 }), '{"b":1}');
    assert.equal(canonicalJson('a"b'), '"a\\"b"');
  });
});

describe('fingerprint', () => {
  const base = { method: 'PUT', params: { id: 'x' }, query: {}, body: { external_id: 'A-1', n: 2 } };

  test('ignores key order of the body', () => {
    assert.equal(fingerprint(base), fingerprint({ ...base, body: { n: 2, external_id: 'A-1' } }));
  });

  test('changes with the method, the concrete path, the query and the body', () => {
    const print = fingerprint(base);
    assert.notEqual(print, fingerprint({ ...base, method: 'POST' }));
    assert.notEqual(print, fingerprint({ ...base, params: { id: 'y' } }));
    assert.notEqual(print, fingerprint({ ...base, query: { a: '1' } }));
    assert.notEqual(print, fingerprint({ ...base, body: { external_id: 'A-2', n: 2 } }));
    assert.match(print, /^[0-9a-f]{64}$/);
  });
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compilePending, compileValidator } from './validation.js';

test('a route schema that is not valid JSON Schema is refused by compilePending, before any request', () => {
  compileValidator({
    schema: { type: 'object', properties: { id: { type: 'string' } } },
    httpPart: 'params',
  });
  // Ajv compiles this one without a word: only the meta-schema refuses it.
  compileValidator({
    schema: { type: 'object', properties: { n: { type: 'string', maxLength: -1 } } },
    httpPart: 'body',
  });
  assert.throws(() => compilePending(), /not a valid JSON Schema: .*maxLength must be >= 0/);
});

test('a validator compiles at its first use and then checks as its schema says', () => {
  const validate = compileValidator({
    schema: { type: 'object', properties: { limit: { type: 'integer', maximum: 100 } } },
    httpPart: 'querystring',
  });
  assert.equal(validate({ limit: '7' }), true);
  assert.equal(validate({ limit: '101' }), false);
  assert.equal(validate.errors?.[0]?.keyword, 'maximum');
});

// The contract travels with the repository (docs/contract/), so the README's link works in any
// clone. Where the shared specification sits beside the project, the copy must be that text, byte
// for byte: a change to the contract is then a change here too, reviewed with the code it asks for.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

const COPY = 'docs/contract/integration-api-v1.md';
const SHARED = '../shared/spec/integration-api-v1.md';

test('the README links to the copy of the contract in the repository', () => {
  const readme = readFileSync('README.md', 'utf8');
  assert.ok(readme.includes(`](${COPY})`), 'README links to docs/contract/integration-api-v1.md');
  assert.ok(!readme.includes('](../'), 'no README link leaves the repository');
  assert.match(readFileSync(COPY, 'utf8'), /^# /, 'the copy is there');
});

test('the copy matches the shared specification', {
  skip: !existsSync(SHARED) && `${SHARED} is not here`,
}, () => {
  assert.equal(
    readFileSync(COPY, 'utf8'),
    readFileSync(SHARED, 'utf8'),
    `${COPY} differs from ${SHARED}: copy the shared specification again (cp ${SHARED} ${COPY})`,
  );
});

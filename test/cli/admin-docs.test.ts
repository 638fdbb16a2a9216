// The `svc admin` lines of docs/operator-api.md parse as `svc admin` parses them: a documented
// command that answers `unexpected argument` (a boolean given a value, say) fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { adminRequest } from '../../src/admin.js';

/** Shell words of one line: spaces split, single and double quotes group (no escapes in the docs). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
}

const lines = (readFileSync('docs/operator-api.md', 'utf8').match(/^```sh\n([\s\S]*?)^```/m)?.[1] ?? '')
  .split('\n')
  .filter((line) => line.startsWith('svc admin '));

test('every documented svc admin line parses into an operator request', () => {
  assert.ok(lines.length >= 7, `the documented lines: ${lines.length}`);
  for (const line of lines) {
    const request = adminRequest(words(line).slice(2));
    assert.ok(request, line);
  }
});

test('org create with --webhooks --outbox asks for both, as the docs say', () => {
  const line = lines.find((l) => l.startsWith('svc admin org create'));
  assert.ok(line);
  const [method, path, body] = adminRequest(words(line).slice(2)) ?? [];
  assert.equal(method, 'POST');
  assert.equal(path, '/organizations');
  assert.deepEqual(body, {
    code: '310',
    name: 'Traslados Sur',
    webhooks_enabled: true,
    outbox_enabled: true,
    api_enabled: true,
  });
});

test('the former spelling `--outbox true` is refused, naming the stray argument', () => {
  assert.throws(
    () => adminRequest(words('svc admin org create --code 310 --name X --outbox true').slice(2)),
    /unexpected argument "true"/,
  );
});

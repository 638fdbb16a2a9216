// The embedded mode's generated master key (SVC_DATA_DIR/master.key): made once, never replaced,
// and refused unless it is exactly 32 bytes, since a wrong key silently breaks every cursor and
// every secret derived from it.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { resolveMasterKey } from '../../src/runtime.js';

const root = await mkdtemp(join(tmpdir(), 'svc-master-key-'));
after(() => rm(root, { recursive: true, force: true }));
let n = 0;
async function dataDir(): Promise<string> {
  const dir = join(root, String(n++));
  await mkdir(dir);
  return dir;
}
const configFor = (dir: string) => loadConfig({ SVC_DATA_DIR: dir });

test('a missing key is generated once (mode 600) and read back the same', async () => {
  const dir = await dataDir();
  const key = await resolveMasterKey(configFor(dir));
  assert.equal(key.length, 32);
  assert.equal((await stat(join(dir, 'master.key'))).mode & 0o777, 0o600);
  assert.deepEqual(await resolveMasterKey(configFor(dir)), key);
});

test('a truncated, padded or non-hex key file is refused and left as it is', async () => {
  for (const content of ['ab', 'ab'.repeat(31), 'ab'.repeat(33), 'zz'.repeat(32), '']) {
    const dir = await dataDir();
    await writeFile(join(dir, 'master.key'), content);
    await assert.rejects(resolveMasterKey(configFor(dir)), /master\.key.*32 bytes/);
    assert.equal(await readFile(join(dir, 'master.key'), 'utf8'), content);
  }
  const dir = await dataDir();
  await writeFile(join(dir, 'master.key'), `${'AB'.repeat(32)}\n`);
  assert.deepEqual(await resolveMasterKey(configFor(dir)), Buffer.from('ab'.repeat(32), 'hex'));
});

test('a key file that cannot be read stops the start instead of being replaced', async () => {
  const dir = await dataDir();
  await mkdir(join(dir, 'master.key'));
  await assert.rejects(resolveMasterKey(configFor(dir)), /master\.key: cannot be read/);
  assert.ok((await stat(join(dir, 'master.key'))).isDirectory(), 'nothing was written over it');
});

// `svc serve` that cannot start: on a port already taken it says which port and exits non-zero at
// once, for the public API's port and the operator API's alike, instead of staying up with no
// listener; with bad variables it names every one in one message.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { freshSchema, MASTER_KEY_HEX } from '../support/cluster.js';
import { dataDirMigrated } from '../support/pglite-template.js';
import { freePort, svc } from '../support/processes.js';

const TOKEN = 'cli-test-operator-token-0123456789abcdef';

const dataDir = await dataDirMigrated(await mkdtemp(join(tmpdir(), 'svc-busy-port-')));
after(() => rm(dataDir, { recursive: true, force: true }));

/** Something else listening on a loopback port for the duration of one test. */
async function occupy(port: number): Promise<Server> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

/** Starts serve with `busy` taken; resolves with its exit code and output, or fails if it is still up. */
async function serveOnBusyPort(which: 'SVC_PORT' | 'SVC_OPERATOR_PORT') {
  const [port, operatorPort] = [await freePort(), await freePort()];
  const busy = which === 'SVC_PORT' ? port : operatorPort;
  const other = await occupy(busy);
  try {
    const server = svc(['serve'], {
      SVC_DATA_DIR: dataDir,
      SVC_HOST: '127.0.0.1',
      SVC_PORT: String(port),
      SVC_OPERATOR_PORT: String(operatorPort),
      SVC_OPERATOR_TOKEN: TOKEN,
      DATABASE_URL: '',
    });
    await server.waitFor(/EADDRINUSE|in use/, 60_000);
    // Once it has said so, it is gone within moments: nothing is left holding it up.
    const code = await Promise.race([
      server.exited(),
      new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 5_000).unref()),
    ]);
    return { code, output: server.output(), busy };
  } finally {
    await new Promise<void>((resolve) => other.close(() => resolve()));
  }
}

for (const which of ['SVC_PORT', 'SVC_OPERATOR_PORT'] as const) {
  test(`${which} already in use: a clear message and a non-zero exit at once`, async () => {
    const { code, output, busy } = await serveOnBusyPort(which);
    assert.notEqual(code, 'still running', `serve kept running without a listener:\n${output}`);
    assert.notEqual(code, 0, output);
    assert.match(output, new RegExp(`${which}.*${busy}.*already in use`), output);
  });
}

test('every bad or missing variable is named in one message, and the process exits 1', async () => {
  const server = svc(['serve'], {
    SVC_DATA_DIR: dataDir,
    DATABASE_URL: 'base',
    REDIS_URL: '',
    SVC_OPERATOR_TOKEN: '',
    SVC_MASTER_KEY: '',
    SVC_PORT: 'http',
  });
  assert.equal(await server.exited(), 1);
  const output = server.output();
  assert.match(output, /^Invalid configuration:$/m);
  assert.match(output, /^ {2}DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL, got a bare name/m);
  assert.match(output, /^ {2}SVC_OPERATOR_TOKEN: required/m);
  assert.match(output, /^ {2}SVC_PORT: must be a whole number/m);
});

test('on PostgreSQL without REDIS_URL, the start warns that limits are per process', {
  skip: !process.env.TEST_DATABASE_URL && 'needs PostgreSQL',
}, async () => {
  const server = svc(['serve'], {
    SVC_DATA_DIR: dataDir,
    DATABASE_URL: (await freshSchema()).url,
    REDIS_URL: '',
    SVC_MASTER_KEY: MASTER_KEY_HEX,
    SVC_OPERATOR_TOKEN: TOKEN,
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_OPERATOR_PORT: '0',
    SVC_WEBHOOK_WORKER: 'off',
    SVC_LOG_FORMAT: 'json',
  });
  const output = await server.waitFor(/REDIS_URL is not set: rate limits are per process/);
  assert.match(output, /"level":40/);
  assert.equal(await server.stop(), 0);
});

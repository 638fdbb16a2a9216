// SIGTERM at several points of the start-up of `svc serve` and `svc worker`: each stops what had
// started and exits 0, as it does once started. Once started, both answer the probes without a
// credential, and stop answering them as soon as a signal arrives. The points are the start-up's own log lines (at
// debug); a signal lands at or a little after its point. The first one also through bin/svc.js,
// which catches signals before the program loads.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freshSchema, MASTER_KEY_HEX, OPERATOR_TOKEN } from '../support/cluster.js';
import { dataDirAfterInitdb, dataDirMigrated } from '../support/pglite-template.js';
import { freePort, type Started, start, svc } from '../support/processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const onServer = Boolean(process.env.TEST_DATABASE_URL);
const folders: string[] = [];
after(() => Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))));

/**
 * The environment of one start: a database of its own, free ports, the steps logged. A start
 * signalled after its migrations finds them applied: on PGlite they would cost it a second.
 */
async function startEnv(migrated = false): Promise<Record<string, string>> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-signals-'));
  folders.push(dataDir);
  const env: Record<string, string> = {
    SVC_DATA_DIR: onServer ? dataDir : await (migrated ? dataDirMigrated : dataDirAfterInitdb)(dataDir),
    DATABASE_URL: onServer ? (await freshSchema()).url : '',
    SVC_MASTER_KEY: MASTER_KEY_HEX,
    SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_OPERATOR_PORT: '0',
    SVC_METRICS_PORT: '0',
    SVC_LOG_LEVEL: 'debug',
    SVC_LOG_FORMAT: 'json',
  };
  return env;
}

/** Waits for the start-up step, sends SIGTERM, and checks the exit. */
async function signalAt(proc: Started, step: string): Promise<void> {
  await proc.waitFor(new RegExp(`"step":"${step}"`));
  const code = await proc.stop('SIGTERM');
  const out = proc.output();
  assert.equal(code, 0, `exit ${code} after SIGTERM at ${step}:\n${out}`);
  assert.match(out, /stopped during start-up|stopped cleanly/, out);
}

const SERVE_STEPS = [
  'configuration',
  'database',
  'migrations',
  'public API',
  'operator API',
  'public listener',
  'operator listener',
  'health listener',
];

describe('a signal during the start-up of svc serve', () => {
  for (const step of SERVE_STEPS) {
    test(`at ${step}: what started stops, exit 0`, async () => {
      const migrated = SERVE_STEPS.indexOf(step) > SERVE_STEPS.indexOf('migrations');
      await signalAt(svc(['serve'], await startEnv(migrated)), step);
    });
  }

  test('through bin/svc.js, while the database opens: exit 0', async () => {
    const built = spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    assert.equal(built.status, 0, 'the build');
    const proc = start(process.execPath, ['bin/svc.js', 'serve'], {
      cwd: ROOT,
      env: { ...process.env, ...(await startEnv()) },
    });
    await signalAt(proc, 'configuration');
  });
});

describe('a signal during the start-up of svc worker', { skip: !onServer && 'needs PostgreSQL' }, () => {
  for (const step of ['configuration', 'database', 'migrations', 'metrics listener', 'health listener']) {
    test(`at ${step}: what started stops, exit 0`, async () => {
      await signalAt(svc(['worker'], await startEnv()), step);
    });
  }
});

/** Until `url` answers 200; then its body. */
async function answered(proc: Started, url: string): Promise<string> {
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`exited:\n${proc.output()}`);
    const res = await fetch(url).catch(() => null);
    if (res?.status === 200) return res.text();
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('svc serve answers the probes on SVC_HEALTH_PORT without a credential', async () => {
  const port = await freePort();
  const proc = svc(['serve'], { ...(await startEnv(true)), SVC_HEALTH_PORT: String(port) });
  assert.equal(await answered(proc, `http://127.0.0.1:${port}/readyz`), '{"status":"ready"}');
  assert.equal(await answered(proc, `http://127.0.0.1:${port}/livez`), '{"status":"ok"}');
  assert.equal(await proc.stop('SIGTERM'), 0);
});

test('svc worker answers the probes on its metrics listener and on SVC_HEALTH_PORT', {
  skip: !onServer && 'needs PostgreSQL',
}, async () => {
  const [metrics, health] = [await freePort(), await freePort()];
  const proc = svc(['worker'], {
    ...(await startEnv()),
    SVC_METRICS_PORT: String(metrics),
    SVC_HEALTH_PORT: String(health),
  });
  for (const port of [metrics, health]) {
    assert.equal(await answered(proc, `http://127.0.0.1:${port}/readyz`), '{"status":"ready"}');
  }
  assert.equal(await proc.stop('SIGTERM'), 0);
});

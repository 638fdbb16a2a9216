// A master key that does not open the webhook secrets already stored stops `svc serve` (and
// `svc worker`) at start, naming the key id the secrets expect, instead of starting and failing
// every delivery; with that key as a fallback the same start succeeds. On the embedded database
// `svc serve` only; under TEST_DATABASE_URL both commands, on a schema of the test's own.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createPgliteDb, type Db } from '../../src/db/db.js';
import { migrate } from '../../src/db/migrate.js';
import { createSecretBox, masterKeyId } from '../../src/security/secrets.js';
import { freshSchema } from '../support/cluster.js';
import { usingServer } from '../support/context.js';
import { pgliteTemplate } from '../support/pglite-template.js';
import { freePort, outputAfterExit, svc } from '../support/processes.js';

const TOKEN = 'cli-test-operator-token-0123456789abcdef';
const SEALED_UNDER = randomBytes(32);
const OTHER = randomBytes(32);

/** A tenant with one webhook whose secret is sealed under SEALED_UNDER, as a running service left it. */
async function seed(db: Db): Promise<void> {
  await migrate(db);
  const [org] = await db.query<{ id: string }>(
    "INSERT INTO organizations (code, name, webhooks_enabled) VALUES ('4711', 'Claves SL', true) RETURNING id",
  );
  const [integration] = await db.query<{ id: string }>(
    `INSERT INTO integrations (organization_id, name, kind, scopes)
     VALUES ($1, 'ERP', 'erp', ARRAY['bookings:read']) RETURNING id`,
    [org?.id],
  );
  const id = '019a0000-0000-7000-8000-000000000001';
  await db.query(
    `INSERT INTO webhooks (id, integration_id, organization_id, url, events, secret)
     VALUES ($1, $2, $3, 'https://example.com/hook', ARRAY['*'], $4)`,
    [id, integration?.id, org?.id, createSecretBox(SEALED_UNDER).seal('whsec_stored', id)],
  );
}

/** The environment of a process on the seeded database. */
async function seededEnv(): Promise<Record<string, string>> {
  if (usingServer) {
    const schema = await freshSchema();
    await seed(schema.db);
    return { DATABASE_URL: schema.url };
  }
  const dir = await mkdtemp(join(tmpdir(), 'svc-master-key-start-'));
  after(() => rm(dir, { recursive: true, force: true }));
  const db = await createPgliteDb(join(dir, 'pglite'), await pgliteTemplate());
  await seed(db);
  await db.close();
  return { DATABASE_URL: '', SVC_DATA_DIR: dir };
}

const env = await seededEnv();

async function serveEnv(keys: Record<string, string>): Promise<Record<string, string>> {
  return {
    ...env,
    ...keys,
    SVC_HOST: '127.0.0.1',
    SVC_PORT: String(await freePort()),
    SVC_OPERATOR_PORT: String(await freePort()),
    SVC_OPERATOR_TOKEN: TOKEN,
  };
}

const refusal = new RegExp(
  `SVC_MASTER_KEY: the master key \\(${masterKeyId(OTHER)}\\) does not open the webhook secrets already stored.*sealed under master key ${masterKeyId(SEALED_UNDER)}`,
);

test('svc serve with a key that does not open the stored secrets refuses to start, naming the key expected', async () => {
  const server = svc(
    ['serve'],
    await serveEnv({ SVC_MASTER_KEY: OTHER.toString('hex'), SVC_LOG_LEVEL: 'info', SVC_LOG_FORMAT: 'json' }),
  );
  // Listening would be the failure: it says so at once rather than waiting for an exit.
  const ended = await Promise.race([
    server.exited(),
    server.waitFor(/Server listening/, 120_000).then(() => 'listening' as const),
  ]);
  assert.equal(ended, 1, server.output());
  const output = await outputAfterExit(server);
  assert.match(output, refusal);
  assert.ok(!output.includes(OTHER.toString('hex')), 'the key itself is never printed');
});

test('svc worker refuses the same way', {
  skip: !usingServer && 'svc worker needs DATABASE_URL',
}, async () => {
  const worker = svc(['worker'], {
    ...env,
    SVC_MASTER_KEY: OTHER.toString('hex'),
    SVC_LOG_LEVEL: 'info',
    SVC_LOG_FORMAT: 'json',
  });
  const ended = await Promise.race([
    worker.exited(),
    worker.waitFor(/webhook delivery worker started/, 120_000).then(() => 'started' as const),
  ]);
  assert.equal(ended, 1, worker.output());
  assert.match(await outputAfterExit(worker), refusal);
});

test('with the key that sealed them as a fallback, the same start succeeds', async () => {
  const server = svc(
    ['serve'],
    await serveEnv({
      SVC_MASTER_KEY: OTHER.toString('hex'),
      SVC_MASTER_KEY_FALLBACKS: SEALED_UNDER.toString('base64'),
      SVC_LOG_LEVEL: 'info',
      SVC_LOG_FORMAT: 'json',
    }),
  );
  // The delivery worker (on a thread of its own on PostgreSQL) builds its ring from the same variables.
  await server.waitFor(/Server listening[\s\S]*Server listening/, 60_000);
  if (usingServer) await server.waitFor(/the delivery worker runs on a thread of its own/, 60_000);
  // How it stops is test/cli/serve.shutdown.test.ts's subject.
  await server.stop('SIGKILL');
});

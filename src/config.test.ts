import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from './config.js';

const NOTIFY_SECRET = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
const TOKEN = 't'.repeat(32);

function assertRefused(env: Record<string, string>, variable: string): void {
  assert.throws(
    () => loadConfig(env),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.variable, variable);
      assert.ok(error.message.startsWith(`${variable}: `), error.message);
      return true;
    },
  );
}

describe('configuration', () => {
  test('defaults are the values of the contract', () => {
    const config = loadConfig({});
    assert.deepEqual(config.rateLimits, {
      windowMs: 60_000,
      perKey: 600,
      perOrganization: 1200,
      perEndpoint: 300,
      authFailuresPerIp: 60,
    });
    assert.equal(config.eventRetentionDays, 30);
    assert.equal(config.idempotencyRetentionHours, 24);
    assert.equal(config.idempotencyClaimTimeoutMs, 5 * 60_000);
    assert.equal(config.authCacheTtlMs, 5000);
    assert.equal(config.environment, 'live');
  });

  test('the other defaults', () => {
    const config = loadConfig({});
    assert.equal(config.databaseUrl, null);
    assert.equal(config.redisUrl, null);
    assert.equal(config.dataDir, './data');
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.port, 8080);
    assert.equal(config.operatorHost, '127.0.0.1');
    assert.equal(config.operatorPort, 8081);
    assert.equal(config.operatorUrl, 'http://127.0.0.1:8081');
    assert.equal(config.operatorToken, null);
    assert.equal(config.metricsPort, null);
    assert.equal(config.healthPort, null);
    assert.equal(config.healthHost, '0.0.0.0');
    assert.equal(loadConfig({ SVC_METRICS_PORT: '0' }).metricsPort, null);
    assert.equal(config.masterKey, null);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.logFormat, 'auto');
    assert.equal(loadConfig({ NODE_ENV: 'production' }).logFormat, 'json');
    assert.equal(config.trustProxy, false);
    assert.equal(config.dbPoolWaitMs, 2000);
    assert.equal(config.dbPoolSize, 10);
    assert.equal(config.shutdownGraceMs, 10_000);
  });

  test('every variable is read', () => {
    const master = 'ab'.repeat(32);
    const config = loadConfig({
      SVC_ENVIRONMENT: 'test',
      DATABASE_URL: 'postgres://db/svc',
      SVC_DATA_DIR: '/var/lib/svc',
      REDIS_URL: 'redis://cache:6379',
      SVC_HOST: '127.0.0.1',
      SVC_PORT: '9000',
      SVC_PUBLIC_URL: 'https://api.example.com/',
      SVC_OPERATOR_HOST: '0.0.0.0',
      SVC_OPERATOR_PORT: '9001',
      SVC_OPERATOR_TOKEN: TOKEN,
      SVC_METRICS_PORT: '9102',
      SVC_HEALTH_HOST: '10.0.0.5',
      SVC_HEALTH_PORT: '9103',
      SVC_OPERATOR_URL: 'http://ops:9001',
      SVC_MASTER_KEY: master,
      SVC_MASTER_KEY_FALLBACKS: `${'cd'.repeat(32)}, ${'ef'.repeat(32)}`,
      SVC_LOG_LEVEL: 'warn',
      SVC_LOG_FORMAT: 'pretty',
      SVC_AUTH_CACHE_TTL_MS: '0',
      SVC_DB_STATEMENT_TIMEOUT_MS: '2500',
      SVC_DB_POOL_WAIT_MS: '700',
      SVC_REQUEST_TIMEOUT_MS: '9000',
      SVC_SHUTDOWN_GRACE_MS: '2500',
      SVC_MIGRATE_AT_START: 'false',
      SVC_TRUST_PROXY: 'true',
      SVC_RATE_WINDOW_MS: '1000',
      SVC_RATE_PER_KEY: '5',
      SVC_RATE_PER_ORGANIZATION: '8',
      SVC_RATE_PER_ENDPOINT: '3',
      SVC_RATE_AUTH_FAILURES_PER_IP: '4',
      SVC_EVENT_RETENTION_DAYS: '90',
      SVC_IDEMPOTENCY_RETENTION_HOURS: '48',
      SVC_IDEMPOTENCY_CLAIM_TIMEOUT_MS: '1000',
      SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      SVC_WEBHOOK_CA_FILE: '/etc/svc/ca.pem',
      SVC_WEBHOOK_ALLOWED_PRIVATE_RANGES: '127.0.0.1, 10.0.0.0/8,fd00::/8',
      SVC_WEBHOOK_DNS_TIMEOUT_MS: '500',
      SVC_WEBHOOK_RETRY_SCHEDULE: '1,2,3,4,5,6,0.25',
      SVC_WEBHOOK_TIMEOUT_MS: '2000',
      SVC_WEBHOOK_LEASE_SECONDS: '5',
      SVC_WEBHOOK_CONCURRENCY: '10',
      SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK: '3',
      SVC_WEBHOOK_IDLE_GAP_MS: '20',
      SVC_WEBHOOK_POLL_MS: '3000',
      SVC_WEBHOOK_WORKER_LEASE_MS: '9000',
      SVC_WEBHOOK_WORKER: 'off',
      SVC_DB_POOL_SIZE: '7',
      SVC_OPERATOR_NOTIFY_URL: 'https://alerts.internal/svc',
      SVC_OPERATOR_NOTIFY_SECRET: NOTIFY_SECRET,
    });
    assert.deepEqual(
      {
        ...config,
        masterKey: config.masterKey?.toString('hex'),
        masterKeyFallbacks: config.masterKeyFallbacks.map((k) => k.toString('hex')),
      },
      {
        environment: 'test',
        databaseUrl: 'postgres://db/svc',
        dataDir: '/var/lib/svc',
        redisUrl: 'redis://cache:6379',
        host: '127.0.0.1',
        port: 9000,
        publicUrl: 'https://api.example.com',
        operatorHost: '0.0.0.0',
        operatorPort: 9001,
        operatorToken: TOKEN,
        metricsPort: 9102,
        healthHost: '10.0.0.5',
        healthPort: 9103,
        operatorUrl: 'http://ops:9001',
        masterKey: master,
        masterKeyFallbacks: ['cd'.repeat(32), 'ef'.repeat(32)],
        logLevel: 'warn',
        logFormat: 'pretty',
        authCacheTtlMs: 0,
        statementTimeoutMs: 2500,
        dbPoolWaitMs: 700,
        dbPoolSize: 7,
        requestTimeoutMs: 9000,
        shutdownGraceMs: 2500,
        migrateAtStart: false,
        trustProxy: true,
        rateLimits: { windowMs: 1000, perKey: 5, perOrganization: 8, perEndpoint: 3, authFailuresPerIp: 4 },
        eventRetentionDays: 90,
        idempotencyRetentionHours: 48,
        idempotencyClaimTimeoutMs: 1000,
        webhooks: {
          allowPrivateTargets: true,
          allowedPrivateRanges: ['127.0.0.1', '10.0.0.0/8', 'fd00::/8'],
          dnsTimeoutMs: 500,
          caFile: '/etc/svc/ca.pem',
          retryGapsMs: [1000, 2000, 3000, 4000, 5000, 6000, 250],
          timeoutMs: 2000,
          leaseMs: 5000,
          concurrency: 10,
          concurrencyPerWebhook: 3,
          batchMs: 2,
          idleGapMs: 20,
          pollMs: 3000,
          workerLeaseMs: 9000,
          embeddedWorker: false,
        },
        operatorNotify: { url: 'https://alerts.internal/svc', secret: NOTIFY_SECRET },
      },
    );
  });

  test('SVC_PUBLIC_URL: an http(s) origin; by default localhost on SVC_PORT', () => {
    assert.equal(loadConfig({ SVC_PORT: '9000' }).publicUrl, 'http://localhost:9000');
    for (const bad of ['api.example.com', 'ftp://api.example.com', 'https://api.example.com/?a=1']) {
      assert.throws(() => loadConfig({ SVC_PUBLIC_URL: bad }), /SVC_PUBLIC_URL/);
    }
  });

  test('webhook delivery defaults are the contract schedule, 10 s time-out and a 60 s lease', () => {
    const { webhooks } = loadConfig({});
    assert.deepEqual(webhooks.retryGapsMs, [30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000]);
    assert.equal(webhooks.timeoutMs, 10_000);
    assert.equal(webhooks.leaseMs, 60_000);
    assert.equal(webhooks.allowPrivateTargets, false);
    assert.equal(webhooks.caFile, null);
    assert.equal(webhooks.embeddedWorker, true);
    assert.throws(() => loadConfig({ SVC_WEBHOOK_WORKER: 'no' }), /SVC_WEBHOOK_WORKER/);
    assert.deepEqual(webhooks.allowedPrivateRanges, []);
    assert.equal(webhooks.dnsTimeoutMs, 3000);
    assert.equal(webhooks.concurrency, 128);
    assert.equal(webhooks.concurrencyPerWebhook, 4);
    assert.equal(webhooks.pollMs, 1000);
    assert.equal(webhooks.workerLeaseMs, 10_000);
    assert.throws(() => loadConfig({ SVC_WEBHOOK_POLL_MS: '19' }), /SVC_WEBHOOK_POLL_MS/);
    assert.throws(
      () => loadConfig({ SVC_WEBHOOK_POLL_MS: '500', SVC_WEBHOOK_WORKER_LEASE_MS: '1000' }),
      /SVC_WEBHOOK_WORKER_LEASE_MS/,
    );
  });

  test('SVC_TRUST_PROXY: false, true, a hop count or a list of addresses and CIDR ranges', () => {
    assert.equal(loadConfig({ SVC_TRUST_PROXY: 'false' }).trustProxy, false);
    assert.equal(loadConfig({ SVC_TRUST_PROXY: 'true' }).trustProxy, true);
    assert.equal(loadConfig({ SVC_TRUST_PROXY: '2' }).trustProxy, 2);
    assert.deepEqual(loadConfig({ SVC_TRUST_PROXY: '10.0.0.0/8, 192.0.2.1,fd00::/8' }).trustProxy, [
      '10.0.0.0/8',
      '192.0.2.1',
      'fd00::/8',
    ]);
    for (const bad of [
      'yes',
      '0',
      '21',
      '10.0.0.0/33',
      '10.0.0.0/8,',
      'proxy.internal',
      '1.5',
      '10.0.0.0/8/1',
    ]) {
      assertRefused({ SVC_TRUST_PROXY: bad }, 'SVC_TRUST_PROXY');
    }
  });

  test('the operator URL follows the operator port when not given', () => {
    assert.equal(loadConfig({ SVC_OPERATOR_PORT: '9100' }).operatorUrl, 'http://127.0.0.1:9100');
  });

  test('a bad variable stops the start with an error that names it', () => {
    const bad: [string, string][] = [
      ['SVC_ENVIRONMENT', 'production'],
      ['SVC_PORT', 'http'],
      ['SVC_PORT', '65536'],
      ['SVC_OPERATOR_PORT', '-1'],
      ['SVC_METRICS_PORT', '70000'],
      ['SVC_HEALTH_PORT', 'health'],
      ['SVC_LOG_LEVEL', 'verbose'],
      ['SVC_TRUST_PROXY', 'yes'],
      ['SVC_AUTH_CACHE_TTL_MS', '60001'],
      ['SVC_RATE_WINDOW_MS', '999'],
      ['SVC_RATE_PER_KEY', '0'],
      ['SVC_RATE_PER_KEY', '1.5'],
      ['SVC_RATE_PER_KEY', '6e2'],
      ['SVC_RATE_PER_ORGANIZATION', ' 1200'],
      ['SVC_RATE_PER_ENDPOINT', 'many'],
      ['SVC_RATE_AUTH_FAILURES_PER_IP', '0'],
      ['SVC_IDEMPOTENCY_RETENTION_HOURS', '0'],
      ['SVC_IDEMPOTENCY_RETENTION_HOURS', '721'],
      ['SVC_IDEMPOTENCY_CLAIM_TIMEOUT_MS', '999'],
      ['SVC_MASTER_KEY', 'too-short'],
      ['SVC_MASTER_KEY', 'ab'.repeat(31)],
      ['SVC_MASTER_KEY_FALLBACKS', `${'ab'.repeat(32)},too-short`],
      ['SVC_MASTER_KEY_FALLBACKS', `${'ab'.repeat(32)};${'cd'.repeat(32)}`],
      ['SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS', '1'],
      ['SVC_WEBHOOK_RETRY_SCHEDULE', '30,60,120'],
      ['SVC_WEBHOOK_RETRY_SCHEDULE', '30,60,120,240,480,960,1920,3840'],
      ['SVC_WEBHOOK_RETRY_SCHEDULE', '30,60,120,240,480,960,-1'],
      ['SVC_WEBHOOK_RETRY_SCHEDULE', '30,60,120,240,480,960,1e3'],
      ['SVC_WEBHOOK_TIMEOUT_MS', '99'],
      ['SVC_WEBHOOK_ALLOWED_PRIVATE_RANGES', 'localhost'],
      ['SVC_WEBHOOK_ALLOWED_PRIVATE_RANGES', '10.0.0.0/33'],
      ['SVC_WEBHOOK_DNS_TIMEOUT_MS', '49'],
      ['SVC_WEBHOOK_LEASE_SECONDS', '10'],
      ['SVC_WEBHOOK_CONCURRENCY', '0'],
      ['SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK', '129'],
    ];
    for (const [variable, value] of bad) assertRefused({ [variable]: value }, variable);
  });

  test('an operator token shorter than 32 characters is refused', () => {
    assertRefused({ SVC_OPERATOR_TOKEN: 't'.repeat(31) }, 'SVC_OPERATOR_TOKEN');
    assert.equal(loadConfig({ SVC_OPERATOR_TOKEN: TOKEN }).operatorToken, TOKEN);
  });

  test('an event retention under the 30 days of the contract is refused', () => {
    assertRefused({ SVC_EVENT_RETENTION_DAYS: '29' }, 'SVC_EVENT_RETENTION_DAYS');
    assertRefused({ SVC_EVENT_RETENTION_DAYS: '0' }, 'SVC_EVENT_RETENTION_DAYS');
    assert.equal(loadConfig({ SVC_EVENT_RETENTION_DAYS: '30' }).eventRetentionDays, 30);
  });

  test('a master key is accepted as 64 hex characters or as base64 of 32 bytes', () => {
    const bytes = Buffer.alloc(32, 9);
    assert.deepEqual(loadConfig({ SVC_MASTER_KEY: bytes.toString('hex') }).masterKey, bytes);
    assert.deepEqual(loadConfig({ SVC_MASTER_KEY: bytes.toString('base64') }).masterKey, bytes);
  });

  test('master key fallbacks: a comma-separated list in either spelling, each key once, none by default', () => {
    const [a, b] = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
    assert.deepEqual(loadConfig({}).masterKeyFallbacks, []);
    assert.deepEqual(
      loadConfig({
        SVC_MASTER_KEY_FALLBACKS: ` ${a.toString('hex')} ,${b.toString('base64')},${a.toString('base64')}`,
      }).masterKeyFallbacks,
      [a, b],
    );
  });

  test('an empty variable means its default', () => {
    const config = loadConfig({
      SVC_PORT: '',
      SVC_RATE_PER_KEY: '',
      SVC_ENVIRONMENT: '',
      SVC_OPERATOR_TOKEN: '',
    });
    assert.equal(config.port, 8080);
    assert.equal(config.rateLimits.perKey, 600);
    assert.equal(config.environment, 'live');
    assert.equal(config.operatorToken, null);
  });
});

describe('every problem at once', () => {
  const problemsOf = (env: Record<string, string>, needs = {}) => {
    try {
      loadConfig(env, needs);
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error));
      return error;
    }
    assert.fail('accepted');
  };

  test('each bad variable is named in one message, with what it expects', () => {
    const error = problemsOf({
      SVC_PORT: 'http',
      SVC_RATE_PER_KEY: '0',
      DATABASE_URL: 'mysql://app:s3cret@db/svc',
      REDIS_URL: 'cache:6379',
      SVC_OPERATOR_TOKEN: 'short',
    });
    assert.deepEqual(
      error.problems.map((p) => p.variable),
      ['SVC_OPERATOR_TOKEN', 'DATABASE_URL', 'REDIS_URL', 'SVC_PORT', 'SVC_RATE_PER_KEY'],
    );
    const lines = error.message.split('\n');
    assert.equal(lines.length, 5);
    assert.ok(lines.includes('DATABASE_URL: must be a postgres:// or postgresql:// URL, got a mysql:// URL'));
    assert.ok(
      lines.includes(
        'REDIS_URL: must be a redis:// or rediss:// URL, got a bare name or something else that is not a URL',
      ),
    );
    assert.ok(lines.includes('SVC_PORT: must be a whole number, got "http"'));
    assert.doesNotMatch(error.message, /s3cret/, 'a URL is never repeated: it may hold a password');
  });

  test('DATABASE_URL: a bare database name, or a URL without a host, is refused by name', () => {
    for (const bad of ['base', 'svc_production', 'db:5432/svc', 'postgres://']) {
      const error = problemsOf({ DATABASE_URL: bad });
      assert.equal(error.variable, 'DATABASE_URL', bad);
      assert.match(error.message, /^DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/);
    }
    for (const good of [
      'postgres://db/svc',
      'postgresql://app:pw@db:5432/svc?sslmode=require',
      'postgres:///svc?host=/run/postgresql',
    ]) {
      assert.equal(loadConfig({ DATABASE_URL: good }).databaseUrl, good);
    }
    assert.equal(loadConfig({ REDIS_URL: 'rediss://cache:6380/1' }).redisUrl, 'rediss://cache:6380/1');
  });

  test('a missing operator token does not hide a missing master key', () => {
    const error = problemsOf({ DATABASE_URL: 'postgres://db/svc' }, { operatorToken: true, masterKey: true });
    assert.deepEqual(
      error.problems.map((p) => p.variable),
      ['SVC_OPERATOR_TOKEN', 'SVC_MASTER_KEY'],
    );
    assert.match(error.message, /SVC_MASTER_KEY: required when DATABASE_URL is set \(32 bytes/);
    // Needed by the command only: the embedded database generates its key, svc admin needs neither.
    assert.equal(loadConfig({}, { masterKey: true }).masterKey, null);
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://db/svc' }).masterKey, null);
    const bad = problemsOf(
      { DATABASE_URL: 'postgres://db/svc', SVC_MASTER_KEY: 'short' },
      { masterKey: true },
    );
    assert.deepEqual(
      bad.problems.map((p) => p.variable),
      ['SVC_MASTER_KEY'],
      'a bad key is named once',
    );
  });
});

describe('operator notices', () => {
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (error) {
      assert.ok(error instanceof ConfigError, String(error));
      return error;
    }
    assert.fail('accepted');
  };

  test('off by default; the URL and the secret go together', () => {
    assert.equal(loadConfig({}).operatorNotify, null);
    assert.match(
      problems({ SVC_OPERATOR_NOTIFY_URL: 'https://alerts.internal/svc' }).message,
      /^SVC_OPERATOR_NOTIFY_SECRET: required when SVC_OPERATOR_NOTIFY_URL is set$/,
    );
    assert.match(
      problems({ SVC_OPERATOR_NOTIFY_SECRET: NOTIFY_SECRET }).message,
      /^SVC_OPERATOR_NOTIFY_URL: required when SVC_OPERATOR_NOTIFY_SECRET is set$/,
    );
  });

  test('an https URL and a whsec_ secret of 24 to 64 bytes; the secret is never repeated', () => {
    const url = problems({
      SVC_OPERATOR_NOTIFY_URL: 'http://alerts/x',
      SVC_OPERATOR_NOTIFY_SECRET: NOTIFY_SECRET,
    });
    assert.deepEqual(
      url.problems.map((p) => p.variable),
      ['SVC_OPERATOR_NOTIFY_URL'],
    );
    assert.match(url.message, /must be a https:\/\/ URL/);
    const short = `whsec_${Buffer.alloc(16, 1).toString('base64')}`;
    for (const secret of [short, 'plain-text-secret-of-some-length-000000', `whsec_${'!'.repeat(40)}`]) {
      const error = problems({
        SVC_OPERATOR_NOTIFY_URL: 'https://a.example/x',
        SVC_OPERATOR_NOTIFY_SECRET: secret,
      });
      assert.equal(error.variable, 'SVC_OPERATOR_NOTIFY_SECRET');
      assert.equal(error.message.includes(secret), false);
    }
  });
});

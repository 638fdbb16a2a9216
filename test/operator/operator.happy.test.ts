// The operator API doing its work: organizations, integrations, keys, and the system routes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ANNOUNCED_SCOPES } from '../../src/http/scopes.js';
import { closedDatabase } from '../http/guarded-app.js';
import { startService, type TestService } from '../support/context.js';
import { createTenant, expectOk, nextCode } from '../support/tenants.js';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(() => svc.close());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('organizations', () => {
  test('created with the default flags, read and changed', async () => {
    const code = nextCode();
    const created = await expectOk(
      await svc.op('POST', '/organizations', { code, name: 'Traslados Sur' }),
      201,
    );
    assert.deepEqual(Object.keys(created).sort(), [
      'api_enabled',
      'code',
      'created_at',
      'id',
      'name',
      'outbox_enabled',
      'updated_at',
      'webhooks_enabled',
    ]);
    assert.equal(created.code, code);
    assert.equal(created.api_enabled, true);
    assert.equal(created.webhooks_enabled, false);
    assert.equal(created.outbox_enabled, false);
    assert.match(created.created_at, ISO);
    assert.deepEqual(await expectOk(await svc.op('GET', `/organizations/${created.id}`)), created);

    const changed = await expectOk(
      await svc.op('PATCH', `/organizations/${created.id}`, {
        name: 'Traslados del Sur',
        webhooks_enabled: true,
        outbox_enabled: true,
      }),
    );
    assert.equal(changed.name, 'Traslados del Sur');
    assert.equal(changed.webhooks_enabled, true);
    assert.equal(changed.outbox_enabled, true);
    assert.equal(changed.api_enabled, true, 'an absent flag keeps its value');
  });
});

describe('integrations', () => {
  test('the announced scopes are accepted', async () => {
    const t = await createTenant(svc);
    const res = await svc.op('POST', `/organizations/${t.organization.id}/integrations`, {
      name: 'Futuro',
      kind: 'custom',
      scopes: ['bookings:read', ...ANNOUNCED_SCOPES],
    });
    const integration = await expectOk(res, 201);
    assert.deepEqual(integration.scopes, ['bookings:read', ...ANNOUNCED_SCOPES]);
    assert.equal(integration.status, 'active');
    const key = await expectOk(
      await svc.op('POST', `/integrations/${integration.id}/keys`, {
        scopes: ['bookings:create', 'tracking:read'],
        environment: 'live',
      }),
      201,
    );
    const me = await svc.call('GET', '/integrations/me', { key: key.key });
    assert.deepEqual(me.body.scopes, ['bookings:create', 'tracking:read']);
  });

  test('every kind is accepted', async () => {
    const t = await createTenant(svc);
    for (const kind of ['erp', 'pms', 'crm', 'billing', 'fleet', 'bi', 'automation', 'custom']) {
      const res = await svc.op('POST', `/organizations/${t.organization.id}/integrations`, {
        name: kind,
        kind,
        scopes: [],
      });
      assert.equal((await expectOk(res, 201)).kind, kind);
    }
  });

  test('PATCH changes scopes, status and name; the list shows the newest first', async () => {
    const t = await createTenant(svc);
    const path = `/integrations/${t.integration.id}`;
    let row = await expectOk(await svc.op('PATCH', path, { scopes: ['events:read'] }));
    assert.deepEqual(row.scopes, ['events:read']);
    row = await expectOk(await svc.op('PATCH', path, { status: 'disabled', name: 'ERP 2' }));
    assert.equal(row.status, 'disabled');
    assert.equal(row.name, 'ERP 2');
    assert.deepEqual(row.scopes, ['events:read'], 'absent fields keep their value');
    row = await expectOk(await svc.op('PATCH', path, { status: 'revoked' }));
    assert.equal(row.status, 'revoked');
    assert.deepEqual(await expectOk(await svc.op('GET', path)), row);

    const second = await expectOk(
      await svc.op('POST', `/organizations/${t.organization.id}/integrations`, {
        name: 'BI',
        kind: 'bi',
        scopes: [],
      }),
      201,
    );
    const list = await expectOk(await svc.op('GET', `/organizations/${t.organization.id}/integrations`));
    assert.deepEqual(
      list.data.map((i: { id: string }) => i.id),
      [second.id, t.integration.id],
    );
  });
});

describe('keys', () => {
  test('a key is shown whole once; the database keeps its SHA-256 and the visible prefix', async () => {
    const t = await createTenant(svc, { scopes: ['bookings:read', 'links:read'] });
    for (const environment of ['live', 'test'] as const) {
      const created = await expectOk(
        await svc.op('POST', `/integrations/${t.integration.id}/keys`, {
          name: `clave ${environment}`,
          scopes: ['links:read'],
          environment,
        }),
        201,
      );
      assert.match(created.key, new RegExp(`^svc_${environment}_[A-Za-z0-9]{40}$`));
      assert.equal(created.prefix, created.key.slice(0, 15));
      assert.equal(created.environment, environment);
      assert.deepEqual(created.scopes, ['links:read']);
      assert.equal(created.expires_at, null);
      assert.equal(created.revoked_at, null);
      assert.equal(created.name, `clave ${environment}`);

      const [stored] = await svc.db.query<{ secret_hash: Uint8Array }>(
        'SELECT secret_hash FROM api_keys WHERE id = $1',
        [created.id],
      );
      const expected = createHash('sha256').update(created.key).digest();
      assert.equal(Buffer.from(stored?.secret_hash ?? []).toString('hex'), expected.toString('hex'));
    }
    const list = await expectOk(await svc.op('GET', `/integrations/${t.integration.id}/keys`));
    assert.equal(list.data.length, 3);
    for (const key of list.data) {
      assert.equal(key.key, undefined, 'the secret is never shown again');
      assert.equal(key.secret_hash, undefined);
      assert.match(key.prefix, /^svc_(live|test)_[A-Za-z0-9]{6}$/);
    }
  });

  test('a key with expires_at keeps it', async () => {
    const t = await createTenant(svc);
    const expiresAt = new Date(svc.clock.now() + 86_400_000).toISOString();
    const created = await expectOk(
      await svc.op('POST', `/integrations/${t.integration.id}/keys`, {
        scopes: [],
        environment: 'live',
        expires_at: expiresAt,
      }),
      201,
    );
    assert.equal(created.expires_at, expiresAt);
  });

  test('revoking twice keeps the first revoked_at', async () => {
    const t = await createTenant(svc);
    const first = await expectOk(await svc.op('POST', `/keys/${t.keyId}/revoke`));
    assert.match(first.revoked_at, ISO);
    // Move the first revocation into the past, so a second one could not write the same instant.
    await svc.db.query(`UPDATE api_keys SET revoked_at = '2020-01-02T03:04:05.006Z' WHERE id = $1`, [
      t.keyId,
    ]);
    const again = await expectOk(await svc.op('POST', `/keys/${t.keyId}/revoke`));
    assert.equal(again.revoked_at, '2020-01-02T03:04:05.006Z');
  });
});

describe('system', () => {
  test('healthz and readyz answer while the database is there', async () => {
    assert.deepEqual(await expectOk(await svc.op('GET', '/healthz')), { status: 'ok' });
    assert.deepEqual(await expectOk(await svc.op('GET', '/readyz')), { status: 'ready' });
  });

  test('readyz is 503 when the database is closed; healthz stays 200', async () => {
    const db = svc.deps.db;
    svc.deps.db = await closedDatabase();
    try {
      const res = await svc.op('GET', '/readyz');
      assert.equal(res.status, 503);
      // Behind the token, readiness says which checks failed.
      assert.equal(res.body.status, 'unavailable');
      assert.deepEqual(
        res.body.failed.map((f: { name: string }) => f.name),
        ['database', 'migrations'],
      );
      assert.equal((await svc.op('GET', '/healthz')).status, 200);
    } finally {
      svc.deps.db = db;
    }
    assert.equal((await svc.op('GET', '/readyz')).status, 200);
  });

  test('metrics are Prometheus text with the request duration by route template', async () => {
    const t = await createTenant(svc);
    await expectOk(await svc.call('GET', '/integrations/me', { key: t.key }));
    const res = await svc.op('GET', '/metrics');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.match(res.text, /# TYPE svc_http_request_duration_seconds histogram/);
    assert.match(
      res.text,
      /svc_http_request_duration_seconds_count\{app="public",method="GET",route="\/api\/v1\/integrations\/me",status="200"\} [1-9]/,
    );
    assert.match(res.text, /svc_http_request_duration_seconds_bucket\{[^}]*app="operator"/);
  });

  test('metrics count refusals by authentication, by code', async () => {
    const count = async (code: string) => {
      const text = (await svc.op('GET', '/metrics')).text;
      return Number(new RegExp(`svc_auth_failures_total\\{code="${code}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };
    const before = { invalid: await count('invalid_key'), missing: await count('unauthorized') };
    assert.equal(
      (await svc.call('GET', '/integrations/me', { key: `svc_live_${'q'.repeat(40)}` })).status,
      401,
    );
    assert.equal((await svc.call('GET', '/integrations/me', { key: 'svc_live_q' })).status, 401);
    assert.equal((await svc.call('GET', '/integrations/me')).status, 401);
    assert.equal(await count('invalid_key'), before.invalid + 2);
    assert.equal(await count('unauthorized'), before.missing + 1);
  });
});

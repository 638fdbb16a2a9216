// Behind a load balancer: SVC_TRUST_PROXY as a hop count or as the balancer's addresses makes the
// failure limit per IP count the client the balancer saw, not the balancer (which would lock out
// every integration) and not whatever the client wrote in X-Forwarded-For (which would let it
// escape the limit).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startService } from '../support/context.js';
import { createTenant } from '../support/tenants.js';
import { assertError } from './guarded-app.js';

const BALANCER = '10.0.0.5';

for (const setting of ['1', '10.0.0.0/8']) {
  test(`SVC_TRUST_PROXY=${setting}: a client cannot escape the failure limit, nor lock out the others`, async () => {
    const svc = await startService({ SVC_TRUST_PROXY: setting, SVC_RATE_AUTH_FAILURES_PER_IP: '4' });
    after(() => svc.close());
    const t = await createTenant(svc, { scopes: ['bookings:read'] });
    // The balancer appends the address it saw; the client chose everything before it.
    const via = (client: string, forged: string) => ({
      ip: BALANCER,
      headers: { 'x-forwarded-for': `${forged}, ${client}` },
    });
    for (let i = 0; i < 4; i++) {
      assertError(
        await svc.call('GET', '/integrations/me', via('203.0.113.7', `198.51.100.${i}`)),
        401,
        'unauthorized',
      );
    }
    const refused = await svc.call('GET', '/integrations/me', {
      key: t.key,
      ...via('203.0.113.7', '198.51.100.99'),
    });
    assertError(refused, 429, 'rate_limited');
    // Another client behind the same balancer is not refused.
    const other = await svc.call('GET', '/integrations/me', {
      key: t.key,
      ...via('203.0.113.8', '198.51.100.1'),
    });
    assert.equal(other.status, 200, other.text);
  });
}

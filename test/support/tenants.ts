// Tenants made through the operator API, as the platform would make them. Each test takes its own
// organization, so tests in one file never see each other's data.
import assert from 'node:assert/strict';
import type { TestService } from './context.js';

let counter = 0;
/** An organization code no other tenant of this process uses. */
export function nextCode(): string {
  counter += 1;
  return String(10 + ((process.pid * 97 + counter) % 989989));
}

export interface Tenant {
  organization: { id: string; code: string; name: string };
  integration: { id: string; scopes: string[] };
  key: string;
  keyId: string;
}

export interface TenantOptions {
  scopes?: string[];
  keyScopes?: string[];
  environment?: 'live' | 'test';
  flags?: { api_enabled?: boolean; webhooks_enabled?: boolean; outbox_enabled?: boolean };
  organizationId?: string;
  expiresAt?: string;
}

export const READ_SCOPES = [
  'bookings:read',
  'customers:read',
  'drivers:read',
  'vehicles:read',
  'events:read',
  'links:read',
  'links:write',
];

export async function expectOk<T>(res: { status: number; body: T }, status = 200): Promise<T> {
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body;
}

export async function createTenant(svc: TestService, options: TenantOptions = {}): Promise<Tenant> {
  const organization =
    options.organizationId !== undefined
      ? (await svc.op('GET', `/organizations/${options.organizationId}`)).body
      : await expectOk(
          await svc.op('POST', '/organizations', {
            code: nextCode(),
            name: 'Transportes Test',
            ...options.flags,
          }),
          201,
        );
  const scopes = options.scopes ?? READ_SCOPES;
  const integration = await expectOk(
    await svc.op('POST', `/organizations/${organization.id}/integrations`, {
      name: 'ERP',
      kind: 'erp',
      scopes,
    }),
    201,
  );
  const key = await expectOk(
    await svc.op('POST', `/integrations/${integration.id}/keys`, {
      name: 'main',
      scopes: options.keyScopes ?? scopes,
      environment: options.environment ?? 'live',
      ...(options.expiresAt ? { expires_at: options.expiresAt } : {}),
    }),
    201,
  );
  return { organization, integration, key: key.key, keyId: key.id };
}

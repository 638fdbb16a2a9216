// The scopes of the contract. The announced ones are accepted on integrations and keys and open
// nothing in v1.
export const ACTIVE_SCOPES = [
  'bookings:read',
  'customers:read',
  'drivers:read',
  'vehicles:read',
  'pricing:read',
  'passengers:read',
  'events:read',
  'webhooks:read',
  'webhooks:write',
  'links:read',
  'links:write',
] as const;

export const ANNOUNCED_SCOPES = [
  'bookings:create',
  'bookings:write',
  'bookings:cancel',
  'customers:write',
  'billing:read',
  'invoices:read',
  'payments:read',
  'tracking:read',
] as const;

export const ALL_SCOPES = [...ACTIVE_SCOPES, ...ANNOUNCED_SCOPES] as const;
export type Scope = (typeof ALL_SCOPES)[number];

export const INTEGRATION_KINDS = [
  'erp',
  'pms',
  'crm',
  'billing',
  'fleet',
  'bi',
  'automation',
  'custom',
] as const;
export type IntegrationKind = (typeof INTEGRATION_KINDS)[number];

/** Effective scopes: those of the key that its integration also has, in the contract's order. */
export function effectiveScopes(keyScopes: readonly string[], integrationScopes: readonly string[]): Scope[] {
  const granted = new Set(integrationScopes);
  const held = new Set(keyScopes);
  return ALL_SCOPES.filter((s) => granted.has(s) && held.has(s));
}

// The delivery portal as the platform and a browser use it: the operator API issues a session, the
// link's token is posted once for the cookie, and the cookie reaches /portal/api.
import assert from 'node:assert/strict';
import { type CallOptions, inject, type Response, type TestService } from './context.js';
import { expectOk } from './tenants.js';

export interface IssuedPortal {
  id: string;
  url: string;
  token: string;
  expires_at: string;
  scopes: string[];
}

export async function issuePortal(
  svc: TestService,
  integrationId: string,
  body: unknown = {},
): Promise<IssuedPortal> {
  const issued = await expectOk(
    await svc.op('POST', `/integrations/${integrationId}/portal-sessions`, body),
    201,
  );
  const token = /#token=([A-Za-z0-9_-]+)$/.exec(issued.url)?.[1];
  assert.ok(token, issued.url);
  return { ...issued, token };
}

/** Posts the link's token; the answer and the cookie it set (`name=value`), if any. */
export async function openPortal(
  svc: TestService,
  token: string,
): Promise<{ res: Response; cookie: string | null }> {
  const res = await inject(svc.api, 'POST', '/portal/api/session', { body: { token } });
  const header = res.headers['set-cookie'];
  const cookie = typeof header === 'string' ? (header.split(';')[0] ?? null) : null;
  return { res, cookie };
}

/** A session for the integration, opened: its cookie. */
export async function portalCookie(svc: TestService, integrationId: string): Promise<string> {
  const { res, cookie } = await openPortal(svc, (await issuePortal(svc, integrationId)).token);
  assert.equal(res.status, 204, res.text);
  assert.ok(cookie);
  return cookie;
}

export function portalCall(
  svc: TestService,
  cookie: string | null,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Response> {
  const headers = { ...options.headers, ...(cookie ? { cookie } : {}) };
  return inject(svc.api, method, `/portal/api${path}`, { ...options, headers });
}

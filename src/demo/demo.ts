// The embedded demo: one organization with a catalogue and bookings (some received from a partner
// through the exchange), one integration holding every scope, and a key of the server's
// environment (SVC_ENVIRONMENT: svc_live_ or svc_test_).
// The database keeps keys hashed only; the demo's key is also in data/demo.env (mode 600) for the
// examples, and a restart on the same data directory keeps it while the database still knows it
// (its hash, on the demo integration, not revoked, with the integration's scopes). Otherwise the
// previous demo key is revoked and a new one issued.
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Db } from '../db/db.js';
import { publishEvents } from '../delivery/publish.js';
import type { IdentityCache } from '../http/auth.js';
import { ACTIVE_SCOPES } from '../http/scopes.js';
import { createApiKey } from '../operator/integrations.js';
import { hashApiKey } from '../security/secrets.js';
import { seedDemoData } from './data.js';

export const DEMO_CODE = '100';
const DEMO_KEY_NAME = 'demo';

export interface DemoAccess {
  organizationId: string;
  /** The demo integration, which the key and the delivery portal link are for. */
  integrationId: string;
  key: string;
  /** The key of the previous start, still valid, rather than a new one. */
  keptKey: boolean;
  bookingReference: string | null;
}

export interface DemoDeps {
  db: Db;
  config: Pick<Config, 'environment'>;
  identities: Pick<IdentityCache, 'clear'>;
}

/** `previousKey`: the key of an earlier start (data/demo.env), kept when it is still the demo's. */
export async function prepareDemo(deps: DemoDeps, previousKey: string | null = null): Promise<DemoAccess> {
  const { db } = deps;
  // The organization and its data are written together: a failed seed leaves no empty demo.
  const organizationId = await db.tx(async (q) => {
    const [found] = await q.query<{ id: string }>('SELECT id FROM organizations WHERE code = $1', [
      DEMO_CODE,
    ]);
    if (found) return found.id;
    const [created] = await q.query<{ id: string }>(
      `INSERT INTO organizations (code, name, api_enabled, webhooks_enabled, outbox_enabled)
       VALUES ($1, 'Traslados Demo', true, true, true) RETURNING id`,
      [DEMO_CODE],
    );
    const id = (created as { id: string }).id;
    await seedDemoData(q, id);
    return id;
  });
  // Its life cycle is in the event log at once, also after `svc demo` alone (no worker running).
  await publishEvents(db);
  let [integration] = await db.query<{ id: string; scopes: string[] }>(
    `SELECT id, scopes FROM integrations WHERE organization_id = $1 AND name = 'Demo' ORDER BY created_at LIMIT 1`,
    [organizationId],
  );
  if (!integration) {
    [integration] = await db.query<{ id: string; scopes: string[] }>(
      `INSERT INTO integrations (organization_id, name, kind, scopes) VALUES ($1, 'Demo', 'custom', $2)
       RETURNING id, scopes`,
      [organizationId, [...ACTIVE_SCOPES]],
    );
  }
  const demoIntegration = integration as { id: string; scopes: string[] };
  const [booking] = await db.query<{ reference: string }>(
    `SELECT reference FROM bookings WHERE originator_organization_id = $1 ORDER BY created_at DESC LIMIT 1`,
    [organizationId],
  );
  const bookingReference = booking?.reference ?? null;
  if (previousKey !== null) {
    const [kept] = await db.query<{ id: string }>(
      `SELECT id FROM api_keys
        WHERE secret_hash = $1 AND integration_id = $2 AND name = $3 AND environment = $4
          AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
          AND scopes @> $5::text[] AND scopes <@ $5::text[]`,
      [
        hashApiKey(previousKey),
        demoIntegration.id,
        DEMO_KEY_NAME,
        deps.config.environment,
        demoIntegration.scopes,
      ],
    );
    if (kept) {
      return {
        organizationId,
        integrationId: demoIntegration.id,
        key: previousKey,
        keptKey: true,
        bookingReference,
      };
    }
  }
  await db.query(
    `UPDATE api_keys SET revoked_at = now() WHERE integration_id = $1 AND name = $2 AND revoked_at IS NULL`,
    [demoIntegration.id, DEMO_KEY_NAME],
  );
  deps.identities.clear();
  const issued = await createApiKey(db, demoIntegration, {
    name: DEMO_KEY_NAME,
    scopes: demoIntegration.scopes as never,
    environment: deps.config.environment,
  });
  return {
    organizationId,
    integrationId: demoIntegration.id,
    key: issued.key,
    keptKey: false,
    bookingReference,
  };
}

export interface BannerInfo {
  baseUrl: string;
  /** The address the public API listens on. */
  host: string;
  operatorUrl: string;
  operatorToken: string | null;
  key: string;
  keptKey: boolean;
  bookingReference: string | null;
  environment: 'live' | 'test';
  database: 'embedded' | 'PostgreSQL';
  /** Where the key and address were written for the examples (`--env-file`), if they were. */
  envFile: string | null;
  /** The receiver can be reached: the demo trusts examples/tls and allows loopback targets. */
  localWebhooks: boolean;
  simulation: { rate: number; seed: number } | null;
  /** A delivery portal link for the demo integration (one open, for an hour). */
  portalUrl: string | null;
  integrationId: string;
}

/**
 * The key written by an earlier start into `dataDir`/demo.env, or null: none, or a file others may
 * read (mode 600 is how it is written; a key that may have been read by others is replaced).
 */
export async function readDemoKey(dataDir: string): Promise<string | null> {
  const file = join(dataDir, 'demo.env');
  try {
    if (process.platform !== 'win32' && ((await stat(file)).mode & 0o077) !== 0) return null;
    return /^SVC_API_KEY=(svc_(?:live|test)_[A-Za-z0-9]+)$/m.exec(await readFile(file, 'utf8'))?.[1] ?? null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** The demo's address and current key, for `node --env-file=… examples/…`; readable by the owner only. */
export async function writeDemoEnv(dataDir: string, baseUrl: string, key: string): Promise<string> {
  await mkdir(dataDir, { recursive: true });
  const file = join(dataDir, 'demo.env');
  const text = [
    '# Written by `svc serve --demo` at every start: the demo API and its key, kept across restarts',
    '# while it is valid. For the examples: node --env-file=data/demo.env examples/webhook-receiver.mjs',
    `SVC_BASE_URL=${baseUrl}`,
    `SVC_API_KEY=${key}`,
    '',
  ].join('\n');
  await writeFile(file, text, { mode: 0o600 });
  await chmod(file, 0o600);
  return file;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

export function demoBanner(info: BannerInfo): string {
  const origin = new URL(info.baseUrl).origin;
  const auth = `-H "Authorization: Bearer ${info.key}"`;
  const lines = [
    '',
    `SVC Integration API is running on ${info.database === 'embedded' ? 'its embedded database' : 'PostgreSQL'} (demo data).`,
    '',
    `  API key (${info.environment}, every scope; ${info.keptKey ? 'the one of the previous start' : 'new'}, kept in ${info.envFile ?? 'data/demo.env'} for the next starts):`,
    `    ${info.key}`,
    '',
    '  Try it:',
    `    curl -s ${auth} ${info.baseUrl}/integrations/me`,
    `    curl -s ${auth} "${info.baseUrl}/bookings?limit=2"`,
  ];
  if (info.bookingReference)
    lines.push(`    curl -s ${auth} ${info.baseUrl}/bookings/${info.bookingReference}`);
  lines.push('', `  API reference: ${origin}/docs`);
  if (info.portalUrl) {
    lines.push(`  Delivery portal (this link opens once, within an hour): ${info.portalUrl}`);
    lines.push(`    another link: node bin/svc.js admin portal open --integration ${info.integrationId}`);
  }
  lines.push(
    LOOPBACK.test(info.host)
      ? `  Listening on ${info.host}: this machine only (SVC_HOST or --host to change).`
      : `  Listening on ${info.host}: other machines can reach it, and the key has every scope.`,
  );
  if (info.envFile) {
    lines.push('', '  Receive verified webhooks on this machine (in another terminal):');
    lines.push(`    node --env-file=${info.envFile} examples/webhook-receiver.mjs`);
    if (!info.localWebhooks) {
      lines.push(
        '    (this server does not trust examples/tls: start it with SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS=true',
        '     and SVC_WEBHOOK_CA_FILE=examples/tls/ca.pem, or give the receiver a public https address)',
      );
    }
  }
  if (info.simulation) {
    lines.push(
      '',
      `  Simulated traffic: ${info.simulation.rate} booking change(s) per second, seed ${info.simulation.seed}.`,
    );
  } else {
    lines.push('', '  Simulated booking traffic: npm start -- --simulate [--rate N] [--seed S]');
  }
  lines.push('', `  Operator API: ${info.operatorUrl}/operator/v1`);
  if (info.operatorToken)
    lines.push(`    SVC_OPERATOR_TOKEN=${info.operatorToken}   (generated for this run)`);
  lines.push('');
  return `${lines.join('\n')}\n`;
}

export function printDemoBanner(info: BannerInfo): void {
  process.stdout.write(demoBanner(info));
}

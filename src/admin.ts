// `svc admin`: a thin client of the operator API. Prints the JSON answer; exits 1 on an error answer.
import { parseArgs } from 'node:util';
import type { Config } from './config.js';

const HELP = `Usage: svc admin <command> [options]      (SVC_OPERATOR_URL, SVC_OPERATOR_TOKEN)

  org create --code DIGITS --name NAME [--webhooks] [--outbox] [--no-api]
  org get ID
  org update ID [--name NAME] [--api|--no-api] [--webhooks|--no-webhooks] [--outbox|--no-outbox]
  integration create --org ID --name NAME --kind KIND --scopes a,b,c
  integration list --org ID
  integration update ID [--status active|disabled|revoked] [--scopes a,b,c] [--name NAME]
  key create --integration ID --scopes a,b,c [--environment live|test] [--name NAME] [--expires-at ISO]
  key list --integration ID
  key revoke ID
  cursor-keys rotate
  master-key status              which master keys sealed the stored webhook secrets
  master-key rotate [--limit N]  re-seal every stored secret under SVC_MASTER_KEY, N webhooks a batch
                                 (exit 1 while any secret is left under another key)
  webhooks list [--org ID] [--inactive] [--failing] [--failures-above N] [--limit N] [--cursor C]
                                 webhooks of every organization, newest first (failing: a delivery
                                 waiting for a retry, or one dead in the last hour)
  webhooks get ID [--deliveries N]
                                 one webhook, its queue and its latest deliveries with their errors
  webhooks backlog [--org ID]    per organization: deliveries due and not leased, the oldest one's age
  portal open --integration ID [--minutes N]   a delivery portal link for the integration (one open, N <= 60)
  deliveries replay --webhook ID --since ISO [--until ISO] [--organization ID] [--status dead] [--limit N]
  request METHOD PATH [JSON]     any operator endpoint, e.g. request PUT /organizations/ID/drivers/ID '{...}'
`;

const OPTIONS = {
  code: { type: 'string' },
  name: { type: 'string' },
  org: { type: 'string' },
  kind: { type: 'string' },
  scopes: { type: 'string' },
  status: { type: 'string' },
  integration: { type: 'string' },
  environment: { type: 'string', default: 'live' },
  'expires-at': { type: 'string' },
  webhook: { type: 'string' },
  organization: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  deliveries: { type: 'string' },
  'failures-above': { type: 'string' },
  inactive: { type: 'boolean' },
  failing: { type: 'boolean' },
  minutes: { type: 'string' },
  // Booleans are flags, each with its --no- form: `--webhooks`, `--no-webhooks`.
  webhooks: { type: 'boolean' },
  outbox: { type: 'boolean' },
  api: { type: 'boolean' },
  'api-disabled': { type: 'boolean' },
} as const;

type Values = ReturnType<
  typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; allowNegative: true }>
>['values'];

const list = (v: string | undefined) => (v === undefined ? undefined : v.split(',').filter(Boolean));

/** How many words each command takes (noun, verb and an id where there is one). */
const WORDS: Record<string, number> = {
  'org get': 3,
  'org update': 3,
  'integration update': 3,
  'key revoke': 3,
  'webhooks get': 3,
};

/** `?a=1&b=2` of the values given, or nothing. */
function query(values: Record<string, string | undefined>): string {
  const given = Object.entries(values).filter((e): e is [string, string] => e[1] !== undefined);
  return given.length === 0 ? '' : `?${new URLSearchParams(given)}`;
}

function route(words: string[], v: Values): [string, string, unknown?] {
  const [noun, verb, id] = words;
  const command = `${noun} ${verb}`;
  const expected = noun === 'request' ? 4 : (WORDS[command] ?? 2);
  const extra = words[expected];
  if (extra !== undefined) {
    throw new Error(
      `unexpected argument "${extra}" after "${words.slice(0, expected).join(' ')}" (booleans are flags: --webhooks or --no-webhooks)\n\n${HELP}`,
    );
  }
  switch (command) {
    case 'org create':
      return [
        'POST',
        '/organizations',
        {
          code: v.code,
          name: v.name,
          webhooks_enabled: v.webhooks ?? false,
          outbox_enabled: v.outbox ?? false,
          api_enabled: v.api ?? !v['api-disabled'],
        },
      ];
    case 'org get':
      return ['GET', `/organizations/${id}`];
    case 'org update':
      return [
        'PATCH',
        `/organizations/${id}`,
        {
          name: v.name,
          api_enabled: v.api,
          webhooks_enabled: v.webhooks,
          outbox_enabled: v.outbox,
        },
      ];
    case 'integration create':
      return [
        'POST',
        `/organizations/${v.org}/integrations`,
        { name: v.name, kind: v.kind, scopes: list(v.scopes) },
      ];
    case 'integration list':
      return ['GET', `/organizations/${v.org}/integrations`];
    case 'integration update':
      return ['PATCH', `/integrations/${id}`, { status: v.status, scopes: list(v.scopes), name: v.name }];
    case 'key create':
      return [
        'POST',
        `/integrations/${v.integration}/keys`,
        { scopes: list(v.scopes), environment: v.environment, name: v.name, expires_at: v['expires-at'] },
      ];
    case 'key list':
      return ['GET', `/integrations/${v.integration}/keys`];
    case 'key revoke':
      return ['POST', `/keys/${id}/revoke`];
    case 'portal open':
      if (!v.integration) throw new Error(`portal open needs --integration ID\n\n${HELP}`);
      return [
        'POST',
        `/integrations/${v.integration}/portal-sessions`,
        { ttl_minutes: v.minutes === undefined ? undefined : Number(v.minutes) },
      ];
    case 'cursor-keys rotate':
      return ['POST', '/cursor-keys/rotate'];
    case 'master-key status':
      return ['GET', '/master-key'];
    case 'master-key rotate':
      return ['POST', '/master-key/rotate', { limit: v.limit === undefined ? undefined : Number(v.limit) }];
    case 'webhooks list':
      return [
        'GET',
        `/webhooks${query({
          organization_id: v.org,
          active: v.inactive ? 'false' : undefined,
          failing: v.failing ? 'true' : undefined,
          consecutive_failures_above: v['failures-above'],
          limit: v.limit,
          cursor: v.cursor,
        })}`,
      ];
    case 'webhooks get':
      return ['GET', `/webhooks/${id}${query({ deliveries: v.deliveries })}`];
    case 'webhooks backlog':
      return ['GET', `/backlog${query({ organization_id: v.org, limit: v.limit })}`];
    case 'deliveries replay':
      if (!v.webhook) throw new Error(`deliveries replay needs --webhook ID\n\n${HELP}`);
      return [
        'POST',
        `/webhooks/${v.webhook}/deliveries/replay`,
        {
          since: v.since,
          until: v.until,
          organization_id: v.organization,
          status: v.status,
          limit: v.limit === undefined ? undefined : Number(v.limit),
        },
      ];
    default:
      if (noun === 'request' && verb && id) {
        const body = words[3];
        return [verb.toUpperCase(), id, body === undefined ? undefined : JSON.parse(body)];
      }
      throw new Error(`unknown admin command: ${words.join(' ')}\n\n${HELP}`);
  }
}

/** The operator request an admin command line stands for; throws naming a bad argument. */
export function adminRequest(args: string[]): [string, string, unknown?] | null {
  const { values, positionals } = parseArgs({
    args,
    options: OPTIONS,
    allowPositionals: true,
    allowNegative: true,
  });
  if (positionals.length === 0 || positionals[0] === 'help') return null;
  return route(positionals, values);
}

type Send = (method: string, path: string, body?: unknown) => Promise<{ ok: boolean; text: string }>;

function sender(config: Config): Send {
  const token = config.operatorToken;
  if (!token) throw new Error('SVC_OPERATOR_TOKEN: required by svc admin');
  return async (method, path, body) => {
    const response = await fetch(`${config.operatorUrl}/operator/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { ok: response.ok, text: await response.text() };
  };
}

interface Unopened {
  webhook_id: string;
  key_id: string | null;
}

/**
 * Walks every batch of the re-seal, one line per batch on standard error, then prints the totals
 * and what still awaits a re-seal (a secret no configured key opens, or one sealed meanwhile by a
 * process still on the older key). Interrupted, it is simply run again: what is done is skipped.
 */
async function rotateMasterKey(send: Send, body: { limit?: number }): Promise<number> {
  let after: string | null = null;
  let batches = 0;
  let resealed = 0;
  let keyId = '';
  const unopened: Unopened[] = [];
  do {
    const answer = await send('POST', '/master-key/rotate', { ...body, ...(after ? { after } : {}) });
    if (!answer.ok) {
      process.stdout.write(`${answer.text}\n`);
      return 1;
    }
    const batch = JSON.parse(answer.text) as {
      key_id: string;
      resealed: number;
      unopened: Unopened[];
      next_after: string | null;
    };
    batches += 1;
    resealed += batch.resealed;
    keyId = batch.key_id;
    unopened.push(...batch.unopened);
    after = batch.next_after;
    process.stderr.write(`batch ${batches}: ${batch.resealed} re-sealed under ${keyId}\n`);
  } while (after !== null);
  const status = await send('GET', '/master-key');
  if (!status.ok) {
    process.stdout.write(`${status.text}\n`);
    return 1;
  }
  const { awaiting_reseal, sealed } = JSON.parse(status.text);
  const summary = { key_id: keyId, batches, resealed, unopened, awaiting_reseal, sealed };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  return awaiting_reseal === 0 ? 0 : 1;
}

export async function adminCommand(args: string[], config: Config): Promise<number> {
  const request = adminRequest(args);
  if (!request) {
    process.stdout.write(HELP);
    return 0;
  }
  const send = sender(config);
  const [method, path, body] = request;
  if (path === '/master-key/rotate') return rotateMasterKey(send, body as { limit?: number });
  const answer = await send(method, path, body);
  process.stdout.write(`${answer.text}\n`);
  return answer.ok ? 0 : 1;
}

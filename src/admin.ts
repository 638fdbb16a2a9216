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
};

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

export async function adminCommand(args: string[], config: Config): Promise<number> {
  const request = adminRequest(args);
  if (!request) {
    process.stdout.write(HELP);
    return 0;
  }
  if (!config.operatorToken) throw new Error('SVC_OPERATOR_TOKEN: required by svc admin');
  const [method, path, body] = request;
  const response = await fetch(`${config.operatorUrl}/operator/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${config.operatorToken}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  process.stdout.write(`${text}\n`);
  return response.ok ? 0 : 1;
}

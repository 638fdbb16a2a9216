// Request samples of every operation (`x-codeSamples`, which reference pages show as tabs): curl,
// the TypeScript client (packages/client, one method per operationId) and Python with `requests`.
// Each reads SVC_BASE_URL (…/api/v1) and SVC_API_KEY from the environment, as the examples do.
import * as ex from './examples.js';

type Json = Record<string, unknown>;

export interface SampleInput {
  method: string;
  /** The published path, `/bookings/{id}`. */
  path: string;
  operationId: string;
  /** An example of the request body, when the operation takes one. */
  body?: unknown;
  /** The operation needs no key (the document itself). */
  public: boolean;
}

/** Example ids of the document, by the collection a path names. */
const IDS: Record<string, string> = {
  bookings: ex.bookingExample.id,
  customers: ex.customerExample.id,
  drivers: ex.driverExample.id,
  vehicles: ex.vehicleExample.id,
  webhooks: ex.webhookExample.id,
};

const idFor = (path: string) => IDS[path.split('/')[1] ?? ''] ?? ex.bookingExample.id;
const filled = (path: string) => path.replace('{id}', idFor(path));
/** JSON as a Python literal: the same text but for the three constants. */
const pythonLiteral = (value: unknown) =>
  JSON.stringify(value).replace(
    /\b(true|false|null)\b/g,
    (c) => ({ true: 'True', false: 'False', null: 'None' })[c] ?? c,
  );

function curl({ method, path, body, public: open }: SampleInput): string {
  const lines = [`curl -s${method === 'GET' ? '' : ` -X ${method}`} "$SVC_BASE_URL${filled(path)}"`];
  if (!open) lines.push('  -H "Authorization: Bearer $SVC_API_KEY"');
  if (body !== undefined) {
    lines.push('  -H "Content-Type: application/json"');
    lines.push(`  -d '${JSON.stringify(body)}'`);
  }
  return lines.join(' \\\n');
}

/** JSON as a TypeScript object literal in the project's style: bare keys, single quotes. */
const tsLiteral = (value: unknown, indent: string) =>
  JSON.stringify(value, null, 2)
    .replace(/"([a-z_][a-z0-9_]*)":/g, '$1:')
    .replace(/"((?:[^"\\]|\\.)*)"/g, (_m, text: string) => `'${text.replace(/'/g, "\\'")}'`)
    .replace(/\n/g, `\n${indent}`);

function typescript({ path, operationId, body }: SampleInput): string {
  const args: string[] = [];
  if (path.includes('{id}')) args.push(`  path: { id: '${idFor(path)}' },`);
  if (body !== undefined) args.push(`  body: ${tsLiteral(body, '  ')},`);
  return [
    "import { createClient } from '@svc/integration-client';",
    '',
    'const svc = createClient({ baseUrl: process.env.SVC_BASE_URL!, apiKey: process.env.SVC_API_KEY! });',
    args.length
      ? `const answer = await svc.${operationId}({\n${args.join('\n')}\n});`
      : `const answer = await svc.${operationId}();`,
    'console.log(answer);',
  ].join('\n');
}

function python({ method, path, body, public: open }: SampleInput): string {
  const call = [`f"{os.environ['SVC_BASE_URL']}${filled(path)}"`];
  if (!open) call.push(`headers={"Authorization": f"Bearer {os.environ['SVC_API_KEY']}"}`);
  if (body !== undefined) call.push(`json=${pythonLiteral(body)}`);
  call.push('timeout=30');
  return [
    'import os',
    'import requests',
    '',
    `answer = requests.${method.toLowerCase()}(`,
    ...call.map((part) => `    ${part},`),
    ')',
    'answer.raise_for_status()  # the error body says why: answer.json()["error"]["code"]',
    'print(answer.json())',
  ].join('\n');
}

export function codeSamples(input: SampleInput): Json[] {
  return [
    { lang: 'Shell', label: 'curl', source: curl(input) },
    { lang: 'TypeScript', label: 'TypeScript client', source: typescript(input) },
    { lang: 'Python', label: 'Python', source: python(input) },
  ];
}

// Every answer the integration tests receive through `svc.call` is held against the published
// document (openapi/openapi.json, which test/openapi/document.test.ts keeps equal to the routes):
// the status must be one the operation documents, the body must match that response's schema
// (JSON Schema 2020-12, as OpenAPI 3.1 uses) and the documented headers must be there and valid.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

type Json = Record<string, any>;

export interface ContractResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: unknown;
}

const DOC_ID = 'openapi.json';
const doc: Json = JSON.parse(readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'));

const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
ajv.addSchema(doc, DOC_ID);

const pointer = (...parts: string[]) =>
  `${DOC_ID}#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

const compiled = new Map<string, ValidateFunction>();
function validator(ref: string): ValidateFunction {
  let fn = compiled.get(ref);
  if (!fn) {
    fn = ajv.compile({ $ref: ref });
    compiled.set(ref, fn);
  }
  return fn;
}

/** Follows a local `$ref` (`#/components/...`) to the object it names. */
function deref(node: Json): { node: Json; at: string[] } | null {
  if (typeof node.$ref !== 'string') return null;
  const at = node.$ref.replace(/^#\//, '').split('/');
  let target: any = doc;
  for (const part of at) target = target?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return target ? { node: target, at } : null;
}

// A path parameter may be empty (`/bookings//external-id`): the router serves it with `id: ""`.
const templates = Object.keys(doc.paths).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]*')}$`),
  literal: !template.includes('{'),
}));

/** The documented path a concrete one is served by (literal paths win over templated ones). */
function templateOf(path: string): string | null {
  const clean = (path.split('?')[0] ?? '').replace(/(.)\/+$/, '$1');
  const matches = templates.filter((t) => t.pattern.test(clean));
  return (matches.find((t) => t.literal) ?? matches[0])?.template ?? null;
}

function explain(fn: ValidateFunction): string {
  return (fn.errors ?? [])
    .map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`)
    .join('; ');
}

function headerValue(schema: Json, raw: string): unknown {
  return schema.type === 'integer' || schema.type === 'number' ? Number(raw) : raw;
}

function checkHeaders(response: Json, at: string[], res: ContractResponse, what: string): void {
  for (const [name, declared] of Object.entries<Json>(response.headers ?? {})) {
    const found = deref(declared);
    const header = found?.node ?? declared;
    const schemaAt = found ? [...found.at, 'schema'] : [...at, 'headers', name, 'schema'];
    const raw = res.headers[name.toLowerCase()];
    if (raw === undefined) {
      assert.ok(!header.required, `${what}: the documented header ${name} is missing`);
      continue;
    }
    const fn = validator(pointer(...schemaAt));
    const value = headerValue(header.schema ?? {}, Array.isArray(raw) ? raw.join(', ') : String(raw));
    assert.ok(
      fn(value),
      `${what}: header ${name}: ${String(raw)} does not match the document: ${explain(fn)}`,
    );
  }
}

function checkResponse(response: Json, at: string[], res: ContractResponse, what: string): void {
  const found = deref(response);
  const node = found?.node ?? response;
  const where = found?.at ?? at;
  checkHeaders(node, where, res, what);
  const media = node.content?.['application/json'];
  if (!media) return;
  assert.match(String(res.headers['content-type']), /^application\/json/, `${what}: content-type`);
  const fn = validator(pointer(...where, 'content', 'application/json', 'schema'));
  assert.ok(
    fn(res.body),
    `${what}: the body does not match the document: ${explain(fn)}\n${JSON.stringify(res.body)}`,
  );
}

/** What an unknown path can answer: no operation, but the document's shared answers. */
const UNKNOWN_PATH: Record<number, string> = { 404: 'NotFound', 401: 'Unauthorized', 429: 'TooManyRequests' };

/**
 * Fails (throws an AssertionError) when `res` is not an answer the document gives to `method path`
 * (`path` relative to the server url, `/bookings?limit=2`).
 */
export function assertMatchesContract(method: string, path: string, res: ContractResponse): void {
  const what = `${method} ${path} -> ${res.status}`;
  if (res.status === 405) {
    // Skipped on purpose: the server-level 405 answers a method that has no operation on this path,
    // so no operation can document it; the document's info describes it. Its shape is checked here.
    assert.ok(res.headers.allow, `${what}: a 405 has Allow`);
    assert.equal(res.headers['x-svc-request-id'], undefined, `${what}: a 405 has no request id`);
    return;
  }
  const template = templateOf(path);
  const operation = template ? doc.paths[template]?.[method.toLowerCase()] : undefined;
  if (!operation) {
    // A path no operation serves: it is answered with one of the document's shared error answers.
    const name = UNKNOWN_PATH[res.status];
    assert.ok(name, `${what}: a path that no operation serves can only answer 404, 401 or 429`);
    checkResponse(doc.components.responses[name], ['components', 'responses', name], res, what);
    return;
  }
  const status = String(res.status);
  const response = operation.responses[status];
  assert.ok(response, `${what}: ${method} ${template} does not document a ${status} answer`);
  checkResponse(
    response,
    ['paths', template as string, method.toLowerCase(), 'responses', status],
    res,
    what,
  );
}

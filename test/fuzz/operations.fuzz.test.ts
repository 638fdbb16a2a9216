// Requests generated from the published document (openapi/openapi.json), for every operation:
// valid and invalid path ids, query values, headers and bodies, from two organizations' keys.
// Properties of every answer:
//   - no 5xx;
//   - every error carries the envelope and a code the operation documents for that status;
//   - every status is documented for the operation, and every answer (2xx included) validates
//     against the document (test/support/contract.ts);
//   - no answer to one organization's key holds an id of the other organization.
// Two runs per operation: a fixed seed, and a random one printed for replay (FUZZ_SEED=<n> replays
// it; FUZZ_RUNS=<n> changes the runs per operation and seed, 60 by default: 2,640 requests).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import type { Resolver } from '../../src/security/url-guard.js';
import { startService } from '../support/context.js';
import { assertMatchesContract } from '../support/contract.js';
import { putBooking, putCustomer, putDriver, putVehicle } from '../support/feed.js';
import { createTenant, type Tenant } from '../support/tenants.js';

type Json = Record<string, any>;

const FIXED_SEED = 20261124;
const RANDOM_SEED = process.env.FUZZ_SEED
  ? Number(process.env.FUZZ_SEED)
  : Math.floor(Math.random() * 2 ** 31);
const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
/**
 * A bound on each property's time, so the file stays bounded on a loaded machine: a property that
 * reaches it stops early (the cases it ran are the seed's first ones, so a replay is the same).
 * About 0.3 s of CPU each on an idle machine.
 */
const PROPERTY_MS = Number(process.env.FUZZ_PROPERTY_MS ?? 1500);

// Every webhook host resolves to one public address: no DNS in tests, and no worker runs here, so
// nothing is ever sent.
const resolve: Resolver = async () => [{ address: '93.184.216.34', family: 4 }];
const svc = await startService({}, resolve);
after(() => svc.close());
const doc: Json = JSON.parse((await svc.call('GET', '/openapi.json', { key: null })).text);

const ALL_SCOPES = [
  'bookings:read',
  'customers:read',
  'drivers:read',
  'vehicles:read',
  'events:read',
  'links:read',
  'links:write',
  'pricing:read',
  'passengers:read',
  'webhooks:read',
  'webhooks:write',
];

interface Org {
  tenant: Tenant;
  /** Ids a path can name, by the first path segment of the operations that take them. */
  ids: { bookings: string[]; customers: string[]; drivers: string[]; vehicles: string[]; webhooks: string[] };
  references: string[];
  cursors: string[];
  /** Every UUID of this organization's data, to look for in the other's answers. */
  all: Set<string>;
}

async function seedOrg(): Promise<Org> {
  const tenant = await createTenant(svc, {
    scopes: ALL_SCOPES,
    flags: { webhooks_enabled: true, outbox_enabled: true },
  });
  const org = tenant.organization.id;
  const ids: Org['ids'] = { bookings: [], customers: [], drivers: [], vehicles: [], webhooks: [] };
  for (let i = 0; i < 3; i++) {
    ids.customers.push((await putCustomer(svc, org)).id);
    ids.drivers.push((await putDriver(svc, org)).id);
    ids.vehicles.push((await putVehicle(svc, org)).id);
  }
  const references: string[] = [];
  for (let i = 0; i < 3; i++) {
    const b = await putBooking(svc, org, {
      customer_id: ids.customers[i],
      driver_id: ids.drivers[i],
      vehicle_id: ids.vehicles[i],
    });
    ids.bookings.push(b.id);
    references.push(b.reference);
  }
  for (let i = 0; i < 2; i++) {
    const res = await svc.call('POST', '/webhooks', {
      key: tenant.key,
      body: { url: `https://hooks${i}.example.com/in`, events: ['*'] },
    });
    assert.equal(res.status, 201, res.text);
    ids.webhooks.push(res.body.id);
  }
  const link = await svc.call('PUT', `/bookings/${ids.bookings[0]}/external-id`, {
    key: tenant.key,
    body: { external_id: `ERP-${org.slice(0, 8)}` },
  });
  assert.equal(link.status, 200, link.text);
  const test = await svc.call('POST', `/webhooks/${ids.webhooks[0]}/test`, { key: tenant.key });
  assert.equal(test.status, 202, test.text);

  const all = new Set<string>([
    org,
    tenant.integration.id,
    tenant.keyId,
    test.body.delivery_id,
    test.body.event_id,
  ]);
  for (const list of Object.values(ids)) for (const id of list) all.add(id);
  const cursors: string[] = [];
  for (const path of ['/bookings', '/customers', '/drivers', '/vehicles', '/events']) {
    const page = await svc.call('GET', `${path}?limit=1`, { key: tenant.key });
    assert.equal(page.status, 200, page.text);
    if (page.body.next_cursor) cursors.push(page.body.next_cursor);
  }
  const events = await svc.call('GET', '/events?limit=100', { key: tenant.key });
  for (const e of events.body.data) all.add(e.id);
  return { tenant, ids, references, cursors, all };
}

const orgA = await seedOrg();
const orgB = await seedOrg();
const orgs = [orgA, orgB];

// ---------------------------------------------------------------------------------------------
// Values from the document's schemas

function deref(node: Json): Json {
  let at = node;
  while (typeof at?.$ref === 'string') {
    at = at.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((n: any, part: string) => n[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  }
  return at;
}

const printable = (maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });

const EVENT_NAMES = [...doc.components.schemas.Event.properties.type.enum, '*'] as string[];

/** A value that fits the schema most of the time (patterns are only approximated). */
function valid(schema: Json, name = ''): fc.Arbitrary<unknown> {
  const s = deref(schema);
  if (s.const !== undefined) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  if (s.oneOf || s.anyOf) return fc.oneof(...(s.oneOf ?? s.anyOf).map((x: Json) => valid(x, name)));
  const types: string[] = Array.isArray(s.type) ? s.type : [s.type ?? 'string'];
  const choices = types.map((type) => {
    switch (type) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
        return fc.integer({ min: s.minimum ?? -5, max: s.maximum ?? 200 });
      case 'number':
        return fc.double({ noNaN: true, noDefaultInfinity: true });
      case 'array':
        if (name === 'events') return fc.subarray(EVENT_NAMES, { minLength: 1 });
        return fc.array(valid(s.items ?? {}), { minLength: s.minItems ?? 0, maxLength: s.maxItems ?? 3 });
      case 'object': {
        const props = Object.entries<Json>(s.properties ?? {});
        const record = Object.fromEntries(props.map(([k, v]) => [k, valid(v, k)]));
        return fc
          .record(record, { requiredKeys: s.required ?? [] })
          .filter((o) => Object.keys(o).length >= (s.minProperties ?? 0));
      }
      default:
        if (name === 'url')
          return fc.constantFrom(
            'https://hooks.example.com/in',
            'https://a.example.org/x?y=1',
            'http://x.example/',
          );
        if (s.format === 'uuid') return fc.uuid();
        if (s.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
        return printable(Math.min(s.maxLength ?? 40, 250)).filter((v) => v.length >= (s.minLength ?? 0));
    }
  });
  return choices.length === 1 ? (choices[0] as fc.Arbitrary<unknown>) : fc.oneof(...choices);
}

/** Anything JSON: wrong types, unknown members, deep nesting, NUL and lone surrogates. */
const anyJson = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom('\u0000', '\ud800', '', ' ', 'null', '1e309'),
  fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

function invalid(schema: Json): fc.Arbitrary<unknown> {
  const s = deref(schema);
  if (s.type !== 'object' || !s.properties) return anyJson;
  const base = valid(s) as fc.Arbitrary<Json>;
  const keys = Object.keys(s.properties);
  return fc.oneof(
    anyJson,
    // One member replaced by any JSON value.
    fc.tuple(base, fc.constantFrom(...keys), anyJson).map(([o, k, v]) => ({ ...o, [k]: v })),
    // A member nobody declared.
    fc.tuple(base, fc.string({ maxLength: 10 }), anyJson).map(([o, k, v]) => ({ ...o, [k || 'x']: v })),
    // A required member dropped.
    fc.tuple(base, fc.constantFrom(...keys)).map(([o, k]) => {
      const { [k]: _dropped, ...rest } = o;
      return rest;
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Requests

interface Request {
  who: number;
  auth: 'own' | 'none' | 'garbage' | 'basic';
  path: string;
  body?: { payload: string; type?: string };
  idempotencyKey?: string;
}

/**
 * Path ids that name nothing, or something of the wrong kind, or something hostile. Never empty:
 * `/webhooks/` is the collection's path, where another method is the server's documented 405.
 */
// A segment that is only dots is never sent as it is: the request's URL is resolved first (as by
// every WHATWG client), so `/customers/.` asks for the collection `/customers/`, another operation.
// The constants below keep `..` and `%2e%2e`, which resolve to no route at all (404).
const notDots = (segment: string) => !/^\.{1,2}$/.test(segment);
const strangeId = fc.oneof(
  fc.uuid(),
  fc.string({ minLength: 1, maxLength: 40 }).map(encodeURIComponent).filter(notDots),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).map(encodeURIComponent).filter(notDots),
  fc.stringMatching(/^[0-9]{1,14}$/),
  fc.constantFrom('%00', 'a%00b', '%zz', '%C0%80', '..', '%2F', '%2e%2e', 'null', '0', 'x'.repeat(600)),
);

function pathArb(template: string): fc.Arbitrary<{ who: number; path: string }> {
  if (!template.includes('{id}'))
    return fc.integer({ min: 0, max: 1 }).map((who) => ({ who, path: template }));
  const kind = template.split('/')[1] as keyof Org['ids'];
  return fc
    .tuple(fc.integer({ min: 0, max: 1 }), fc.integer({ min: 0, max: 9 }), strangeId)
    .chain(([who, pick, strange]) => {
      const own = orgs[who] as Org;
      const other = orgs[1 - who] as Org;
      const ownIds = own.ids[kind] ?? [];
      const choices: fc.Arbitrary<string>[] = [fc.constant(strange)];
      if (ownIds.length) choices.push(fc.constantFrom(...ownIds));
      if ((other.ids[kind] ?? []).length) choices.push(fc.constantFrom(...other.ids[kind]));
      if (kind === 'bookings') choices.push(fc.constantFrom(...own.references, ...other.references));
      // Own ids most of the time, so the 2xx answers are exercised too.
      const id = pick < 5 && ownIds.length ? fc.constantFrom(...ownIds) : fc.oneof(...choices);
      return id.map((value) => ({ who, path: template.replace('{id}', value) }));
    });
}

function queryArb(parameters: Json[], who: number): fc.Arbitrary<string> {
  const query = parameters.filter((p) => p.in === 'query');
  const own = orgs[who] as Org;
  const other = orgs[1 - who] as Org;
  const value = (p: Json): fc.Arbitrary<string> =>
    fc.oneof(
      { weight: 4, arbitrary: valid(p.schema, p.name).map((v) => String(v)) },
      {
        weight: 1,
        arbitrary: fc.oneof(
          fc.string({ maxLength: 30 }),
          fc.constantFrom('', '%00', '-1', '0', '1e2', '101', '01', ' 5', 'true', 'TRUE', '[]'),
          fc.constantFrom(...own.cursors, ...other.cursors, ...own.ids.customers, ...other.ids.customers),
        ),
      },
    );
  const pairs = query.map((p) =>
    fc.option(
      value(p).map((v) => `${p.name}=${encodeURIComponent(v)}`),
      { freq: 2 },
    ),
  );
  const extra = fc.option(fc.constantFrom('organization_id=x', 'foo=bar', 'limit=1&limit=2', '%00=1', 'a'), {
    freq: 6,
  });
  return fc.tuple(fc.tuple(...pairs), extra).map(([chosen, more]) => {
    const parts = [...chosen, more].filter((p): p is string => p !== null);
    return parts.length ? `?${parts.join('&')}` : '';
  });
}

function bodyArb(op: Json, method: string): fc.Arbitrary<Request['body']> {
  const declared = op.requestBody?.content?.['application/json']?.schema;
  const mayCarry = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method);
  if (!mayCarry) return fc.constant(undefined);
  const type = fc.constantFrom(
    'application/json',
    'application/json',
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    undefined,
  );
  const json: fc.Arbitrary<string> = declared
    ? fc
        .oneof({ weight: 3, arbitrary: valid(declared) }, { weight: 2, arbitrary: invalid(declared) })
        .map((v) => JSON.stringify(v))
    : anyJson.map((v) => JSON.stringify(v));
  const raw = fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.constantFrom('{"a":', '[[[[[[[[[[', `"${'x'.repeat(270_000)}"`, '{"__proto__":{"x":1}}'),
  );
  const payload = fc.oneof({ weight: 6, arbitrary: json }, { weight: 1, arbitrary: raw });
  return fc.option(
    fc.record({ payload, type }).map(({ payload, type }) => (type ? { payload, type } : { payload })),
    { freq: declared ? 12 : 3 },
  ) as fc.Arbitrary<Request['body']>;
}

function requestArb(template: string, method: string, op: Json): fc.Arbitrary<Request> {
  return pathArb(template).chain(({ who, path }) =>
    fc.record({
      who: fc.constant(who),
      auth: fc.oneof(
        { weight: 12, arbitrary: fc.constant<Request['auth']>('own') },
        { weight: 1, arbitrary: fc.constantFrom<Request['auth']>('none', 'garbage', 'basic') },
      ),
      path: queryArb(op.parameters ?? [], who).map((q) => path + q),
      body: bodyArb(op, method),
      idempotencyKey: fc.option(printable(300), { freq: 3 }).map((k) => k ?? undefined),
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// The properties

let sent = 0;
const statuses = new Map<string, number>();

async function check(method: string, op: Json, req: Request): Promise<void> {
  const own = orgs[req.who] as Org;
  const other = orgs[1 - req.who] as Org;
  const headers: Record<string, string> = {};
  if (req.auth === 'own') headers.authorization = `Bearer ${own.tenant.key}`;
  if (req.auth === 'garbage') headers.authorization = `Bearer svc_live_${'A'.repeat(40)}`;
  if (req.auth === 'basic') headers.authorization = 'Basic dXNlcjpwYXNz';
  if (req.body?.type) headers['content-type'] = req.body.type;
  if (req.idempotencyKey !== undefined) headers['idempotency-key'] = req.idempotencyKey;
  // Time moves 250 ms a request: the per-key limits are not what is being fuzzed (a 429 stays possible).
  svc.clock.advance(250);
  sent += 1;
  const res = await svc.call(method, req.path, {
    key: null,
    headers,
    ...(req.body ? { payload: req.body.payload } : {}),
    ip: `10.0.${req.who}.${sent % 4}`,
  });
  const what = `${method} ${req.path} -> ${res.status} ${res.text.slice(0, 300)}`;
  statuses.set(
    `${method} ${op.operationId} ${res.status}`,
    (statuses.get(`${method} ${op.operationId} ${res.status}`) ?? 0) + 1,
  );
  assert.ok(res.status < 500, `a 5xx: ${what}`);
  if (res.status >= 400) {
    assert.equal(typeof res.body?.error?.code, 'string', `no envelope: ${what}`);
    assert.equal(res.body.error.request_id, res.headers['x-svc-request-id'], what);
  }
  // Status documented for the operation, body and headers valid against the document (also for
  // the envelope's code, which each error response narrows to the codes of that status).
  assertMatchesContract(method, req.path, res);
  for (const id of other.all)
    assert.ok(!res.text.includes(id), `an id of the other organization: ${id} in ${what}`);
}

const operations = Object.entries<Json>(doc.paths).flatMap(([template, item]) =>
  ['get', 'put', 'post', 'patch', 'delete']
    .filter((m) => item[m])
    .map((m) => ({ template, method: m.toUpperCase(), op: item[m] as Json })),
);

describe('every operation of the published document, fuzzed', () => {
  test("the operations are the document's", () => {
    assert.equal(operations.length, 22);
  });

  for (const [label, seed] of [
    ['fixed seed', FIXED_SEED],
    ['random seed', RANDOM_SEED],
  ] as const) {
    describe(`${label} ${seed} (replay: FUZZ_SEED=${seed})`, () => {
      for (const { template, method, op } of operations) {
        test(`${method} ${template}`, async () => {
          await fc.assert(
            fc.asyncProperty(requestArb(template, method, op), (req) => check(method, op, req)),
            { seed, numRuns: RUNS, endOnFailure: true, interruptAfterTimeLimit: PROPERTY_MS },
          );
        });
      }
    });
  }

  test('what was sent', (t) => {
    t.diagnostic(`random seed ${RANDOM_SEED} (replay with FUZZ_SEED=${RANDOM_SEED}); ${sent} requests`);
    const byStatus = new Map<number, number>();
    for (const [key, n] of statuses) {
      const status = Number(key.split(' ')[2]);
      byStatus.set(status, (byStatus.get(status) ?? 0) + n);
    }
    t.diagnostic(
      `statuses: ${[...byStatus]
        .sort((a, b) => a[0] - b[0])
        .map(([s, n]) => `${s}×${n}`)
        .join(' ')}`,
    );
    assert.ok(sent >= operations.length * 2 * Math.min(RUNS, 10), `only ${sent} requests`);
    // Both successes and refusals were exercised.
    assert.ok((byStatus.get(200) ?? 0) > sent / 10, 'too few 200s');
    assert.ok((byStatus.get(404) ?? 0) > 0 && (byStatus.get(400) ?? 0) > 0 && (byStatus.get(401) ?? 0) > 0);
  });
});

console.log(`# fuzz: random seed ${RANDOM_SEED} (replay with FUZZ_SEED=${RANDOM_SEED})`);

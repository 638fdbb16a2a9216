// Fields of the published document held to the contract's types, in the document and in what the
// server answers: where the contract says number, string or date-time, neither the document nor
// an answer may say null; where it says "absent", the property is absent, never null.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { BOOKING_EVENT_TYPES, EVENT_TYPES } from '../../src/api/events/schemas.js';
import { ALL_READ, exchangePair, putExchanged } from '../api/read-support.js';
import { serviceForFile } from '../support/context.js';
import { bookingBody, putBooking } from '../support/feed.js';
import { createTenant } from '../support/tenants.js';

const doc = JSON.parse(readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'));
const schemas = doc.components.schemas;
const svc = await serviceForFile();

/** A JSON Schema `type` that admits null (a type list with "null", or an enum holding null). */
const admitsNull = (schema: any): boolean =>
  (Array.isArray(schema.type) && schema.type.includes('null')) ||
  schema.type === 'null' ||
  (Array.isArray(schema.enum) && schema.enum.includes(null)) ||
  (schema.oneOf ?? schema.anyOf ?? []).some(admitsNull);

describe('the document says what the contract says', () => {
  test('ExecutorPricing.net_executor is a number, not nullable', () => {
    assert.deepEqual(schemas.ExecutorPricing.properties.net_executor, { type: 'number' });
    assert.deepEqual(schemas.ExecutorPricing.required, ['currency', 'net_executor']);
  });

  test('Booking.pricing is one of the two shapes, optional, never null', () => {
    const pricing = schemas.Booking.properties.pricing;
    assert.ok(!admitsNull(pricing), JSON.stringify(pricing));
    assert.equal(pricing.oneOf.length, 2);
    assert.ok(!schemas.Booking.required.includes('pricing'));
  });

  test('confirmation.mode, confirmation.confirmed_at and flight.number are not nullable', () => {
    const confirmation = schemas.Booking.properties.confirmation.properties;
    assert.deepEqual(confirmation.mode, { type: 'string' });
    assert.deepEqual(confirmation.confirmed_at, { type: 'string', format: 'date-time' });
    const flight = schemas.Booking.properties.flight;
    assert.deepEqual(flight.properties.number, { type: 'string' });
    assert.deepEqual(flight.required, ['pending']);
  });

  test('WebhookDelivery.event_type is the event type enum', () => {
    assert.deepEqual(schemas.WebhookDelivery.properties.event_type, {
      type: 'string',
      enum: [...EVENT_TYPES],
    });
  });

  test('WebhookEvent.version is the integer 1', () => {
    assert.deepEqual(schemas.WebhookEvent.properties.version, { type: 'integer', const: 1 });
    assert.deepEqual(schemas.Event.properties.version, { type: 'integer' });
  });

  test('Event.type is a booking event: webhook.test never appears in the log', () => {
    assert.deepEqual(schemas.Event.properties.type.enum, [...BOOKING_EVENT_TYPES]);
    // The filter still takes every event type: asking for webhook.test matches nothing.
    const type = doc.paths['/events'].get.parameters.find((p: any) => p.name === 'type');
    assert.deepEqual(type.schema.enum, [...EVENT_TYPES]);
  });

  test('the bearer format names both key prefixes', () => {
    const { bearerFormat } = doc.components.securitySchemes.bearerAuth;
    assert.match(bearerFormat, /svc_live_/);
    assert.match(bearerFormat, /svc_test_/);
    assert.match(doc.info.description, /`svc_test_`/);
  });
});

describe('the answers are as strict as the document (each call is held against it)', () => {
  test('no stored price: pricing is absent with pricing:read, not null', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const id = await putBooking(svc, t.organization.id, { pricing: null }).then((b) => b.id);
    const res = await svc.call('GET', `/bookings/${id}`, { key: t.key });
    assert.equal(res.status, 200);
    assert.ok(!('pricing' in res.body), res.text);
    const list = await svc.call('GET', '/bookings', { key: t.key });
    assert.ok(!('pricing' in list.body.data[0]), list.text);
  });

  test('no stored net for the executor: its pricing is absent, never a null net_executor', async () => {
    const { originator, executor } = await exchangePair(svc);
    const id = randomUUID();
    await putExchanged(
      svc,
      originator,
      executor,
      { pricing: { ...bookingBody().pricing, net_executor: null } },
      id,
    );
    const mine = await svc.call('GET', `/bookings/${id}`, { key: executor.key });
    assert.equal(mine.body.role, 'executor');
    assert.ok(!('pricing' in mine.body), mine.text);
    // The originator still sees its own price.
    const theirs = await svc.call('GET', `/bookings/${id}`, { key: originator.key });
    assert.equal(theirs.body.pricing.total, 95.5);
    assert.ok(!('net_executor' in theirs.body.pricing));
  });

  test('an unconfirmed booking has no confirmation members; a pending flight has no number', async () => {
    const t = await createTenant(svc, { scopes: ALL_READ });
    const id = randomUUID();
    await putBooking(
      svc,
      t.organization.id,
      { status: 'solicitada', confirmation: null, flight: { number: null, pending: true } },
      id,
    );
    const res = await svc.call('GET', `/bookings/${id}`, { key: t.key });
    assert.deepEqual(res.body.confirmation, {});
    assert.deepEqual(res.body.flight, { pending: true });
    assert.ok(!res.text.includes('null,"pending"'), res.text);
    // One member without the other: only the one held is there.
    await putBooking(svc, t.organization.id, { confirmation: { mode: 'manual', confirmed_at: null } }, id);
    const half = await svc.call('GET', `/bookings/${id}`, { key: t.key });
    assert.deepEqual(half.body.confirmation, { mode: 'manual' });
  });
});

describe('the reference page: event types and headings', () => {
  test('each event type says when it fires, as docs/events.md maps them', () => {
    const started = doc.webhooks['booking.started'].post.description;
    assert.match(started, /`en_route`/);
    assert.match(started, /`in_progress` is a `booking.updated`/);
    assert.match(doc.webhooks['booking.updated'].post.description, /`en_route` to `in_progress`/);
    assert.match(
      doc.webhooks['booking.assigned'].post.description,
      /driver, the vehicle or the executing company/,
    );
    for (const where of [schemas.Event.properties.type, schemas.WebhookEvent.properties.type]) {
      for (const type of EVENT_TYPES) assert.match(where.description, new RegExp(`- \`${type}\`: \\S`));
    }
    assert.match(doc.tags.find((t: any) => t.name === 'Events').description, /booking\.started/);
  });

  test('one "Webhooks" heading (the deliveries section) and no tag without operations', () => {
    const used = new Set<string>();
    for (const item of Object.values<any>(doc.paths)) {
      for (const op of Object.values<any>(item)) for (const tag of op.tags ?? []) used.add(tag);
    }
    const declared = doc.tags.map((t: any) => t.name);
    assert.deepEqual([...declared].sort(), [...used].sort());
    // Swagger UI titles the `webhooks` section "Webhooks": no tag may carry that name too.
    assert.ok(!declared.includes('Webhooks'), declared.join(', '));
    for (const item of Object.values<any>(doc.webhooks)) assert.equal(item.post.tags, undefined);
  });
});

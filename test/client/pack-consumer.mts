// An integrator's program, as test/client/pack.test.ts compiles it outside the repository (in a
// fresh project where `@svc/integration-client` is installed from the packed tarball, under
// `tsc --strict`) and runs it against a live server. It prints one JSON line of what it saw.
//
// Kept out of the repository's own type check (`.mts`): here the package resolves to its build.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import {
  ApiError,
  type Booking,
  createClient,
  verifyWebhook,
  type WebhookEvent,
  WebhookVerificationError,
} from '@svc/integration-client';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const svc = createClient({
  baseUrl: env('SVC_BASE_URL'),
  apiKey: env('SVC_API_KEY'),
  retry: {
    retries: 2,
    baseDelayMs: 10,
    maxRetryWaitMs: 5_000,
    onRetry: (attempt, waitMs, error) => console.error(`retry ${attempt} in ${waitMs} ms: ${String(error)}`),
  },
});

// The types are the document's, not `any` or `never`: wrong calls do not compile.
// @ts-expect-error the booking id is required
void (() => svc.getBooking({}));
// @ts-expect-error external_id is a string
void (() => svc.putBookingExternalId({ path: { id: 'x' }, body: { external_id: 42 } }));
// @ts-expect-error listBookings has no such filter
void (() => svc.listBookings({ query: { colour: 'red' } }));
// @ts-expect-error getBooking does not take an Idempotency-Key
void (() => svc.getBooking({ path: { id: 'x' }, idempotencyKey: 'k' }));

// One booking type: `role` narrows `pricing`, no casts; `flight.number` is absent while pending.
function price(booking: Booking): number | null {
  if (booking.role === 'executor') return booking.pricing?.net_executor ?? null;
  return booking.pricing?.total ?? null;
}
const flightNumber = (booking: Booking): string => booking.flight?.number ?? 'pending';

// 1. Every booking, page after page (the filters would go with every page).
const bookings: Booking[] = [];
for await (const booking of svc.paginate('listBookings', { query: { limit: 2 } })) {
  bookings.push(booking);
}
const first = bookings[0];
if (!first) throw new Error('no bookings to work with');

// 2. Our id on a booking: a PUT with an Idempotency-Key, safe to send again after a lost answer.
const externalId = env('SVC_EXTERNAL_ID');
const key = `link-${first.id}-${externalId}`;
const linked = await svc.putBookingExternalId({
  path: { id: first.id },
  body: { external_id: externalId },
  idempotencyKey: key,
});
const replayed = await svc.putBookingExternalId({
  path: { id: first.id },
  body: { external_id: externalId },
  idempotencyKey: key,
});

// 3. The booking found again by our id.
const found = await svc.listBookings({ query: { external_id: externalId } });
const foundId: string | null = found.data[0]?.id ?? null;

// 4. An error answer, as the error class.
const missing: unknown = await svc
  .getBooking({ path: { id: '00000000-0000-4000-8000-000000000000' } })
  .catch((error: unknown) => error);
const error =
  missing instanceof ApiError
    ? { status: missing.status, code: missing.code, request_id: missing.request_id }
    : null;

// 5. A webhook receiver that verifies what it gets before trusting it.
let secret = '';
let resolveEvent: (event: WebhookEvent) => void = () => {};
const delivered = new Promise<WebhookEvent>((resolve) => {
  resolveEvent = resolve;
});
const server = createServer(
  { key: readFileSync(env('SVC_TLS_KEY')), cert: readFileSync(env('SVC_TLS_CERT')) },
  (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        const event = verifyWebhook(Buffer.concat(chunks), req.headers, secret);
        res.writeHead(200).end();
        resolveEvent(event);
      } catch (reason) {
        if (!(reason instanceof WebhookVerificationError)) throw reason;
        res.writeHead(400).end(reason.reason);
      }
    });
  },
);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = (server.address() as AddressInfo).port;
const hook = await svc.createWebhook({
  body: { url: `https://localhost:${port}/svc-webhooks`, events: ['booking.created'] },
  idempotencyKey: true,
});
if (!hook.secret) throw new Error('the secret is shown on creation');
secret = hook.secret;
const queued = await svc.testWebhook({ path: { id: hook.id } });
const timeout = setTimeout(() => {
  throw new Error('no webhook delivery within 20 s');
}, 20_000);
const event = await delivered;
clearTimeout(timeout);
server.close();

// A webhook's `data` is the API's Booking.
const data: Booking | null = event.data;
const priced = data === null ? null : { price: price(data), flight: flightNumber(data) };

let wrongSecret: string | null = null;
try {
  verifyWebhook('{}', { 'x-svc-signature': `v1=${'0'.repeat(64)}`, 'x-svc-timestamp': '1' }, secret);
} catch (reason) {
  if (reason instanceof WebhookVerificationError) wrongSecret = reason.reason;
}

console.log(
  JSON.stringify({
    bookings: bookings.map((b) => b.id),
    linked: linked.external_id,
    replayed: replayed.external_id,
    foundId,
    error,
    event: { id: event.id, type: event.type, resource: event.resource, queued: queued.event_id },
    priced,
    firstPrice: price(first),
    wrongSecret,
  }),
);

// The 3.1 `webhooks` section: one delivery per event type, with the headers every delivery
// carries and the body envelope (`WebhookEvent`), as docs/webhooks.md tells receivers.
import { EVENT_TYPES } from '../api/events/schemas.js';

type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const DELIVERY_HEADERS: [string, string, Json][] = [
  ['User-Agent', '`SVC-Webhooks/1`.', { type: 'string', const: 'SVC-Webhooks/1' }],
  ['X-SVC-Event', 'The event type.', { type: 'string', enum: [...EVENT_TYPES] }],
  [
    'X-SVC-Event-Id',
    "The event id: the body's `id`, and the event's in GET /events.",
    { type: 'string', format: 'uuid' },
  ],
  [
    'X-SVC-Delivery',
    'The delivery id: the same on every retry of this delivery.',
    { type: 'string', format: 'uuid' },
  ],
  ['X-SVC-Attempt', 'Attempt number, starting at 1.', { type: 'integer', minimum: 1 }],
  ['X-SVC-Timestamp', 'Unix time in seconds when the attempt was signed.', { type: 'integer' }],
  [
    'X-SVC-Signature',
    '`v1=<hex>`: HMAC-SHA256 of `"{X-SVC-Timestamp}.{raw body}"` keyed with the whole secret (`whsec_…`). During a rotation overlap, two values separated by a comma: the new one, then the previous one. Verify it before reading the body.',
    { type: 'string', pattern: '^v1=[0-9a-f]{64}(,v1=[0-9a-f]{64})?$' },
  ],
];

const EVENT_TEXT: Record<string, string> = {
  'booking.created': 'A booking was created.',
  'booking.updated': 'A booking changed (`changes` names the columns).',
  'booking.assigned':
    "A booking's driver, vehicle or executor changed. An executor that lost the booking receives `data: null`.",
  'booking.started': 'The service of a booking started.',
  'booking.completed': 'A booking was completed.',
  'booking.cancelled': 'A booking was cancelled.',
  'booking.no_show': 'The passenger did not show.',
  'booking.deleted': 'A booking was deleted; `data` is the booking as it was just before.',
  'webhook.test':
    'Sent only by POST /webhooks/{id}/test: `resource.type` is `webhook`, `changes` empty, `data` null.',
};

export function webhookSection(): Json {
  const out: Json = {};
  for (const type of EVENT_TYPES) {
    out[type] = {
      post: {
        operationId: `deliver${type.replace(/(^|[._])([a-z])/g, (_m, _s, c: string) => c.toUpperCase())}`,
        tags: ['Webhook deliveries'],
        summary: type,
        description: `${EVENT_TEXT[type]} Sent as an HTTP POST to the webhook's url, retried up to 8 times over a little over an hour (3 while your server answers a permanent 4xx). Deduplicate by \`X-SVC-Event-Id\`: a delivery may arrive more than once.`,
        parameters: DELIVERY_HEADERS.map(([name, description, schema]) => ({
          name,
          in: 'header',
          required: true,
          description,
          schema,
        })),
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: ref('WebhookEvent'),
              examples: {
                body: {
                  $ref: `#/components/examples/${type === 'webhook.test' ? 'WebhookTestDelivery' : 'BookingDelivery'}`,
                },
              },
            },
          },
        },
        responses: {
          '200': { description: 'Any 2xx within 10 seconds is a success.' },
          '400': {
            description:
              'A permanent 4xx (any but 408, 409, 425 and 429) caps the delivery at 3 attempts; any other answer, a redirect, a time-out or a network error is retried.',
          },
        },
        security: [{ webhookSignature: [] }],
      },
    };
  }
  return out;
}

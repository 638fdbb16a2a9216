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
  [
    'webhook-id',
    'Standard Webhooks: the event id, as in `X-SVC-Event-Id`; the same on every retry.',
    { type: 'string', format: 'uuid' },
  ],
  ['webhook-timestamp', 'Standard Webhooks: the same Unix time as `X-SVC-Timestamp`.', { type: 'integer' }],
  [
    'webhook-signature',
    'Standard Webhooks: `v1,<base64>`: HMAC-SHA256 of `"{webhook-id}.{webhook-timestamp}.{raw body}"` keyed with the bytes the base64 after `whsec_` encodes, so any Standard Webhooks library verifies it with the secret as shown. During a rotation overlap, two values separated by a space: the new one, then the previous one.',
    { type: 'string', pattern: '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)?$' },
  ],
];

/** When each type fires: the mapping of docs/events.md (the trigger in migration 001 decides it). */
const EVENT_TEXT: Record<string, string> = {
  'booking.created': 'Fires when a booking is created. `changes` is empty and `previous_status` null.',
  'booking.updated':
    'Fires when any other announced field of a booking changes and no other type applies: times, places, passengers, prices, confirmation, and status changes that are none of the others (`en_route` to `in_progress`, to `confirmed`, `unconfirmed` or `rejected`). A booking going from `en_route` to `in_progress` is therefore a `booking.updated`. `changes` names the columns.',
  'booking.assigned':
    'Fires when the driver, the vehicle or the executing company of a booking changes (also when a deleted driver or vehicle is cleared from it), and no status type applies. An executor that lost the booking receives it too, with `data: null`; its next read of the booking is a 404.',
  'booking.started':
    "Fires when a booking's status becomes `en_route` (or `in_progress`) from a status that is neither: the driver sets off. Moving on from `en_route` to `in_progress` is a `booking.updated`.",
  'booking.completed': "Fires when a booking's status becomes `completed`.",
  'booking.cancelled': "Fires when a booking's status becomes `cancelled`.",
  'booking.no_show': "Fires when a booking's status becomes `no_show`: the passenger did not show.",
  'booking.deleted':
    'Fires when a booking is deleted; `data` is the booking as it was just before, `changes` is empty.',
  'webhook.test':
    'Sent only by POST /webhooks/{id}/test, to that webhook alone; never in GET /events. `resource.type` is `webhook`, `changes` empty, `data` null.',
};

/** The mapping above as one list, for the event-type descriptions of the document. */
export const EVENT_TYPES_DESCRIPTION = `When each type fires. A change that fits several is announced once, as the first of \`booking.created\` or \`booking.deleted\`, \`booking.completed\`, \`booking.cancelled\`, \`booking.no_show\`, \`booking.started\`, \`booking.assigned\`, \`booking.updated\`; a change of data the API does not show fires nothing.\n\n${Object.entries(
  EVENT_TEXT,
)
  .map(
    ([type, text]) => `- \`${type}\`: ${text.replace(/^Fires when /, '').replace(/^Sent only/, 'sent only')}`,
  )
  .join('\n')}`;

export function webhookSection(): Json {
  const out: Json = {};
  for (const type of EVENT_TYPES) {
    out[type] = {
      post: {
        operationId: `deliver${type.replace(/(^|[._])([a-z])/g, (_m, _s, c: string) => c.toUpperCase())}`,
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
        // Not an API key: the receiver checks X-SVC-Signature, a header of the delivery (above).
        security: [],
      },
    };
  }
  return out;
}

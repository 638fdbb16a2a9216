// What a delivery sends: the contract's envelope, with the booking shaped by the same serializer as
// the read API, for the receiving organization's role and the integration's scopes at the moment
// of the attempt. The booking is the snapshot the trigger took with the change, so `changes`,
// `previous_status` and `data` describe the same moment.
import { type BookingRow, bookingView } from '../domain/booking-view.js';
import type { AttemptContext } from './engine.js';

const toDate = (v: unknown) => (typeof v === 'string' ? new Date(v) : null);
const toNumber = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/** The snapshot (a bookings row as jsonb, with the linked names) as the serializer's row. */
export function snapshotRow(json: Record<string, unknown>, linkExternalId: string | null): BookingRow {
  return {
    ...(json as unknown as BookingRow),
    hours: toNumber(json.hours),
    distance_km: toNumber(json.distance_km),
    pickup_at: toDate(json.pickup_at) as Date,
    end_at: toDate(json.end_at),
    confirmed_at: toDate(json.confirmed_at),
    created_at: toDate(json.created_at) as Date,
    link_external_id: linkExternalId,
  };
}

/**
 * The booking for this organization, or null when it no longer sees it (an executor that lost the
 * booking is told of the change, but its next read is a 404, so the body carries no booking).
 */
function bookingData(ctx: AttemptContext): unknown {
  if (ctx.resource_type !== 'booking' || ctx.booking === null) return null;
  const row = snapshotRow(ctx.booking, ctx.link_external_id);
  const visible =
    row.originator_organization_id === ctx.organization_id ||
    row.executor_organization_id === ctx.organization_id;
  return visible ? bookingView(row, ctx.organization_id, ctx.scopes) : null;
}

export function deliveryBody(eventId: string, ctx: AttemptContext): string {
  return JSON.stringify({
    id: eventId,
    type: ctx.event_type,
    version: 1,
    created_at: ctx.event_created_at.toISOString(),
    organization: { id: ctx.organization_id },
    resource: { type: ctx.resource_type, id: ctx.resource_id },
    changes: ctx.changes,
    previous_status: ctx.previous_status,
    data: bookingData(ctx),
  });
}

/** Bodies remembered by a worker: enough for the fan-out of a few claims. */
const REMEMBERED_BODIES = 256;

/**
 * deliveryBody, remembered as the bytes sent (and signed): an event fanned out to several webhooks
 * of one integration is shaped and encoded once, not once per webhook. The key holds everything the body depends on beyond the event itself
 * (the receiving organization, the integration's scopes and its external id of the booking, read
 * at each claim), so a change of scopes or link between attempts still shows in the next body.
 */
export function deliveryBodies(): (eventId: string, ctx: AttemptContext) => Buffer {
  const bodies = new Map<string, Buffer>();
  return (eventId, ctx) => {
    const key = `${eventId} ${ctx.organization_id} ${ctx.scopes.join(',')} ${ctx.link_external_id ?? ''}`;
    let body = bodies.get(key);
    if (body === undefined) {
      body = Buffer.from(deliveryBody(eventId, ctx), 'utf8');
      if (bodies.size >= REMEMBERED_BODIES) bodies.delete(bodies.keys().next().value as string);
      bodies.set(key, body);
    }
    return body;
  };
}

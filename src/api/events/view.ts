// The public Event: identifiers, the names of changed columns and the previous internal status.
// No personal data is stored in an event, so there is nothing to hide by scope.
import type { EventRow } from './queries.js';
import type { Event } from './schemas.js';

export function eventView(row: EventRow): Event {
  return {
    id: row.id,
    type: row.type as Event['type'],
    version: row.version,
    created_at: row.created_at.toISOString(),
    resource: { type: 'booking', id: row.resource_id },
    changes: row.changes,
    previous_status: row.previous_status,
    reference: row.reference,
  };
}

// The platform feed: how the booking platform pushes its catalogue and bookings into the service.
// Handlers are thin: path ids, one transaction around the service function, the status code.
import type { FastifyBaseLogger } from 'fastify';
import { type TSchema, Type } from 'typebox';
import type { Db, Queryable } from '../../db/db.js';
import { publishCommitted } from '../../delivery/publish.js';
import { isUuid } from '../../domain/ids.js';
import { notFound } from '../../http/errors.js';
import type { App } from '../../http/kit.js';
import type { OperatorDeps } from '../deps.js';
import { BookingBody, BookingPatch, BookingRecord } from './booking-schemas.js';
import { deleteBooking, patchBooking, upsertBooking } from './bookings.js';
import {
  deleteCustomer,
  deleteDriver,
  deleteVehicle,
  upsertCustomer,
  upsertDriver,
  upsertVehicle,
} from './catalogue.js';
import { constraintToClientError } from './constraints.js';
import { Customer, CustomerBody, Deleted, Driver, DriverBody, Vehicle, VehicleBody } from './schemas.js';

// Path ids are plain strings in the schema: one that cannot name a resource is a 404, like a
// missing one, not a 400.
const Params = Type.Object({ id: Type.String(), rid: Type.String() });

function pathIds(params: { id: string; rid: string }): [string, string] {
  if (!isUuid(params.id) || !isUuid(params.rid)) throw notFound();
  return [params.id.toLowerCase(), params.rid.toLowerCase()];
}

/**
 * One transaction; a constraint that still refuses the write under a race becomes a 400/409.
 * After the commit the events it wrote are published, together with those of every write that
 * committed meanwhile (publishCommitted), so the platform's write is in the event log by the time
 * it is answered (workers would publish it within moments anyway).
 */
async function inTx<T>(
  db: Db,
  fn: (q: Queryable) => Promise<T>,
  log: FastifyBaseLogger,
  /** The write is one statement (a booking's PUT): it is its own transaction, one round trip. */
  oneStatement = false,
): Promise<T> {
  const result = await (oneStatement ? fn(db) : db.tx(fn)).catch(constraintToClientError);
  // The write has committed: a failure to publish now is the workers' to make good, not a 500.
  await publishCommitted(db).catch((error) =>
    log.warn({ err: error }, 'events left to the workers to publish'),
  );
  return result;
}

const upsertSchema = (body: TSchema, row: TSchema) => ({
  schema: { params: Params, body, response: { 200: row, 201: row } },
});
const deleteSchema = { schema: { params: Params, response: { 200: Deleted } } };

type Upsert<B> = (
  q: Queryable,
  organizationId: string,
  id: string,
  body: B,
) => Promise<{ row: unknown; created: boolean }>;
type Remove = (q: Queryable, organizationId: string, id: string) => Promise<void>;

export function feedRoutes(app: App, deps: OperatorDeps): void {
  const { db } = deps;

  // PUT creates (201) or replaces (200); DELETE answers {deleted: true}.
  const resource = <B>(
    path: string,
    body: TSchema,
    row: TSchema,
    upsert: Upsert<B>,
    remove: Remove,
    oneStatement = false,
  ) => {
    const url = `/organizations/:id/${path}/:rid`;
    app.put(url, upsertSchema(body, row), async (request, reply) => {
      const [organizationId, id] = pathIds(request.params as { id: string; rid: string });
      const written = await inTx(
        db,
        (q) => upsert(q, organizationId, id, request.body as B),
        request.log,
        oneStatement,
      );
      return reply.code(written.created ? 201 : 200).send(written.row);
    });
    app.delete(url, deleteSchema, async (request) => {
      const [organizationId, id] = pathIds(request.params);
      await inTx(db, (q) => remove(q, organizationId, id), request.log);
      return { deleted: true as const };
    });
  };

  resource('customers', CustomerBody, Customer, upsertCustomer, deleteCustomer);
  resource('drivers', DriverBody, Driver, upsertDriver, deleteDriver);
  resource('vehicles', VehicleBody, Vehicle, upsertVehicle, deleteVehicle);
  // A booking's PUT is one statement (feed_write_booking): no transaction around it.
  resource('bookings', BookingBody, BookingRecord, upsertBooking, deleteBooking, true);

  app.patch(
    '/organizations/:id/bookings/:rid',
    { schema: { params: Params, body: BookingPatch, response: { 200: BookingRecord } } },
    async (request) => {
      const [organizationId, id] = pathIds(request.params);
      return inTx(db, (q) => patchBooking(q, organizationId, id, request.body), request.log);
    },
  );
}

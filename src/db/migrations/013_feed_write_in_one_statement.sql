-- A booking pushed by the platform is checked and written by one statement.
--
-- The feed's PUT was a transaction of five round trips (BEGIN; the organization and the booking
-- locked; the rows it links to and the number; the write; COMMIT), then the publish. At 200 writes
-- a second on 2 cores, a CPU profile of `svc serve` had more than half of its main thread in the
-- socket writes of those statements (each wakes a database backend, which takes the core from the
-- writer), and PostgreSQL spent more on them than on everything the delivery engine does. As one
-- statement it is one round trip, and the statement is its own transaction: a check that fails
-- returns before anything is written, and an error raised by the write (a constraint) undoes all.
--
-- The checks are the feed's, in the same order, each answered with an outcome the service turns
-- into its error (src/operator/feed/bookings.ts):
--   no_organization       the organization does not exist                     404
--   another_organization  the booking id belongs to another organization     409 id
--   rules                 the caller found a rule between fields broken       its 422
--   reference_prefix      the number given does not begin with the code, or   422 reference
--                         is the code alone
--   executor, customer,   a linked row that is not there (the customer: of    422 that field
--   driver, vehicle       the originator, not deleted, checked only when it
--                         changes; driver and vehicle: of the executor, else
--                         of the originator)
--   reference_taken       the number given is another booking's              409 reference
--   no_number             every number drawn for a new booking was taken      500
--   written               the booking as stored, `created` when it is new
-- `cols` holds the written columns by name (BookingColumns); `draws` the random parts of a new
-- number, tried in order after the organization's code.
CREATE FUNCTION feed_write_booking(
  org uuid, booking_id uuid, rules_ok boolean, given_reference text, draws text[],
  given_created_at timestamptz, cols jsonb
) RETURNS TABLE (
  outcome text, code text, created boolean,
  -- The columns of bookings, in the table's order.
  id uuid, originator_organization_id uuid, executor_organization_id uuid, reference text,
  status text, service_type text, hours numeric, pickup_at timestamptz, end_at timestamptz,
  pickup jsonb, destination jsonb, distance_km numeric, flight jsonb, passengers jsonb,
  vehicle_category text, customer_id uuid, driver_id uuid, vehicle_id uuid, channel text,
  confirmation_mode text, confirmed_at timestamptz, event_reference text, passenger jsonb,
  pricing jsonb, internal jsonb, created_at timestamptz, updated_at timestamptz
)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  org_code text;
  prev bookings;
  r bookings;
  refusal text;
  new_customer uuid;
  number text;
  draw text;
BEGIN
  SELECT o.code INTO org_code FROM organizations o WHERE o.id = org;
  IF org_code IS NULL THEN
    refusal := 'no_organization';
  ELSE
    SELECT * INTO prev FROM bookings b WHERE b.id = booking_id FOR UPDATE;
    refusal := CASE
      WHEN prev.id IS NOT NULL AND prev.originator_organization_id <> org THEN 'another_organization'
      WHEN NOT rules_ok THEN 'rules'
      WHEN given_reference IS NOT NULL
        AND (NOT starts_with(given_reference, org_code) OR length(given_reference) <= length(org_code))
        THEN 'reference_prefix'
    END;
  END IF;
  IF refusal IS NULL THEN
    r := jsonb_populate_record(NULL::bookings, cols);
    -- A customer is checked only when it changes (one deleted since may stay on the booking).
    new_customer := CASE WHEN r.customer_id IS DISTINCT FROM prev.customer_id THEN r.customer_id END;
    -- The rows it links to, in one query; the customer share-locked, so that a concurrent soft
    -- delete of it waits for this write.
    SELECT CASE
      WHEN r.executor_organization_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM organizations o WHERE o.id = r.executor_organization_id)
        THEN 'executor'
      WHEN new_customer IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM customers c
        WHERE c.id = new_customer AND c.organization_id = org AND c.deleted_at IS NULL FOR SHARE)
        THEN 'customer'
      WHEN r.driver_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM drivers d
        WHERE d.id = r.driver_id AND d.organization_id = coalesce(r.executor_organization_id, org))
        THEN 'driver'
      WHEN r.vehicle_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM vehicles v
        WHERE v.id = r.vehicle_id AND v.organization_id = coalesce(r.executor_organization_id, org))
        THEN 'vehicle'
      -- A number the platform gave that another booking has.
      WHEN given_reference IS NOT NULL AND given_reference IS DISTINCT FROM prev.reference AND EXISTS (
        SELECT 1 FROM bookings b WHERE b.reference = given_reference AND b.id <> booking_id)
        THEN 'reference_taken'
    END INTO refusal;
  END IF;
  IF refusal IS NULL THEN
    -- The number given, else the stored one, else the first drawn that no other booking has.
    number := coalesce(given_reference, prev.reference);
    IF number IS NULL THEN
      FOREACH draw IN ARRAY coalesce(draws, '{}') LOOP
        IF NOT EXISTS (SELECT 1 FROM bookings b WHERE b.reference = org_code || draw AND b.id <> booking_id) THEN
          number := org_code || draw;
          EXIT;
        END IF;
      END LOOP;
      IF number IS NULL THEN
        refusal := 'no_number';
      END IF;
    END IF;
  END IF;
  IF refusal IS NOT NULL THEN
    RETURN QUERY SELECT refusal, CASE WHEN refusal = 'reference_prefix' THEN org_code END, NULL::boolean,
      (NULL::bookings).*;
    RETURN;
  END IF;

  IF prev.id IS NULL THEN
    INSERT INTO bookings (
      id, originator_organization_id, reference, created_at, executor_organization_id, status,
      service_type, hours, pickup_at, end_at, pickup, destination, distance_km, flight, passengers,
      vehicle_category, customer_id, driver_id, vehicle_id, channel, confirmation_mode, confirmed_at,
      event_reference, passenger, pricing, internal
    ) VALUES (
      booking_id, org, number, coalesce(given_created_at, now()), r.executor_organization_id, r.status,
      r.service_type, r.hours, r.pickup_at, r.end_at, r.pickup, r.destination, r.distance_km, r.flight,
      r.passengers, r.vehicle_category, r.customer_id, r.driver_id, r.vehicle_id, r.channel,
      r.confirmation_mode, r.confirmed_at, r.event_reference, r.passenger, r.pricing, r.internal
    )
    RETURNING * INTO r;
  ELSE
    UPDATE bookings b SET
      executor_organization_id = r.executor_organization_id, status = r.status,
      service_type = r.service_type, hours = r.hours, pickup_at = r.pickup_at, end_at = r.end_at,
      pickup = r.pickup, destination = r.destination, distance_km = r.distance_km, flight = r.flight,
      passengers = r.passengers, vehicle_category = r.vehicle_category, customer_id = r.customer_id,
      driver_id = r.driver_id, vehicle_id = r.vehicle_id, channel = r.channel,
      confirmation_mode = r.confirmation_mode, confirmed_at = r.confirmed_at,
      event_reference = r.event_reference, passenger = r.passenger, pricing = r.pricing,
      internal = r.internal, reference = number,
      created_at = coalesce(given_created_at, b.created_at), updated_at = now()
    WHERE b.id = booking_id
    RETURNING * INTO r;
  END IF;
  RETURN QUERY SELECT 'written'::text, NULL::text, prev.id IS NULL, r.*;
END
$$;

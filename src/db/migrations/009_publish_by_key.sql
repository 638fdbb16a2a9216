-- The publisher reads the outbox, and joins what it fans out, by key only.
--
-- publish_outbox's statements are planned by PL/pgSQL and their plans kept by the connection; a
-- plan made while the outbox was nearly empty read it whole, and the outbox is where every write
-- leaves a row that the next publish deletes: between two vacuums it is mostly dead rows, which a
-- whole read visits at every publish (`auto_explain` at 200 feed writes a second: the outbox read
-- whole in the publishes that took longest). The engine's own connections plan the same way
-- (enable_seqscan off, src/db/db.ts); the publisher runs on the API's connections, so the setting
-- goes with the function.
ALTER FUNCTION publish_outbox(integer, boolean) SET enable_seqscan = off;

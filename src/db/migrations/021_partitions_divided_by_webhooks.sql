-- The partitions are divided among the live workers by the webhooks they hold, not by their number:
-- 200 webhooks hashed into 64 partitions fall 40 to 59 into four equal blocks of 16, and the drain
-- ends on the worker with the most. Each partition records the worker it is assigned to, made again
-- whenever a worker joins or leaves (delivery_worker_beat in src/db/engine.sql); its owner (the one
-- worker that claims from it) moves to the assignee once the previous owner lets go.
ALTER TABLE delivery_partitions ADD COLUMN assigned uuid REFERENCES delivery_workers (id) ON DELETE SET NULL;

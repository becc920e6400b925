-- smolder's ClickHouse schema, version 2: exactly-once samples and the rollup
-- tiers (docs/store.md, "ClickHouse"). Same rules as 001: every
-- statement idempotent, only SQL that 18.16 and current releases accept.
--
-- Exactly once. A batch's rows may be inserted twice: two collectors given the
-- same batch at once both pass the duplicate check, and a batch whose `ingested`
-- row was never written (a server failing midway) is inserted again on retry.
-- So raw rows carry the batch's (agent, seq), and every read collapses the rows of
-- one (window, label set, stack, agent, seq) to one (max(value): a batch's rows are
-- the same whoever inserted them) before summing; the ReplacingMergeTree engine
-- makes the copies one row on disk at its next merge. 001's `samples` (no agent,
-- seq) is no longer written or read; it stays empty.
--
-- Tiers. `minute` and `hour` hold the rollups: one row per (bucket start, type,
-- label set, stack, src), the value summed over the bucket. They are computed in
-- ClickHouse (INSERT INTO minute SELECT ... FROM raw, INSERT INTO hour SELECT ...
-- FROM minute) by the store's maintenance, not by materialized views: a view adds
-- every insert, so a batch inserted twice would count twice in it. A rollup row is
-- a complete sum of its bucket's finer rows (src = 0), so building it again (a late
-- batch, two collectors maintaining at once) gives the same or a larger value:
-- ReplacingMergeTree(value) keeps the largest, and reads take max(value) per
-- (start, label set, stack, src). A late batch whose finer tier is already gone
-- adds its own rows with src = a hash of its (agent, seq), summed with the rest.
--
-- Every tier is partitioned by hour of its bucket start (intDiv(start, 3600)):
-- retention drops whole hours of each tier (ALTER TABLE ... DROP PARTITION), so a
-- tier's retention can be as short as an hour and its cut is an hour boundary, a
-- bucket boundary of every coarser tier.
CREATE TABLE IF NOT EXISTS raw (
	window_start Int64,
	type String,
	labelset UInt64,
	stack UInt64,
	agent String,
	seq UInt64,
	value UInt64
) ENGINE = ReplacingMergeTree() PARTITION BY intDiv(window_start, 3600)
ORDER BY (type, window_start, labelset, stack, agent, seq);

CREATE TABLE IF NOT EXISTS minute (
	start Int64,
	type String,
	labelset UInt64,
	stack UInt64,
	src UInt64,
	value UInt64
) ENGINE = ReplacingMergeTree(value) PARTITION BY intDiv(start, 3600)
ORDER BY (type, start, labelset, stack, src);

CREATE TABLE IF NOT EXISTS hour (
	start Int64,
	type String,
	labelset UInt64,
	stack UInt64,
	src UInt64,
	value UInt64
) ENGINE = ReplacingMergeTree(value) PARTITION BY intDiv(start, 3600)
ORDER BY (type, start, labelset, stack, src);

-- The tiers' watermarks, each only ever raised, so the largest value of a name is
-- its value whichever collector wrote it (reads take max(value) per name):
-- claim_T (T = 1, 2), buckets of tier T starting below it are being built or
-- built; built_T, built (store_stats.built_before); kept_T (T = 0, 1, 2), tier
-- T's rows starting below it are dropped (store_stats.kept_from). A value is stored
-- as its Int64 + 2^63 (the bits with the top one flipped): 18.16 takes only an
-- unsigned version column, and this keeps the order.
CREATE TABLE IF NOT EXISTS tiers (
	name String,
	value UInt64
) ENGINE = ReplacingMergeTree(value) ORDER BY name;

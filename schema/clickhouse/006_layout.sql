-- smolder's ClickHouse schema, version 6: the raw and minute tiers in tables
-- ordered stack-major within a time chunk, for their bytes on disk
-- (docs/store.md "ClickHouse", measured by bench/ch_bench). Same rules as
-- 001, and the cluster forms of store/clickhouse/schema.h.
--
-- 002's `raw` and `minute` were ordered (type, start, label set, stack, ...): the
-- rows of one window side by side, so the `stack` column (random 64-bit content
-- ids) changed at every row and took 2.3 of raw's 3.3 MB for the bench's hour.
-- Here the key puts a time chunk first, then label set and stack, then the start:
-- within a chunk a stack's rows are adjacent, its id repeats and its starts, seqs
-- and values form short runs. The chunk keeps a time range's reads on the primary
-- key: a read of [from, to) states the chunk condition exactly as the key writes
-- it (intDiv(window_start, 300) between those of from and to - 1; ClickHouse
-- 18.16 does not derive it from a condition on window_start alone), so a
-- 2-minute read of raw rows reads its one or two 5-minute chunks, not the hour's
-- partition. Longer chunks compress a little better (10 minutes: 3 % less raw)
-- but make short reads read more (bench/ch_bench). Chunks: CH_RAW_CHUNK_SECONDS and CH_MINUTE_CHUNK_SECONDS
-- (store/clickhouse/tables.h; tests/unit/test_ch_schema.c checks they match these keys).
-- The engines, partitions (by hour), columns and collapsing rules are 002's: the
-- ORDER BY key still holds (window, label set, stack, agent, seq) for raw and
-- (start, label set, stack, src) for minute, plus the chunk, a function of the
-- start, so rows equal by the old key are equal by the new one. `hour` keeps
-- 002's table: each of its hour partitions holds one start, so it is already
-- ordered by label set and stack.
--
-- A database of version 5 has its rows in 002's `raw` and `minute`: the
-- collector's open copies them here partition by partition (INSERT INTO
-- samples_raw SELECT ... FROM raw WHERE intDiv(window_start, 3600) = p, then
-- ALTER TABLE raw DROP PARTITION p; store/clickhouse/layout.c) before it records version
-- 6, and readers refuse the database until then. A copy made twice (a run
-- stopped between a copy and its drop, then run again) collapses like any
-- batch inserted twice. The old tables stay, empty.
CREATE TABLE IF NOT EXISTS samples_raw (
	window_start Int64,
	type String,
	labelset UInt64,
	stack UInt64,
	agent String,
	seq UInt64,
	value UInt64
) ENGINE = ReplacingMergeTree() PARTITION BY intDiv(window_start, 3600)
ORDER BY (type, intDiv(window_start, 300), labelset, stack, window_start, agent, seq);

CREATE TABLE IF NOT EXISTS samples_minute (
	start Int64,
	type String,
	labelset UInt64,
	stack UInt64,
	src UInt64,
	value UInt64
) ENGINE = ReplacingMergeTree(value) PARTITION BY intDiv(start, 3600)
ORDER BY (type, intDiv(start, 600), labelset, stack, start, src);

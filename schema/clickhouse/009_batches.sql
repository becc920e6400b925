-- smolder's ClickHouse schema, version 9: the raw tier ordered by batch within
-- a time chunk and label set, for its bytes on disk (docs/store.md
-- "ClickHouse", measured by bench/ch_bench). Same rules as 001, and the
-- cluster forms of store/clickhouse/schema.h.
--
-- 006's samples_raw was ordered (type, chunk, label set, stack, window_start,
-- agent, seq): a stack's rows side by side, so its id repeated, but every row
-- then carried a new window_start and a new seq (an agent's wall clock in ns at
-- the window's end, whose low bits are noise). On the bench's day those two
-- columns took 0.88 and 0.87 of raw's 2.84 B a row. Here a batch's rows of a
-- label set are side by side (window_start, agent, seq, then stack): the three
-- columns repeat and take 0.17 B together, the stack ids (sorted within each
-- batch, the same few hundred from one window to the next) 1.45 B instead of
-- 0.60: 2.11 B a raw row in all, the whole store 4.1 B a stored row instead of
-- 4.8 (SQLite 4.3). The chunk still leads, so a range's reads stay on the
-- primary key as in 006; the key's columns are 006's, so rows equal by one key
-- are equal by the other and collapse the same (a batch stored twice). The
-- minute tier keeps 006's order: its stack ids grow more than its starts save.
--
-- A database of version 8 has its raw rows in samples_raw: the collector's open
-- copies them here partition by partition, then drops the partition there
-- (store/clickhouse/layout.c, as for 006), before it records version 9; readers refuse
-- the database until then. samples_raw stays, empty.
CREATE TABLE IF NOT EXISTS raw_batches (
	window_start Int64,
	type String,
	labelset UInt64,
	stack UInt64,
	agent String,
	seq UInt64,
	value UInt64
) ENGINE = ReplacingMergeTree() PARTITION BY intDiv(window_start, 3600)
ORDER BY (type, intDiv(window_start, 300), labelset, window_start, agent, seq, stack);

-- smolder's ClickHouse schema, version 8: each rollup bucket's total per label
-- set, for timelines (docs/store.md "ClickHouse", measured by bench/ch_bench).
-- Same rules as 001, and the cluster forms of
-- store/clickhouse/schema.h.
--
-- A timeline sums a bucket's rows over every stack: the bench's day at 5-minute
-- steps read 3.5 M minute rows (some 2,400 stacks a minute) to give 288 numbers,
-- 210-350 ms against SQLite's 1.5 ms, which keeps a total per (bucket, label
-- set) in its block index. These tables hold the same: one row per (type,
-- start, label set) of a tier's bucket, value the sum of its rows' values over
-- every stack and src (saturated at INT64_MAX, as reads saturate).
--
-- Written by the store's rollup build with the bucket's `counts` row (005), by
-- an INSERT ... SELECT over the tier's rows (FINAL), again whenever the bucket
-- is built again (a late batch): a bucket's sums only grow, so
-- ReplacingMergeTree(value) keeps the largest, as the tiers do, and reads
-- collapse copies with FINAL. Not materialized views, for 002's reason: a view
-- adds every insert, and a bucket built twice would count twice.
--
-- A timeline uses a tier's totals over its range only when the range starts at
-- or above the tier's `totals_T` watermark, which the collector that applies
-- this file writes in `tiers` (the tier's claim_T then: buckets below it may
-- have been built without totals, and before 005 without `counts` rows), and
-- the totals there have as many rows as that range's `counts` rows name
-- (distinct label sets per bucket: a bucket built by a collector of version 7
-- still running has neither); else it sums the tier's rows as before. So an
-- upgraded database answers correctly, from the tier's rows, for ranges that
-- reach below the mark, until retention ages those buckets out.
--
-- Partitioned by day, not by hour as the tiers: a day's timeline reads one or
-- two partitions, and FINAL over 24 hourly partitions took 27-48 ms against
-- 8-20 ms over one. Retention drops a day once the tier's cut passed all of it;
-- reads never go below the tier's kept_T, so the day's rest is never read.
CREATE TABLE IF NOT EXISTS totals_minute (
	start Int64,
	type String,
	labelset UInt64,
	value UInt64
) ENGINE = ReplacingMergeTree(value) PARTITION BY intDiv(start, 86400)
ORDER BY (type, start, labelset);

CREATE TABLE IF NOT EXISTS totals_hour (
	start Int64,
	type String,
	labelset UInt64,
	value UInt64
) ENGINE = ReplacingMergeTree(value) PARTITION BY intDiv(start, 86400)
ORDER BY (type, start, labelset);

-- smolder's ClickHouse schema, version 5: what store__stats() reports of the
-- tiers, counted when a rollup is built instead of by a scan of the tiers at every
-- call (stats are scraped). Same rules as 001.
--
-- One row per (tier, bucket): tier 0 the raw rows of a minute bucket, tier 1 a
-- minute's rollup rows, tier 2 an hour's; rows the distinct (start, label set,
-- stack) in it (stats.sample_rows for tier 0), blocks the distinct (start, label
-- set) (stats.blocks). Written by the store's rollup build (store/clickhouse/tiers.c)
-- after the bucket's rows, again when a late batch makes it build a bucket
-- again: counts only grow, ReplacingMergeTree(rows) keeps the largest and reads
-- take max per bucket. stats add the raw rows not yet built over (at or after
-- built_1: the last minutes) counted live. Partitioned by hour like the tiers, so
-- retention drops what no tier keeps.
CREATE TABLE IF NOT EXISTS counts (
	tier UInt8,
	bucket Int64,
	rows UInt64,
	blocks UInt64
) ENGINE = ReplacingMergeTree(rows) PARTITION BY intDiv(bucket, 3600)
ORDER BY (tier, bucket);

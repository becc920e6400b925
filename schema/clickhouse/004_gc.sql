-- smolder's ClickHouse schema, version 4 (3 is the cluster's): when each stack
-- and label set was last seen by an ingest, for the dictionary GC
-- (store/clickhouse/gc.c, docs/store.md "ClickHouse"). Same rules as 001.
--
-- A row (kind, id, at): kind 0 a stack, 1 a label set; at the ingest's time (the
-- batch's receive time, or its window's start for store__ingest()), clamped to
-- 0 and above. ReplacingMergeTree(at) keeps the latest; reads take max(at). The
-- GC deletes a stack or label set that no raw, minute or hour row uses and that
-- was last seen more than CH_GC_GRACE_SECONDS ago, so that a batch being
-- ingested meanwhile (it writes these rows first) keeps what it uses. A separate
-- table rather than a column of `stacks`: 18.16 has no ADD COLUMN IF NOT EXISTS,
-- and every statement here must be safe to run twice.
CREATE TABLE IF NOT EXISTS seen (
	kind UInt8,
	id UInt64,
	at UInt64
) ENGINE = ReplacingMergeTree(at) ORDER BY (kind, id);

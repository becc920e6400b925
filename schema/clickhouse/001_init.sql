-- smolder's ClickHouse schema, version 1 (store/clickhouse/clickhouse.c applies it on open,
-- one statement per request, in the location's database; every statement is
-- idempotent, so collectors starting together may all apply it). Only SQL that
-- both Debian 12's ClickHouse 18.16 and current releases accept: no TTL clause, no
-- LowCardinality, engines in the "ENGINE = X() PARTITION BY ... ORDER BY ..." form.
--
-- Ids are content hashes computed by the collector (store/clickhouse/clickhouse.c:
-- hash64 of a stack's sanitized frames, of a label set's sorted pairs), so that
-- every collector gives the same stack the same id and a batch stored through any
-- collector refers to the same dictionary rows; the dictionaries are
-- ReplacingMergeTree tables, where a row inserted twice becomes one at merge time
-- (queries read them with LIMIT 1 BY id until then).

-- One row per (window, label set, stack) of a batch: the samples. Partitioned by
-- day of the window (retention drops whole days: ALTER TABLE ... DROP PARTITION),
-- ordered for a range of windows of one profile type, then label set and stack.
CREATE TABLE IF NOT EXISTS samples (
	window_start Int64,
	type String,
	labelset UInt64,
	stack UInt64,
	value UInt64
) ENGINE = MergeTree() PARTITION BY intDiv(window_start, 86400)
ORDER BY (type, window_start, labelset, stack);

-- The stacks: id -> frames, root first (kind, name, file, line as
-- common/frame.h's struct frame).
CREATE TABLE IF NOT EXISTS stacks (
	id UInt64,
	kinds Array(UInt8),
	names Array(String),
	files Array(String),
	lines Array(UInt32)
) ENGINE = ReplacingMergeTree() ORDER BY id;

-- The label sets: id -> pairs sorted by key; the profile type is the pair
-- __type__=TYPE except for cpu (store.h STORE_TYPE_LABEL).
CREATE TABLE IF NOT EXISTS labelsets (
	id UInt64,
	lkeys Array(String),
	lvalues Array(String)
) ENGINE = ReplacingMergeTree() ORDER BY id;

-- The batches stored: (agent, seq) makes ingest idempotent; the window's length
-- and period answer store__windows(). Partitioned like samples, so retention
-- drops them with their samples.
CREATE TABLE IF NOT EXISTS ingested (
	agent String,
	seq UInt64,
	window_start Int64,
	window_seconds UInt32,
	period_ns UInt64,
	type String
) ENGINE = ReplacingMergeTree() PARTITION BY intDiv(window_start, 86400)
ORDER BY (agent, seq);

-- smolder's ClickHouse schema, stacks by content id (the fleet wire, wire format 3:
-- schema/smolder.proto; store__stackrefs in store/store.h; store/clickhouse/stackref.c).
-- Numbered after 002, written beside it. Only SQL that 18.16 and current releases
-- accept, as 001.
--
-- id: the 16-byte content id; bytes: the stack's canonical bytes
-- (wire/stackid.h), from which the collector computed the id before inserting;
-- last_used: unix seconds of the last batch that named the id. A use more than an
-- hour after the row's last_used inserts the row again with the new time, so the
-- newest row of an id is in the partition of the day it was last used; the rows
-- of one id in one partition become one at merge time (reads take the newest
-- with LIMIT 1 BY id until then). Retention drops whole days of last_used
-- (ALTER TABLE ... DROP PARTITION, as samples): an id unused for the retention is
-- forgotten, one used since lives on in a newer partition.
CREATE TABLE IF NOT EXISTS stackrefs (
	id FixedString(16),
	bytes String,
	last_used Int64
) ENGINE = ReplacingMergeTree() PARTITION BY intDiv(last_used, 86400)
ORDER BY id;

/* The ClickHouse store's tier tables (store/clickhouse/tables.c;
 * schema/clickhouse/002_tiers.sql, 006_layout.sql, 008_totals.sql,
 * 009_batches.sql): their names, start columns, time chunks and partitions, and
 * the schema versions that moved rows between them.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_TABLES_H
#define SMOLDER_STORE_CLICKHOUSE_TABLES_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

/* Every tier table is partitioned by hour of its rows' starts: retention drops
 * whole partitions of this length. */
#define CH_PARTITION_SECONDS 3600

/* The first and last start a partition intDiv(start, len) = p holds (intDiv
 * truncates toward zero, as C's / does: partition 0 holds (-len, len)). */
static inline int64_t ch_partition_first(int64_t p, int64_t len)
{
	return p > 0 ? p * len : (p - 1) * len + 1;
}

static inline int64_t ch_partition_last(int64_t p, int64_t len)
{
	return p >= 0 ? (p + 1) * len - 1 : p * len;
}

/* Whether p can be a partition of len-second starts: every start is within
 * +-STORE_MAX_ABS_WINDOW, so one past that is a server's answer gone wrong, and
 * its bounds above would overflow. */
static inline bool ch_partition_sane(int64_t p, int64_t len)
{
	return len > 0 && p >= -(STORE_MAX_ABS_WINDOW / len) - 1 &&
	       p <= STORE_MAX_ABS_WINDOW / len + 1;
}
/* The raw and minute tiers' tables (009_batches.sql and 006_layout.sql; 002's
 * `raw` and `minute`, then 006's samples_raw before, emptied into these by
 * clickhouse/layout.c), and the time chunk that leads each one's ORDER BY key after the
 * type: intDiv(start, CHUNK). A read of a range states the chunk condition as
 * the key writes it (ch_w_chunk()), else 18.16 reads the whole partition.
 * tests/unit/test_ch_schema.c checks these against the schema files. `hour`
 * keeps 002's table. */
#define CH_RAW_TABLE		"raw_batches"
#define CH_MINUTE_TABLE		"samples_minute"
#define CH_RAW_CHUNK_SECONDS	300
#define CH_MINUTE_CHUNK_SECONDS 600
/* The schema versions whose open moves rows into new tables: 6 moves 002's into
 * 006's, 9 moves 006's raw rows into 009's (clickhouse/layout.c). */
#define CH_LAYOUT_VERSION  6
#define CH_BATCHES_VERSION 9
/* `ingested` (001) is partitioned by day. */
#define CH_INGESTED_PARTITION_SECONDS 86400

/* The table and start column of a tier. */
const char *ch_tier_table(int tier);
const char *ch_tier_column(int tier);
/* The totals of tier 1 or 2 (008_totals.sql: a bucket's sum per type and label
 * set, for timelines), partitioned by day; NULL for the raw tier. */
#define CH_TOTALS_PARTITION_SECONDS 86400
const char *ch_totals_table(int tier);

#endif

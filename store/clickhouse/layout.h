/* The moves of the ClickHouse store's rows into the tables of schemas 6 and 9
 * (store/clickhouse/layout.c; schema/clickhouse/006_layout.sql, 009_batches.sql).
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_LAYOUT_H
#define SMOLDER_STORE_CLICKHOUSE_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/clickhouse/handle.h"

/* Moves every row of the tables a schema up to version left behind into the
 * tables that replaced them: for 6, 002's `raw` and `minute` into 006's
 * samples_raw and CH_MINUTE_TABLE; for 9, samples_raw into CH_RAW_TABLE. Each
 * partition by partition: a copy (INSERT ... SELECT) then the old partition
 * dropped. Resumable: a run stopped anywhere leaves each old row in the old
 * table, the new one, or both (copies that reads and merges collapse), and the
 * next run goes on. Nothing to do (a read per old table) when they are empty.
 * 0 or -errno. */
int ch_layout_migrate(struct ch_store *s, int64_t version);

#endif

/* The ClickHouse store's dictionary garbage collection (store/clickhouse/gc.c;
 * schema/clickhouse/004_gc.sql).
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_GC_H
#define SMOLDER_STORE_CLICKHOUSE_GC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/clickhouse/handle.h"

/* A stack or label set last seen (004's `seen`) this long before a GC's now is
 * deleted when no raw, minute or hour row uses it. Longer than any ingest takes
 * between its `seen` insert and its raw insert, by far; and twice the ingest
 * cache's refresh interval, CH_SEEN_REFRESH_SECONDS, so that an id a collector's
 * cache still counts as stored was seen within it. */
#define CH_GC_GRACE_SECONDS	3600
#define CH_SEEN_REFRESH_SECONDS (CH_GC_GRACE_SECONDS / 2)
/* A GC pass (a scan of the ids the tiers use) runs at most this often, by the
 * maintain calls' now, unless the last one left more to delete. */
#define CH_GC_INTERVAL_SECONDS 300
/* Ids of each kind one pass deletes at most (one ALTER ... DELETE per table). */
#define CH_GC_MAX_IDS 256
enum { CH_SEEN_STACK = 0, CH_SEEN_LABELSET = 1 };

/* One bounded GC pass at now when due; *more set when ids remain. 0 or -errno. */
int ch_gc_step(struct ch_store *s, int64_t now, bool *more);

#endif

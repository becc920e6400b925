/* The ClickHouse store's upkeep (store/clickhouse/maint.c), entries of
 * store_clickhouse_backend: rollups, retention, GC rounds, stats and checks.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_MAINT_H
#define SMOLDER_STORE_CLICKHOUSE_MAINT_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

int ch_stats(struct store *base, struct store_stats *st);
int ch_check(struct store *base);
int ch_maintain(struct store *base, int64_t now, size_t max_rows, bool *more);

#endif

/* The SQLite store's timelines (store/sqlite/series.c), an entry of
 * store_sqlite_backend.
 */
#ifndef SMOLDER_STORE_SQLITE_SERIES_H
#define SMOLDER_STORE_SQLITE_SERIES_H

#include <stdint.h>

#include "store/store.h"

int sqlite_store__query_series(struct store *s, const struct store_query *q, int64_t step_seconds,
			       store_series_fn cb, void *ctx);

#endif

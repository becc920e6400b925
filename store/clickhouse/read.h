/* The ClickHouse store's reads (store/clickhouse/read.c), entries of
 * store_clickhouse_backend: flame graphs' stacks, timelines, labels, windows.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_READ_H
#define SMOLDER_STORE_CLICKHOUSE_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

int ch_query_stacks(struct store *base, const struct store_query *q, store_stack_fn cb, void *ctx);
int ch_query_series(struct store *base, const struct store_query *q, int64_t step,
		    store_series_fn cb, void *ctx);
int ch_labels(struct store *base, const struct store_query *q, store_text_fn cb, void *ctx);
int ch_label_values(struct store *base, const char *key, const struct store_query *q,
		    store_text_fn cb, void *ctx);
int ch_label_key_used(struct store *base, const char *key, int64_t from, int64_t to);
int ch_windows(struct store *base, const struct store_query *q, struct store_windows *out);

#endif

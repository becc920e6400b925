/* The ClickHouse store's store__ingest() and store__ingest_many()
 * (store/clickhouse/ingest.c), entries of store_clickhouse_backend.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_INGEST_H
#define SMOLDER_STORE_CLICKHOUSE_INGEST_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/batch.h"
#include "store/store.h"

int ch_ingest(struct store *base, const struct batch *b, const int64_t *now, bool *duplicate);
int ch_store__ingest_many(struct store *s, const struct batch *const *batches, size_t n,
			  const int64_t *now, struct store_ingest_result *results);

#endif

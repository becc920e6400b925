/* The ClickHouse store's store__stackrefs() (store/clickhouse/stackref.c), an
 * entry of store_clickhouse_backend.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_STACKREF_H
#define SMOLDER_STORE_CLICKHOUSE_STACKREF_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

int ch_store__stackrefs(struct store *s, int64_t now, struct store_stackref *refs, size_t n);

#endif

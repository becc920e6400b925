/* The SQLite store's flame graph reads (store/sqlite/read.c), an entry of
 * store_sqlite_backend, and their cache of stacks' frames.
 */
#ifndef SMOLDER_STORE_SQLITE_READ_H
#define SMOLDER_STORE_SQLITE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/sqlite/db.h"

int sqlite_store__query_stacks(struct store *s, const struct store_query *q, store_stack_fn cb,
			       void *ctx);

/* The read cache's destructor (read.c), called by store__close(); NULL is fine.
 * Ingest's caches have theirs in store/intern.h. */
void store_read_cache_free(struct store_read_cache *rc);

/* Test hooks of read.c's cache (tests/unit/test_store_read.c): its size in bytes,
 * and a cap other than the default (made if missing). */
size_t store_read_cache_bytes(struct sqlite_store *s);
int store_read_cache_set_cap(struct sqlite_store *s, size_t cap);

#endif

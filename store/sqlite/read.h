/* The SQLite store's reads (store/sqlite/read.c), entries of
 * store_sqlite_backend: flame graphs' stacks, timelines and labels; the checks
 * and the typed selection of a query that windows.c shares; and the read
 * cache of stacks' frames.
 */
#ifndef SMOLDER_STORE_SQLITE_READ_H
#define SMOLDER_STORE_SQLITE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/sqlite/db.h"

int sqlite_store__query_stacks(struct store *s, const struct store_query *q, store_stack_fn cb,
			       void *ctx);
int sqlite_store__query_series(struct store *s, const struct store_query *q, int64_t step_seconds,
			       store_series_fn cb, void *ctx);
int sqlite_store__labels(struct store *s, const struct store_query *q, store_text_fn cb, void *ctx);
int sqlite_store__label_values(struct store *s, const char *key, const struct store_query *q,
			       store_text_fn cb, void *ctx);
int sqlite_store__label_key_used(struct store *s, const char *key, int64_t from, int64_t to);

/* The most labels a query selects by. */
#define QUERY_MAX_LABELS BATCH_MAX_LABELS

/* A query's profile type as a selection (store.h): a type other than cpu is one
 * more label, STORE_TYPE_LABEL=type; the CPU profile is the label sets without
 * that label (cpu_only). */
struct store_typed_query {
	struct store_query q;
	const char *keys[QUERY_MAX_LABELS + 1];
	const char *values[QUERY_MAX_LABELS + 1];
	bool cpu_only;
};

/* q (checked by store_check_query) as a typed query (read.c); t->q borrows q's
 * strings. */
void store_type_query(const struct store_query *q, struct store_typed_query *t);

/* Checks a store_query's arguments (read.c): NULL pointers, at most
 * BATCH_MAX_LABELS labels, each key and value set. Clears the last message.
 * Returns 0 or -EINVAL (with a reason for too many labels). */
int store_check_query(struct sqlite_store *s, const struct store_query *q);

/* The read cache's destructor (read.c), called by store__close(); NULL is fine.
 * Ingest's caches have theirs in store/intern.h. */
void store_read_cache_free(struct store_read_cache *rc);

/* Test hooks of read.c's cache (tests/unit/test_store_read.c): its size in bytes,
 * and a cap other than the default (made if missing). */
size_t store_read_cache_bytes(struct sqlite_store *s);
int store_read_cache_set_cap(struct sqlite_store *s, size_t cap);

#endif

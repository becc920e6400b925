/* The SQLite store's label keys and values in use (store/sqlite/labels.c),
 * entries of store_sqlite_backend.
 */
#ifndef SMOLDER_STORE_SQLITE_LABELS_H
#define SMOLDER_STORE_SQLITE_LABELS_H

#include <stdint.h>

#include "store/store.h"

int sqlite_store__labels(struct store *s, const struct store_query *q, store_text_fn cb, void *ctx);
int sqlite_store__label_values(struct store *s, const char *key, const struct store_query *q,
			       store_text_fn cb, void *ctx);
int sqlite_store__label_key_used(struct store *s, const char *key, int64_t from, int64_t to);

#endif

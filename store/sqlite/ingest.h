/* The SQLite store's store__ingest() and store__ingest_many()
 * (store/sqlite/ingest.c), entries of store_sqlite_backend.
 */
#ifndef SMOLDER_STORE_SQLITE_INGEST_H
#define SMOLDER_STORE_SQLITE_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/batch.h"
#include "store/store.h"

int sqlite_store__ingest(struct store *s, const struct batch *b, const int64_t *now,
			 bool *duplicate);
int sqlite_store__ingest_many(struct store *s, const struct batch *const *batches, size_t n,
			      const int64_t *now, struct store_ingest_result *results);

#endif

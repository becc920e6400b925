/* The SQLite store's store__stackrefs() (store/sqlite/stackref.c), an entry of
 * store_sqlite_backend.
 */
#ifndef SMOLDER_STORE_SQLITE_STACKREF_H
#define SMOLDER_STORE_SQLITE_STACKREF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

int sqlite_store__stackrefs(struct store *s, int64_t now, struct store_stackref *refs, size_t n);

#endif

/* The SQLite store's upkeep (store/sqlite/maintain.c), entries of
 * store_sqlite_backend: rollups, retention per tier, GC rounds, stats, checks.
 */
#ifndef SMOLDER_STORE_SQLITE_MAINTAIN_H
#define SMOLDER_STORE_SQLITE_MAINTAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

int sqlite_store__stats(struct store *s, struct store_stats *st);
int sqlite_store__schema_version(struct store *s, int64_t *version);
int sqlite_store__check(struct store *s);
int sqlite_store__maintain(struct store *s, int64_t now, size_t max_rows, bool *more);

#endif

/* The SQLite store's store__windows() (store/sqlite/windows.c;
 * schema/sqlite/004_windows.sql), an entry of store_sqlite_backend.
 */
#ifndef SMOLDER_STORE_SQLITE_WINDOWS_H
#define SMOLDER_STORE_SQLITE_WINDOWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

int sqlite_store__windows(struct store *s, const struct store_query *q, struct store_windows *out);

#endif

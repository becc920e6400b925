/* The SQLite store's dictionary garbage collection (store/sqlite/gc.c;
 * schema/sqlite/006_gc.sql).
 */
#ifndef SMOLDER_STORE_SQLITE_GC_H
#define SMOLDER_STORE_SQLITE_GC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/sqlite/db.h"

/* Ingest raises a stack's or label set's last_seen only when a batch's window is
 * more than this past it: at most one UPDATE per row and hour, and GC keeps what
 * was seen this long before the oldest block. */
#define STORE_GC_SEEN_SLACK STORE_HOUR_SECONDS

/* Computes 006's refs and last_seen of the rows that were there before it, in one
 * transaction, when state.gc_pending says they are not yet (a writer's open, after
 * the conversion of 004's samples). Returns 0 or -errno. */
int store_gc_init(struct sqlite_store *s);

/* One bounded round of GC, label sets -> stacks -> frames -> strings, each step its
 * own transaction: deletes at most about *budget rows (taken off it), sets *more
 * when it stopped for the budget. Nothing while gc_pending. Returns 0 or -errno. */
int store_gc(struct sqlite_store *s, int64_t *budget, bool *more);

#endif

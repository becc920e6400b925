/* The collector's pool of reader stores: queries read the database on
 * connections of their own (store__open with read_only), so a query, however
 * long it reads, never holds the lock ingest takes, and ingest never holds one a
 * query needs. In WAL mode a reader reads the last commit while the one writer
 * commits more. One reader per query worker (queries.h), each behind its own
 * mutex: a query takes a free one, and waits for a busy one only when every
 * reader is in use (more queries at once than workers, which the pool does not
 * make).
 *
 * Cost: one SQLite connection each (its descriptors, and a page cache of
 * SQLite's default size, about 2 MB) and its cached statements.
 *
 * Thread-safety: readers__take() and readers__give() from any thread; the store
 * taken is the caller's alone until it is given back.
 */
#ifndef SMOLDER_COLLECTOR_READERS_H
#define SMOLDER_COLLECTOR_READERS_H

#include <stddef.h>

struct readers;
struct store;

/* Opens n (1 to READERS_MAX) readers of the database file at path, which a
 * writer already opened and migrated (see store__open's read_only). Returns 0,
 * -EINVAL (n out of range, a path no other connection can share such as
 * ":memory:"), or store__open()'s error. */
#define READERS_MAX 64
int readers__new(const char *path, size_t n, struct readers **out);

/* Closes every reader; none may be taken. Accepts NULL. */
void readers__free(struct readers *r);

/* A reader for the caller alone: a free one, else one in use after it is given
 * back. *slot is what readers__give() needs. */
struct store *readers__take(struct readers *r, size_t *slot);

/* Gives the reader taken as slot back. */
void readers__give(struct readers *r, size_t slot);

#endif

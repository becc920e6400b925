/* Private to the SQLite store (store/sqlite/): the handle every piece works on
 * (struct sqlite_store: one connection, with every statement prepared once and
 * cached) and what store/sqlite/db.c gives them: statement caches, stepping and
 * transactions, and SQLite's results translated into 0/-errno with the last
 * message kept for store__errmsg(). Each piece's own functions are declared in
 * its own header (store/sqlite/X.h for X.c); the map of the pieces is at the top
 * of store/backend.h. The storage model is described at the top of
 * schema/sqlite/001_init.sql, 005_blocks.sql, 008_window_blocks.sql and
 * 010_minute_blocks.sql. Only store/ includes <sqlite3.h>.
 */
#ifndef SMOLDER_STORE_SQLITE_DB_H
#define SMOLDER_STORE_SQLITE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/backend.h"
#include "store/store.h"

/* stacks.hash of a stack's blob (schema/sqlite/007_stack_hash.sql, 011_stack_hash32.sql):
 * FNV-1a of 64 bits folded to 32 (high half XOR low half), as a signed integer so
 * that SQLite stores it in 4 bytes. Part of the file format: never change it
 * without a migration that rewrites every row's. */
static inline int64_t store_stack_hash(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return (int32_t)(uint32_t)(h ^ (h >> 32));
}

/* The statements every piece shares: stmt_sql[] in open.c holds their SQL. Each
 * piece's own statements are in its slots (store_slot_stmt()). */
enum stmt_id {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_STATS,
	ST_NR,
};

/* Statements a module prepares with its own SQL, cached in struct sqlite_store by slot
 * (store_slot_stmt()): each module numbers its statements from its first slot. */
enum store_slot {
	SLOT_INGEST = 0,    /* ingest.c: 24 slots */
	SLOT_READ = 24,	    /* the reads (select.h) and windows.c: 24 */
	SLOT_MAINTAIN = 48, /* maintain.c and migrate.c: 24 */
	SLOT_TIERS = 72,    /* tiers.c: 8 */
	SLOT_GC = 80,	    /* gc.c: 16 */
	SLOT_NR = 96,
};

struct store_intern;	 /* ingest.c's caches of dictionary ids */
struct store_read_cache; /* read.c's caches of stacks' frames */

/* The SQLite backend's handle (store/backend.h): base first. */
struct sqlite_store {
	struct store base; /* backend = &store_sqlite_backend */
	sqlite3 *db;
	sqlite3_stmt *stmt[ST_NR];   /* prepared on first use */
	sqlite3_stmt *slot[SLOT_NR]; /* store_slot_stmt()'s */
	struct store_options opts;   /* defaults filled in */
	char errmsg[256];	     /* last error, for the log */
	uint8_t *buf;		     /* scratch for stack and label set blobs */
	size_t bufcap;
	struct store_intern *intern;	 /* NULL until ingest.c makes it */
	struct store_read_cache *rcache; /* NULL until read.c makes it */
};

/* The SQLite store behind a handle of store_sqlite_backend (tests and benches
 * that look inside the file use these too). */
static inline struct sqlite_store *sqlite_store_of(struct store *s)
{
	return (struct sqlite_store *)s;
}

static inline const struct sqlite_store *sqlite_store_of_const(const struct store *s)
{
	return (const struct sqlite_store *)s;
}

/* The statement in slot, prepared from sql (a string constant: the same for a
 * slot every call) on first use and cached until store__close(). */
int store_slot_stmt(struct sqlite_store *s, int slot, const char *sql, sqlite3_stmt **out);

/* Records SQLite's message for rc and returns the translated error (never 0). */
int store_sql_fail(struct sqlite_store *s, int rc);

/* Records our own reason and returns err. */
__attribute__((format(printf, 3, 4))) int store_fail(struct sqlite_store *s, int err,
						     const char *fmt, ...);

/* The cached statement id, prepared on first use; owned by s. */
int store_get_stmt(struct sqlite_store *s, enum stmt_id id, sqlite3_stmt **out);

/* Steps a statement whose bindings are set; for SQLITE_ROW the caller reads the
 * row and calls store_done(). Returns SQLITE_ROW (1), SQLITE_DONE (0, statement reset)
 * or -errno (statement reset). */
int store_step(struct sqlite_store *s, sqlite3_stmt *st);

/* Runs a cached statement that takes no parameters and returns no rows. */
int store_run(struct sqlite_store *s, enum stmt_id id);

/* Rolls back the open transaction, if any. */
void store_rollback(struct sqlite_store *s);

/* Reads one integer from a one-row query (PRAGMA or SELECT). */
int store_query_int(struct sqlite_store *s, const char *sql, int64_t *out);

/* Ends a use of a cached statement: resets it and clears its bindings. */
static inline void store_done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

#endif

/* Private to store/: what the pieces of the SQLite profile store share, included by
 * the .c files of store/ only (the public contract is store.h, the storage model is
 * described at the top of schema/001_init.sql). It holds struct store (one
 * connection, with every statement prepared once and cached), the ids of the cached
 * statements (their SQL is in open.c), the statement and error helpers of open.c,
 * the watermark reader of maintain.c, and the varint and floor_div helpers that
 * ingest, queries and maintenance use. The pieces: open.c (open, close, migrations,
 * statement cache, error translation), ingest.c, read.c, maintain.c and windows.c (the windows
 * table: each stored window's length and sampling period, schema/004_windows.sql). Only store/
 * includes <sqlite3.h>.
 */
#ifndef SMOLDER_STORE_INT_H
#define SMOLDER_STORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/store.h"

/* The most bytes one uint64_t takes as a varint. */
#define VARINT_MAX 10

/* The cached statements: stmt_sql[] in open.c holds their SQL. */
enum stmt_id {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_SEEN,
	ST_STATE,
	ST_BATCHES_INC,
	ST_STR_GET,
	ST_STR_PUT,
	ST_FRAME_GET,
	ST_FRAME_PUT,
	ST_STACK_GET,
	ST_STACK_PUT,
	ST_LS_GET,
	ST_LS_PUT,
	ST_LSL_PUT,
	ST_SAMPLE_ADD,
	ST_INGESTED_PUT,
	ST_STACK_FRAMES,
	ST_FRAME_TEXT,
	ST_RET_SAMPLES,
	ST_RET_INGESTED,
	ST_FIRST_WINDOW,
	ST_MERGE_MOVE,
	ST_MERGE_DELETE,
	ST_SET_WATERMARK,
	ST_STATS,
	ST_WINDOW_ADD,
	ST_WINDOW_MERGE,
	ST_WINDOW_MERGE_DELETE,
	ST_RET_WINDOWS,
	ST_WINDOWS_RANGE,
	ST_WINDOWS_PERIODS,
	ST_NR,
};

/* The windows queries (store/windows.c), cached as such without a label
 * selection; with one, windows.c inserts its clause before the tail. */
#define STORE_WINDOWS_RANGE_SQL                                                                    \
	"SELECT count(*), min(window_start), max(window_start + seconds), "                        \
	"count(DISTINCT window_start), min(seconds), max(seconds) FROM windows w "                 \
	"WHERE window_start >= ?1 AND window_start < ?2"
#define STORE_WINDOWS_PERIODS_SQL                                                                  \
	"SELECT period_ns, sat_sum(batches) FROM windows w "                                       \
	"WHERE window_start >= ?1 AND window_start < ?2"
#define STORE_WINDOWS_PERIODS_TAIL " GROUP BY period_ns ORDER BY 2 DESC, 1"

struct store {
	sqlite3 *db;
	sqlite3_stmt *stmt[ST_NR]; /* prepared on first use */
	struct store_options opts; /* defaults filled in */
	char errmsg[256];	   /* last error, for the log */
	uint8_t *buf;		   /* scratch for stack and label set blobs */
	size_t bufcap;
};

/* Records SQLite's message for rc and returns the translated error (never 0). */
int store_sql_fail(struct store *s, int rc);

/* Checks a store_query's arguments (read.c): NULL pointers, at most
 * BATCH_MAX_LABELS labels, each key and value set. Clears the last message.
 * Returns 0 or -EINVAL (with a reason for too many labels). */
int store_check_query(struct store *s, const struct store_query *q);

/* Records our own reason and returns err. */
__attribute__((format(printf, 3, 4))) int store_fail(struct store *s, int err, const char *fmt,
						     ...);

/* The cached statement id, prepared on first use; owned by s. */
int store_get_stmt(struct store *s, enum stmt_id id, sqlite3_stmt **out);

/* Steps a statement whose bindings are set; for SQLITE_ROW the caller reads the
 * row and calls store_done(). Returns SQLITE_ROW (1), SQLITE_DONE (0, statement reset)
 * or -errno (statement reset). */
int store_step(struct store *s, sqlite3_stmt *st);

/* Runs a cached statement that takes no parameters and returns no rows. */
int store_run(struct store *s, enum stmt_id id);

/* Rolls back the open transaction, if any. */
void store_rollback(struct store *s);

/* Reads one integer from a one-row query (PRAGMA or SELECT). */
int store_query_int(struct store *s, const char *sql, int64_t *out);

/* Reads the downsampling watermark; *set is false when nothing was merged yet. */
int store_read_watermark(struct store *s, bool *set, int64_t *wm);

/* Ends a use of a cached statement: resets it and clears its bindings. */
static inline void store_done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* a / b rounded toward minus infinity. */
static inline int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Writes v as an unsigned LEB128 varint (at most VARINT_MAX bytes) at p; returns
 * its length. */
static inline size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Decodes one varint from [*p, end); returns false on a truncated or overlong one. */
static inline bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*p < end && shift < 64) {
		uint8_t c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

#endif

/* Private to store/: what the pieces of the SQLite profile store share, included by
 * the .c files of store/ only (the public contract is store.h; the storage model is
 * described at the top of schema/sqlite/001_init.sql, schema/sqlite/005_blocks.sql,
 * schema/sqlite/008_window_blocks.sql and schema/sqlite/010_minute_blocks.sql). It holds
 * struct sqlite_store (one connection, with every statement prepared once and cached),
 * the statement and error helpers of open.c, the tiers and block helpers of
 * tiers.c, the hooks of the per-connection caches, and the varint and floor_div
 * helpers. The pieces:
 *   open.c      open, close, migrations, statement caches, error translation
 *   ingest.c    batches into raw blocks (and built rollups, for late ones)
 *   intern.c    ingest's in-memory caches of dictionary ids (store/intern.h)
 *   read.c      stacks and timelines of a range and selection, labels
 *   windows.c   each stored window's length and period (schema/sqlite/004_windows.sql)
 *   tiers.c     the tiers' watermarks, the query plan over tiers, adding to a block
 *   maintain.c  rollups, retention per tier, stats
 *   migrate.c   the conversions of 004's samples rows into raw blocks, of
 *               005-007's raw blocks into window blocks (schema/sqlite/008) and of
 *               005-009's minute blocks into bucket blocks (schema/sqlite/010)
 *   gc.c        the dictionaries' garbage collection (schema/sqlite/006_gc.sql)
 *   block.c     the block codec (no SQLite)
 *   store.c     the dispatcher of store.h over the backends (store/backend.h)
 * Only store/ includes <sqlite3.h>.
 */
#ifndef SMOLDER_STORE_INT_H
#define SMOLDER_STORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "common/batch.h"
#include "store/backend.h"
#include "store/block.h"
#include "store/store.h"

/* The most bytes one uint64_t takes as a varint. */
#define VARINT_MAX 10

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
	SLOT_READ = 24,	    /* read.c and windows.c: 24 */
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

/* The entries of store_sqlite_backend (store/backend.h), one per file that
 * implements them: open.c, ingest.c, read.c, windows.c, maintain.c. */
int sqlite_store__open(const char *path, const struct store_options *opts, struct store **out);
void sqlite_store__close(struct store *s);
const char *sqlite_store__errmsg(const struct store *s);
int sqlite_store__ingest(struct store *s, const struct batch *b, const int64_t *now,
			 bool *duplicate);
int sqlite_store__query_stacks(struct store *s, const struct store_query *q, store_stack_fn cb,
			       void *ctx);
int sqlite_store__query_series(struct store *s, const struct store_query *q, int64_t step_seconds,
			       store_series_fn cb, void *ctx);
int sqlite_store__labels(struct store *s, const struct store_query *q, store_text_fn cb, void *ctx);
int sqlite_store__label_values(struct store *s, const char *key, const struct store_query *q,
			       store_text_fn cb, void *ctx);
int sqlite_store__label_key_used(struct store *s, const char *key, int64_t from, int64_t to);
int sqlite_store__windows(struct store *s, const struct store_query *q, struct store_windows *out);
int sqlite_store__stats(struct store *s, struct store_stats *st);
int sqlite_store__schema_version(struct store *s, int64_t *version);
int sqlite_store__check(struct store *s);
int sqlite_store__maintain(struct store *s, int64_t now, size_t max_rows, bool *more);

/* The read cache's destructor (read.c), called by store__close(); NULL is fine.
 * Ingest's caches have theirs in store/intern.h. */
void store_read_cache_free(struct store_read_cache *rc);

/* Test hooks of read.c's cache (tests/unit/test_store_read.c): its size in bytes,
 * and a cap other than the default (made if missing). */
size_t store_read_cache_bytes(struct sqlite_store *s);
int store_read_cache_set_cap(struct sqlite_store *s, size_t cap);

/* The statement in slot, prepared from sql (a string constant: the same for a
 * slot every call) on first use and cached until store__close(). */
int store_slot_stmt(struct sqlite_store *s, int slot, const char *sql, sqlite3_stmt **out);

/* ---- tiers (tiers.c; schema/sqlite/005_blocks.sql) ---------------------------------- */

#define STORE_NTIERS 3
enum store_tier { TIER_RAW = 0, TIER_MINUTE = 1, TIER_HOUR = 2 };

/* A tier's bucket length in seconds; 0 for TIER_RAW (windows as sent). */
int64_t store_tier_seconds(int tier);

/* Whether tier's blocks hold a section per label set (store/block.h, version 2):
 * raw blocks, a window's batch each (schema/sqlite/008_window_blocks.sql), and minute
 * blocks, one per bucket (schema/sqlite/010_minute_blocks.sql); their block_index key is
 * no label set but -1, -2, ... Hour blocks are one per bucket and label set
 * (version 1, keyed by the label set). */
static inline bool store_tier_sections(int tier)
{
	return tier == TIER_RAW || tier == TIER_MINUTE;
}

/* The watermarks of state (schema/sqlite/005): built_before[t] for t >= 1, every bucket of
 * tier t starting below it is built (INT64_MIN: none; built_before[0] is
 * INT64_MAX: raw windows are there as soon as they are ingested); kept_from[t],
 * tier t's blocks starting below it are gone or being deleted (INT64_MIN: none
 * deleted). */
struct store_tiers {
	int64_t built_before[STORE_NTIERS];
	int64_t kept_from[STORE_NTIERS];
};

/* Reads them in the caller's transaction (or its own read). Returns 0 or -errno. */
int store_read_tiers(struct sqlite_store *s, struct store_tiers *t);

/* Writes state.built_before_<tier> (tier 1 or 2) or state.kept_from_<tier>
 * (0..2); INT64_MIN writes NULL. In the caller's transaction. */
int store_set_built_before(struct sqlite_store *s, int tier, int64_t v);
int store_set_kept_from(struct sqlite_store *s, int tier, int64_t v);

/* One piece of a plan: the blocks of tier whose start is in [from, to). */
struct store_span {
	int tier;
	int64_t from, to;
};

#define STORE_PLAN_MAX_SPANS 16

/* Splits [from, to) into spans whose blocks together hold exactly the raw windows
 * starting in [from, to) where those are kept: hour buckets inside the range and
 * built, then minute buckets inside what is left and built, raw windows for the
 * rest; where a part's tier is gone (below kept_from), that part is answered by
 * the next tier's blocks starting in it. Spans are disjoint, in no particular
 * order. Returns the number of spans (0 when from >= to). */
size_t store_plan(const struct store_tiers *t, int64_t from, int64_t to,
		  struct store_span out[STORE_PLAN_MAX_SPANS]);

/* Adds n entries (any order, duplicates summed, values saturating) to the block of
 * (tier, start, labelset_id), creating it when missing: the stored block is decoded,
 * merged and written again, with block_index's total and entries; for the minute
 * tier, to labelset_id's section of the bucket's one block (store_bucket_add()).
 * In the caller's transaction. n == 0 does nothing. Returns 0, -EINVAL (a negative value), -EIO (a
 * stored block that does not decode: store__errmsg says which), -ENOMEM, or a
 * translated SQLite error. */
int store_block_add(struct sqlite_store *s, int tier, int64_t start, int64_t labelset_id,
		    const struct block_entry *e, size_t n);

/* The block_index key of a minute bucket's one block (schema/sqlite/010_minute_blocks.sql). */
#define STORE_BUCKET_KEY (-1)

/* Adds e (n entries of any label sets, any order, duplicates summed, values
 * saturating) to the one block of tier's bucket at start (a tier whose blocks have
 * sections, not raw: the minute tier), creating it when missing: the stored block
 * is decoded, merged and written again, with block_index's total and entries. In
 * the caller's transaction; n == 0 does nothing. Returns 0, -EINVAL (a value <= 0,
 * a label set id < 1, a tier without such blocks), -EIO (a stored block that does
 * not decode), -ENOMEM, or a translated SQLite error. */
int store_bucket_add(struct sqlite_store *s, int tier, int64_t start, const struct block_lentry *e,
		     size_t n);

/* Writes e (n entries of any label sets, any order, duplicates summed) as a new raw
 * block of the window at start (schema/sqlite/008_window_blocks.sql: its block_index key
 * one below the window's smallest). In the caller's transaction; n == 0 does
 * nothing. Returns 0, -EINVAL (a value <= 0 or label set id < 1), -ENOMEM, or a
 * translated SQLite error. */
int store_raw_block_add(struct sqlite_store *s, int64_t start, const struct block_lentry *e,
			size_t n);

/* ---- the conversion of 004's samples (migrate.c) ----------------------------- */

/* Whether the samples table of 004 still exists (1), not (0), or -errno. */
int store_samples_pending(struct sqlite_store *s);

/* Converts every remaining samples row into raw blocks, a window a step, each in
 * its own transaction that also deletes the rows it converted, then drops the
 * table: a killed conversion resumes where it stopped. Called by store__open()
 * for a writer after the migrations. Returns 0 or -errno. */
int store_convert_samples(struct sqlite_store *s);

/* Whether the conversion of tier's blocks of one label set into blocks of sections
 * is still to do (1), not (0), or -errno: migration 008's of raw blocks (tier 0),
 * 010's of minute blocks (tier 1). */
int store_blocks_pending(struct sqlite_store *s, int tier);

/* Converts tier's blocks of one label set each into blocks of sections: for
 * TIER_RAW 005-007's raw blocks (one per window and label set) into version 2
 * window blocks (schema/sqlite/008_window_blocks.sql), for TIER_MINUTE 005-009's minute
 * blocks into one block per bucket (schema/sqlite/010_minute_blocks.sql); a start a step,
 * several starts a transaction that deletes the blocks it converted and moves
 * state.convert_008 (convert_010): a killed conversion resumes. Called by
 * store__open() for a writer after store_convert_samples(), raw first. Returns 0,
 * -EINVAL (another tier) or -errno. */
int store_convert_blocks(struct sqlite_store *s, int tier);

/* ---- dictionary garbage collection (gc.c; schema/sqlite/006_gc.sql) ---------------- */

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

/* Records SQLite's message for rc and returns the translated error (never 0). */
int store_sql_fail(struct sqlite_store *s, int rc);

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

/* Private to the ClickHouse store (store/clickhouse/clickhouse.c opens it; clickhouse/ingest.c,
 * clickhouse/read.c and clickhouse/maint.c implement the rest of the contract; clickhouse/tiers.c
 * the rollup tiers' watermarks, builds and read plans; clickhouse/parts.c which partitions a read
 * takes without FINAL; clickhouse/frames.c the reads' cache of stacks' frames; clickhouse/rowbin.c
 * the pieces they share; clickhouse/http.c talks to the server). The handle, the error and request
 * helpers, and the buffers that write RowBinary bodies and SQL text and read RowBinary answers.
 * docs/clickhouse.md is the user's view.
 */
#ifndef SMOLDER_STORE_CH_INT_H
#define SMOLDER_STORE_CH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/batch.h"
#include "store/backend.h"
#include "store/clickhouse/http.h"

/* Frames of one stored stack read back: BATCH_MAX_STACK_DEPTH is the most ingest
 * stores; a row with more is damage (-EIO). */
#define CH_MAX_FRAMES BATCH_MAX_STACK_DEPTH
/* Partitions dropped by one store__maintain() call (each an ALTER TABLE). */
#define CH_MAINTAIN_MAX_DROPS 16
/* Slots of a store's ingest cache of ids (a power of two; 16 bytes each): cleared
 * when three quarters full, so a busy fleet's distinct stacks beyond some 190 000
 * only cost their rows being inserted again. */
#define CH_CACHE_SLOTS (1u << 18)
/* A store's cache of stacks' frames for its flame graphs (clickhouse/frames.c, interned:
 * some 4 bytes a frame of a stack, 190 bytes a stack of the busy host): bytes
 * and stacks held at most (three quarters of the slots, 20 bytes each with
 * their rank, 5 MiB), emptied when either would be passed: a day of the busy
 * host, 83,251 stacks, fits. A ranking (ch_frames_rank()) holds a second copy
 * of the stacks' references for as long as it copies them. */
#define CH_FRAMES_CACHE_BYTES (32u << 20)
#define CH_FRAMES_CACHE_SLOTS (1u << 18)
/* A flame graph fetches the frames of at most this many uncached stacks by a list
 * of their ids (20 bytes each of SQL, within ClickHouse's 256 KiB max_query_size);
 * more by the plan's stacks again (a subquery). */
#define CH_FRAMES_BY_LIST 1024
/* The end of a SELECT that ingest runs for a few rows (the duplicate check, stack
 * refs, the tiers' watermarks): one thread. 18.16 starts max_threads new
 * threads (one a core) for every SELECT and ends them after it, which costs more
 * than such a look-up: on one thread the duplicate check of a call costs the
 * server about a third less CPU (bench/ingest_http.sh). */
#define CH_LOOKUP_SETTINGS " SETTINGS max_threads = 1"
/* A cluster's name (?cluster=NAME) is an identifier written into SQL unquoted. */
#define CH_CLUSTER_MAX 64

struct store_intern;
/* The ingest's memo of stacks' content ids (clickhouse/ids.c): zero-initialize, set cap
 * (bytes; 0: STORE_INTERN_DEFAULT_CAP, store/intern.h) before the first call;
 * ch_ids_free() frees it. */
struct ch_ids {
	struct store_intern *in; /* NULL until the first call */
	size_t cap;
	int64_t next;	       /* the next number handed out */
	uint64_t hits, misses; /* stacks found, stacks hashed */
};

struct ch_store {
	struct store base;
	struct ch_http *http;
	struct store_options opts;
	int64_t version;
	/* The cluster the schema lives on ("": one server). On a cluster each table T
	 * of the schema is T_local on every node (a Replicated engine) and T is a
	 * Distributed table over them: reads and inserts name T, statements that
	 * change a table's parts (ALTER ... DROP PARTITION, ALTER ... DELETE) name
	 * ch_alter_target(T). system.* tables describe one node only. */
	char cluster[CH_CLUSTER_MAX + 1];
	char errmsg[768];
	int64_t gc_after; /* clickhouse/gc.c: the next GC pass runs at a maintain of now >= this */
	uint64_t parts_reread; /* clickhouse/parts.c: reads made again with FINAL everywhere */
	struct ch_frames_cache *frames; /* clickhouse/frames.c; NULL until a read fills it */
	/* clickhouse/ingest.c: the stacks and label sets this store inserted (open addressing
	 * by id, 0 empty), with the `seen` time written: a batch inserts a
	 * dictionary row and its seen row only for an id not here or seen more than
	 * CH_SEEN_REFRESH_SECONDS before. Inline, so the handle's free frees it; the
	 * pages are touched only by a writer that ingests. */
	struct ch_ids ids; /* clickhouse/ids.c: the ingest's memo of stacks' content ids */
	struct {
		uint64_t id[CH_CACHE_SLOTS];
		int64_t at[CH_CACHE_SLOTS];
		size_t n;
	} cache;
};

/* FNV-1a over the bytes (from CH_HASH_SEED, or a hash so far), then
 * ch_hash_final(), a SplitMix64 finalizer, to spread them: the content ids of
 * stacks and label sets (clickhouse/ingest.c: the same on every collector and every
 * build, the ids are stored) and the frames cache's own tables (clickhouse/frames.c). */
#define CH_HASH_SEED UINT64_C(0xcbf29ce484222325)

static inline uint64_t ch_hash_bytes(uint64_t h, const void *d, size_t n)
{
	const uint8_t *p = d;

	while (n--)
		h = (h ^ *p++) * UINT64_C(0x100000001b3);
	return h;
}

static inline uint64_t ch_hash_final(uint64_t h)
{
	h = (h ^ (h >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	h = (h ^ (h >> 27)) * UINT64_C(0x94d049bb133111eb);
	return h ^ (h >> 31);
}

/* v's 8 bytes, little-endian; a string as its length then its bytes. */
static inline uint64_t ch_hash_u64(uint64_t h, uint64_t v)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return ch_hash_bytes(h, b, 8);
}

static inline uint64_t ch_hash_str(uint64_t h, const char *s, size_t n)
{
	return ch_hash_bytes(ch_hash_u64(h, n), s, n);
}

/* ---- content ids (clickhouse/ids.c) ----------------------------------------------------- */

/* A batch frame's name or file as stored: t itself, or frame_sanitize()'s copy
 * of it in buf (FRAME_MAX_NAME_LEN + 1 bytes). *len set. */
const char *ch_stored_text(const char *t, char *buf, size_t *len);
/* One frame's part of a content id: a stack's id hashes each of its frames so,
 * root first, from CH_HASH_SEED; a frame's own id is this from CH_HASH_SEED,
 * finalized (007_frames.sql). name and file as stored. */
uint64_t ch_frame_hash(uint64_t h, uint32_t kind, uint32_t line, const char *name, size_t nl,
		       const char *file, size_t fl);
/* Stack i of b's content id, from its texts (the definition; b checked). */
uint64_t ch_stack_id(const struct batch *b, uint32_t i);

/* ids[i] = ch_stack_id(b, i) for every stack of b (checked) with used[i] set
 * (used NULL: all), from the memo where it holds the stack. Returns 0, -EINVAL
 * (a cap out of range) or -ENOMEM (ids then partly written). */
int ch_ids_stacks(struct ch_ids *m, const struct batch *b, const uint8_t *used, uint64_t *ids);
void ch_ids_free(struct ch_ids *m);

static inline struct ch_store *ch_of(struct store *s)
{
	return (struct ch_store *)s;
}

/* Keeps the message for store__errmsg() and returns err. */
int ch_fail(struct ch_store *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One request (ch_http__query); a failure's message is "what: ClickHouse's
 * message". ans may be NULL. */
int ch_run(struct ch_store *s, const char *what, const char *sql, const void *body, size_t len,
	   struct ch_answer *ans);

/* The table an ALTER of the schema's table t names, written into buf (len
 * bytes): "t" on one server, "t_local ON CLUSTER c" on a cluster. Returns buf. */
const char *ch_alter_target(const struct ch_store *s, const char *t, char *buf, size_t len);

/* A growing buffer: a RowBinary body or SQL text, always NUL-terminated. Appends
 * never fail; the first failure sets err and later appends do nothing. Owner
 * frees p. */
struct ch_wbuf {
	char *p;
	size_t len, cap;
	int err; /* -ENOMEM once an append failed; the buffer is then unusable */
};

/* ch_run() of the SQL text in sql (no body), or sql's append error: the form
 * every query the store builds in a struct ch_wbuf takes. */
int ch_run_sql(struct ch_store *s, const char *what, const struct ch_wbuf *sql,
	       struct ch_answer *ans);

void ch_w_put(struct ch_wbuf *w, const void *d, size_t n);
void ch_w_text(struct ch_wbuf *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ch_w_quoted(struct ch_wbuf *w, const char *s);	  /* s as a quoted string literal */
void ch_w_uint(struct ch_wbuf *w, uint64_t v, int bytes); /* little-endian, RowBinary */
void ch_w_varint(struct ch_wbuf *w, uint64_t v);
void ch_w_str(struct ch_wbuf *w, const char *s, size_t n); /* RowBinary String */

/* A reader of a RowBinary answer: reads past the end set bad and return zeros. */
struct ch_rbuf {
	const uint8_t *p, *end;
	bool bad; /* read past the end or a length past it */
};

static inline struct ch_rbuf ch_answer_reader(const struct ch_answer *a)
{
	return (struct ch_rbuf){ (const uint8_t *)a->data, (const uint8_t *)a->data + a->len,
				 false };
}

uint64_t ch_r_uint(struct ch_rbuf *r, int bytes);
uint64_t ch_r_varint(struct ch_rbuf *r);
const char *ch_r_str(struct ch_rbuf *r, size_t *len); /* borrowed from the answer */
double ch_r_f64(struct ch_rbuf *r);
/* A sum read as (UInt64 sum, Float64 sum) saturates at INT64_MAX where the
 * float reaches CH_SUM_SATURATED (a UInt64 sum wraps; the float's rounding is
 * far smaller than the gap to 2^63); the rollups' and the totals' INSERTs
 * (ch_tiers_build(), ch_tiers_count()) saturate with the same bound in SQL. */
#define CH_SUM_SATURATED 9.2e18
uint64_t ch_r_sum(struct ch_rbuf *r);

/* ---- tiers (clickhouse/tiers.c; schema/clickhouse/002_tiers.sql) -------------------- */

/* Every tier table is partitioned by hour of its rows' starts: retention drops
 * whole partitions of this length. */
#define CH_PARTITION_SECONDS 3600

/* The first and last start a partition intDiv(start, len) = p holds (intDiv
 * truncates toward zero, as C's / does: partition 0 holds (-len, len)). */
static inline int64_t ch_partition_first(int64_t p, int64_t len)
{
	return p > 0 ? p * len : (p - 1) * len + 1;
}

static inline int64_t ch_partition_last(int64_t p, int64_t len)
{
	return p >= 0 ? (p + 1) * len - 1 : p * len;
}

/* Whether p can be a partition of len-second starts: every start is within
 * +-STORE_MAX_ABS_WINDOW, so one past that is a server's answer gone wrong, and
 * its bounds above would overflow. */
static inline bool ch_partition_sane(int64_t p, int64_t len)
{
	return len > 0 && p >= -(STORE_MAX_ABS_WINDOW / len) - 1 &&
	       p <= STORE_MAX_ABS_WINDOW / len + 1;
}
/* The raw and minute tiers' tables (009_batches.sql and 006_layout.sql; 002's
 * `raw` and `minute`, then 006's samples_raw before, emptied into these by
 * clickhouse/layout.c), and the time chunk that leads each one's ORDER BY key after the
 * type: intDiv(start, CHUNK). A read of a range states the chunk condition as
 * the key writes it (ch_w_chunk()), else 18.16 reads the whole partition.
 * tests/unit/test_ch_schema.c checks these against the schema files. `hour`
 * keeps 002's table. */
#define CH_RAW_TABLE		"raw_batches"
#define CH_MINUTE_TABLE		"samples_minute"
#define CH_RAW_CHUNK_SECONDS	300
#define CH_MINUTE_CHUNK_SECONDS 600
/* The schema versions whose open moves rows into new tables: 6 moves 002's into
 * 006's, 9 moves 006's raw rows into 009's (clickhouse/layout.c). */
#define CH_LAYOUT_VERSION  6
#define CH_BATCHES_VERSION 9
/* `ingested` (001) is partitioned by day. */
#define CH_INGESTED_PARTITION_SECONDS 86400
/* Minute buckets one store__maintain() call builds at most, per max_rows rows of
 * its budget (max_rows / 8, at least 1; max_rows 0 is 2000): a minute bucket of a
 * busy host is a few label sets' rows, so the rollup's INSERT ... SELECT reads
 * about max_rows label sets' windows. Hour buckets: a 60th of that, at least 1. */
#define CH_ROWS_PER_MINUTE_BUCKET 8
#define CH_DEFAULT_MAX_ROWS	  2000

/* The watermarks (max(value) per name of `tiers`), INT64_MIN when never set;
 * claim[0] and built[0] are INT64_MAX (raw rows are there once inserted). Each
 * is only ever raised: claim_T before tier T's buckets below it are built,
 * built_T after; kept_T once tier T's partitions below it are dropped.
 * totals_T (tiers 1 and 2) is written once, when schema 8 is applied
 * (ch_tiers_mark_totals()): buckets starting at or above it were claimed by
 * builds that write totals; INT64_MIN (never set) means none were. */
struct ch_tiers {
	int64_t claim[3];
	int64_t built[3];
	int64_t kept[3];
	int64_t totals[3];
};

int ch_tiers_read(struct ch_store *s, struct ch_tiers *t);
struct store_tiers;
/* The watermarks read now as store_plan()'s input (store/sqlite/db.h); t's as
 * the same. */
int ch_tiers_plan_input(struct ch_store *s, struct store_tiers *st);
void ch_tiers_to_plan(const struct ch_tiers *t, struct store_tiers *st);
/* The schema version that adds the totals tables (008_totals.sql). */
#define CH_TOTALS_VERSION 8
/* Writes totals_1 and totals_2 as schema 8 is applied: each tier's claim_T
 * then (buckets below it may have been built without totals: by a build of
 * version 7 or older, which may also have left no `counts` row), or
 * -STORE_MAX_ABS_WINDOW for a tier never claimed. Applied again (an open
 * stopped before it recorded version 8, collectors starting together), the
 * largest is read: a later claim, still safe. 0 or -errno. */
int ch_tiers_mark_totals(struct ch_store *s);
/* Raises the watermark name_tier ("claim", "built", "kept") to v (a row of
 * `tiers`; a lower v changes nothing, since reads take the largest). */
int ch_tiers_raise(struct ch_store *s, const char *name, int tier, int64_t v);
/* Builds tier's (1: minute, 2: hour) buckets from the rows of tier - 1 starting
 * in [from, to), both bucket boundaries of tier: one INSERT ... SELECT, each
 * (agent, seq)'s raw row or each src's finer row counted once. Building a bucket
 * again inserts its complete sum again: reads keep the largest. */
int ch_tiers_build(struct ch_store *s, int tier, int64_t from, int64_t to);
/* Counts tier's buckets starting in [from, to) into `counts` (stats): the
 * distinct (label set, stack) and label sets of all their rows, read as the
 * largest count per bucket; then sums them per (type, label set) into tier's
 * totals table (timelines). ch_tiers_build() calls it for the buckets it built;
 * a late batch whose own rows (src) went into a built bucket, for that one. */
int ch_tiers_count(struct ch_store *s, int tier, int64_t from, int64_t to);
/* The table and start column of a tier. */
const char *ch_tier_table(int tier);
const char *ch_tier_column(int tier);
/* The totals of tier 1 or 2 (008_totals.sql: a bucket's sum per type and label
 * set, for timelines), partitioned by day; NULL for the raw tier. */
#define CH_TOTALS_PARTITION_SECONDS 86400
const char *ch_totals_table(int tier);
/* Appends tier's chunk condition for rows starting in [from, to) (" AND
 * intDiv(col, C) >= intDiv(toInt64(from), C) AND intDiv(col, C) <=
 * intDiv(toInt64(to - 1), C)", the key's own expression, so that the primary key
 * narrows the read to the range's chunks); nothing for the hour tier or an empty
 * range. */
void ch_w_chunk(struct ch_wbuf *w, int tier, int64_t from, int64_t to);
/* v rounded down to a multiple of len (toward minus infinity). */
int64_t ch_floor(int64_t v, int64_t len);

/* Appends q's selection (" AND type = ... AND labelset IN (...)"; the type only
 * when typed). */
void ch_w_selection(struct ch_wbuf *w, const struct store_query *q, bool typed);
/* ---- partitions of one part (clickhouse/parts.c) ------------------------------------ */

/* Partitions of one part a read knows of at most (system.parts' answer is cut
 * there; the others are read with FINAL): a year of the hour tier and two weeks
 * of the finer ones, with room. */
#define CH_PARTS_MAX 16384

/* A tier table's partition (an hour of starts) that held one active part. */
struct ch_part {
	int64_t hour;  /* the partition: intDiv(start, CH_PARTITION_SECONDS) */
	uint64_t name; /* a hash of the part's name */
	int tier;
	bool used; /* a read took it without FINAL (ch_w_spans()) */
};

/* What a read may take without FINAL: the tier tables' partitions of one part
 * (sorted by tier and hour), or every row when plain (a read that only asks
 * which label sets or stacks have rows: copies do not change that). */
struct ch_parts {
	struct ch_part *v;
	size_t n;
	bool plain;
};

/* Reads the partitions of one part on this server into out (none on a
 * cluster). 0 or -errno; ch_parts_free() frees it either way. */
int ch_parts_read(struct ch_store *s, struct ch_parts *out);
/* The entry of (tier, hour), or NULL. */
struct ch_part *ch_parts_find(const struct ch_parts *c, int tier, int64_t hour);
/* After a read: 1 when every partition it took without FINAL still holds the
 * same one part (so the read saw no copies), 0 when one changed (read again
 * with FINAL everywhere), or -errno. */
int ch_parts_held(struct ch_store *s, const struct ch_parts *c);
void ch_parts_free(struct ch_parts *c);
/* A read over the tiers: read(ctx, parts) with the partitions of one part, and
 * when one changed during it (ch_parts_held(), or the look failed), read again
 * with FINAL everywhere (parts empty), so read must start its answer over; a
 * failed first look reads with FINAL everywhere at once. 0 or the read's
 * error. */
int ch_parts_run(struct ch_store *s, int (*read)(void *ctx, struct ch_parts *parts), void *ctx);

/* Appends the SELECT of the rows of tier starting in any of n (at least one)
 * intervals [from[i], to[i]): columns t (the row's start), labelset, stack, v,
 * one row per stored row, copies collapsed: a FINAL read (ReplacingMergeTree's
 * merge on read over the ORDER BY key), except of the hours that parts (may be
 * NULL) lets be read plainly, which it marks used. */
void ch_w_spans(struct ch_wbuf *w, const struct store_query *q, bool typed, int tier,
		const int64_t *from, const int64_t *to, size_t n, struct ch_parts *parts);
/* Appends the SELECT of tier's (1 or 2) totals of q's selection starting in any
 * of n intervals [from[i], to[i]): columns t (the start) and v, one row per (start,
 * type, label set), copies collapsed (FINAL). */
void ch_w_totals(struct ch_wbuf *w, const struct store_query *q, int tier, const int64_t *from,
		 const int64_t *to, size_t n);
/* Appends two scalar subqueries (UInt64) for the same intervals: the distinct
 * (start, type, label set) of tier's totals, and the label sets `counts` names
 * in tier's buckets there. The totals answer for the intervals when both are
 * equal and not 0 (008_totals.sql). */
void ch_w_totals_check(struct ch_wbuf *w, int tier, const int64_t *from, const int64_t *to,
		       size_t n);
/* Appends "(span UNION ALL span ...)": the rows that answer [q->from, q->to) by
 * the plan of store/sqlite/tiers.c over the watermarks read now, each span by
 * ch_w_spans(). Returns 0 or -errno. */
int ch_w_plan(struct ch_store *s, struct ch_wbuf *w, const struct store_query *q, bool typed,
	      struct ch_parts *parts);
/* The same plan with no FINAL anywhere: for a read that only asks which label
 * sets or stacks have rows (copies do not change that). */
int ch_w_plan_rows(struct ch_store *s, struct ch_wbuf *w, const struct store_query *q, bool typed);

/* ---- the layouts of schemas 6 and 9 (clickhouse/layout.c; 006_layout.sql, 009_batches.sql) */

/* Moves every row of the tables a schema up to version left behind into the
 * tables that replaced them: for 6, 002's `raw` and `minute` into 006's
 * samples_raw and CH_MINUTE_TABLE; for 9, samples_raw into CH_RAW_TABLE. Each
 * partition by partition: a copy (INSERT ... SELECT) then the old partition
 * dropped. Resumable: a run stopped anywhere leaves each old row in the old
 * table, the new one, or both (copies that reads and merges collapse), and the
 * next run goes on. Nothing to do (a read per old table) when they are empty.
 * 0 or -errno. */
int ch_layout_migrate(struct ch_store *s, int64_t version);

/* ---- the frames cache (clickhouse/frames.c) ---------------------------------------- */

/* A cached stack a flame graph hands out: its slot (ch_frames_find() - 1) and
 * its sum, not 0; rank is ch_frames_handout()'s. */
struct ch_handout {
	uint32_t slot, rank;
	uint64_t count;
};

/* Stack id's slot in the cache + 1, or 0 when its frames are not cached. */
uint32_t ch_frames_find(const struct ch_store *s, uint64_t id);
/* Starts loading stack id's slot into the CPU's cache, for a ch_frames_find()
 * of it a few stacks later: a warm day's graph looks up 81 k stacks at random. */
void ch_frames_prefetch(const struct ch_store *s, uint64_t id);
/* Calls cb for each of h's n stacks (found with no put since) with its frames
 * (in frames, CH_MAX_FRAMES of scratch; strings valid until the next put) and
 * count, in handout order, which h is sorted into: stacks that share outer
 * frames one after another, as SQLite's reads hand them out (store/sqlite/read.c), so
 * only the frames after the shared ones are written and a flame tree finds the
 * shared ones on the path it just walked. Stops at cb's first non-zero return. */
int ch_frames_handout(struct ch_store *s, struct ch_handout *h, size_t n, struct frame *frames,
		      store_stack_fn cb, void *ctx);
/* Ranks every cached stack in handout order, so that a handout of them sorts by
 * rank and not by their frames, when the stacks put since the last ranking are
 * half the cache or more: a read that fetched many calls it. Without memory,
 * nothing is ranked (handouts sort by frames). */
void ch_frames_rank(struct ch_store *s);
/* Keeps stack id's frames (copied); without memory, keeps nothing. fids, when
 * not NULL, are the frames' content ids (007_frames.sql): a frame the cache
 * knows by its id is taken without hashing its strings. */
void ch_frames_put(struct ch_store *s, uint64_t id, const struct frame *frames, size_t nframes,
		   const uint64_t *fids);
void ch_frames_free(struct ch_store *s);

/* ---- a flame graph's stacks (clickhouse/stacks.c; schema/clickhouse/007_frames.sql) -- */

/* A stack's sum over a read. */
struct ch_stack_sum {
	uint64_t id, count;
};

/* Calls cb once for each of the n sums with a count, with its stack's frames:
 * the cache's, else fetched (stack_frames and frames; then 001's stacks for
 * those stored before 7) by a list of ids when few, else by the stacks of the
 * plan (SQL of the read that gave the sums). Sorts sums and zeroes the counts
 * it emits; a stack found nowhere is left out. 0, -errno, or cb's non-zero
 * result. */
int ch_stacks_emit(struct ch_store *s, struct ch_stack_sum *sums, size_t n, const char *plan,
		   store_stack_fn cb, void *ctx);

/* ---- dictionary GC (clickhouse/gc.c; schema/clickhouse/004_gc.sql) ------------------- */

/* A stack or label set last seen (004's `seen`) this long before a GC's now is
 * deleted when no raw, minute or hour row uses it. Longer than any ingest takes
 * between its `seen` insert and its raw insert, by far; and twice the ingest
 * cache's refresh interval, CH_SEEN_REFRESH_SECONDS, so that an id a collector's
 * cache still counts as stored was seen within it. */
#define CH_GC_GRACE_SECONDS	3600
#define CH_SEEN_REFRESH_SECONDS (CH_GC_GRACE_SECONDS / 2)
/* A GC pass (a scan of the ids the tiers use) runs at most this often, by the
 * maintain calls' now, unless the last one left more to delete. */
#define CH_GC_INTERVAL_SECONDS 300
/* Ids of each kind one pass deletes at most (one ALTER ... DELETE per table). */
#define CH_GC_MAX_IDS 256
enum { CH_SEEN_STACK = 0, CH_SEEN_LABELSET = 1 };

/* One bounded GC pass at now when due; *more set when ids remain. 0 or -errno. */
int ch_gc_step(struct ch_store *s, int64_t now, bool *more);

/* The contract's operations (store/backend.h), by file. */
int ch_ingest(struct store *base, const struct batch *b, const int64_t *now, bool *duplicate);
int ch_query_stacks(struct store *base, const struct store_query *q, store_stack_fn cb, void *ctx);
int ch_query_series(struct store *base, const struct store_query *q, int64_t step,
		    store_series_fn cb, void *ctx);
int ch_labels(struct store *base, const struct store_query *q, store_text_fn cb, void *ctx);
int ch_label_values(struct store *base, const char *key, const struct store_query *q,
		    store_text_fn cb, void *ctx);
int ch_label_key_used(struct store *base, const char *key, int64_t from, int64_t to);
int ch_windows(struct store *base, const struct store_query *q, struct store_windows *out);
int ch_stats(struct store *base, struct store_stats *st);
int ch_check(struct store *base);
int ch_maintain(struct store *base, int64_t now, size_t max_rows, bool *more);

#endif

/* The profile store's contract, whatever the backend: aggregated stack samples of
 * many agents, kept in SQLite (one database file; the default) or in a ClickHouse
 * server or cluster (several collectors on one database). store/backend.h is the
 * table a backend fills, store/store.c the dispatcher; tests/unit/test_store.c is
 * the conformance suite both backends run; docs/store.md describes both designs.
 * The collector ingests decoded batches (store__ingest_many: the batches that
 * arrived together in one call), and queries stacks summed over a time range and a
 * label selection; store__maintain() builds the minute and hour rollups and applies
 * each tier's retention in small steps between ingests. Where a comment below
 * describes the SQLite backend's own behaviour it says so (its dictionaries are
 * described at the top of its first migration, its blocks and tiers at the top of
 * the blocks migration).
 *
 * Errors: every function returns 0 or -errno. Backend errors are translated: -EIO
 * (I/O error, corruption, not a database), -ENOSPC (disk full), -EBUSY (locked by
 * another connection past the busy timeout), -ENOMEM, -EROFS (read-only), -EACCES,
 * -EINVAL (bad argument or a batch that breaks a constraint), -ERANGE (a batch's
 * window outside the accepted range), -EPROTO (a database written by a newer
 * smolder). The backend's last message (SQLite's, or ClickHouse's answer) is kept
 * for the log, see store__errmsg(). A store never prints.
 *
 * Thread-safety: a struct store is one connection (SQLite's, with cached statements,
 * or one HTTP connection to ClickHouse); calls on one store must be serialized.
 * Several stores (threads or processes) may open the same location; SQLite writers
 * then wait up to the busy timeout. A SQLite reader (read_only in
 * struct store_options) reads a snapshot of the file's last commit, in WAL mode:
 * it neither waits for a writer nor makes one wait, so a server reads on readers
 * of its own while one writer ingests.
 */
#ifndef SMOLDER_STORE_H
#define SMOLDER_STORE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct batch;
struct store;

/* How long each tier is kept (schema/sqlite/005_blocks.sql): the windows as the agents
 * sent them a day (last night's spike at full resolution), minute rollups two
 * weeks (a 2-minute range anywhere in them), hour rollups a month (trends). */
#define STORE_DEFAULT_RETENTION_SECONDS	       (30 * 24 * 3600)
#define STORE_DEFAULT_MINUTE_RETENTION_SECONDS (14 * 24 * 3600)
#define STORE_DEFAULT_RAW_RETENTION_SECONDS    (24 * 3600)
/* The rollup tiers' bucket lengths, in seconds (tier 0 is the raw windows). */
#define STORE_MINUTE_SECONDS 60
#define STORE_HOUR_SECONDS   3600
/* A minute bucket is built once its end is this far in the past, so that the
 * windows of agents a little late or behind a short outage are in it when it is
 * first built; later ones are merged into it at ingest. */
#define STORE_ROLLUP_DELAY_SECONDS 120
#define STORE_BUSY_TIMEOUT_MS	   5000
/* store__ingest_at() refuses windows that start more than this after now: an
 * agent's clock a little ahead is fine, a window hours ahead (or at 9e18, which
 * retention would never reach) is not. */
#define STORE_MAX_FUTURE_SECONDS 3600
/* Every ingest refuses windows beyond +-2^40 s (about 35 000 years, the query
 * times' own bound), so no window arithmetic can overflow. */
#define STORE_MAX_ABS_WINDOW (INT64_C(1) << 40)

/* Options of store__open(). A zero field (or a NULL opts) takes the default; the
 * three retentions must satisfy raw <= minute <= retention (else -EINVAL), since a
 * tier is deleted only where the next one is built. */
struct store_options {
	int64_t retention_seconds;	  /* anything older is dropped (hour rollups): 30 d */
	int64_t minute_retention_seconds; /* minute rollups: 14 days */
	int64_t raw_retention_seconds;	  /* raw windows: 1 day */
	bool read_only;			  /* a reader: see store__open() */
};

/* opts (NULL: all defaults) with every zero field given its default, a default
 * longer than the tier above cut to it, as store__open() uses them. Returns 0, or
 * -EINVAL when they break raw <= minute <= retention or are not positive; *out
 * is written either way, so a caller can say what was wrong. */
int store__resolve_options(const struct store_options *opts, struct store_options *out);

/* The locations store__open() takes, for people: help texts and refusals. */
#define STORE_LOCATION_FORMS                                                                       \
	"a path, sqlite:PATH, or clickhouse[+https]://HOST:PORT/DATABASE[?OPTIONS] "               \
	"(OPTIONS: cluster=NAME, credentials=FILE, ca=FILE, plaintext=1, joined by &)"

/* Opens the store at location: "sqlite:PATH" or a plain PATH is the SQLite backend
 * (store/backend.h); "clickhouse[+https]://HOST:PORT/DATABASE[?OPTIONS]", OPTIONS
 * cluster=NAME, credentials=FILE, ca=FILE and plaintext=1 in any order, is the
 * ClickHouse backend (store/clickhouse/clickhouse.c, docs/clickhouse.md): +https verifies the
 * server's certificate (against ca=FILE, else the system's CAs) and its name;
 * credentials over plain http to a host that is not loopback are -EPERM unless
 * plaintext=1, and a failed verification is -EKEYREJECTED. A URL
 * of another scheme is -EPROTONOSUPPORT. The options' defaults and order are checked here for every
 * backend. What follows is the SQLite backend's behaviour. It opens (creating if needed) the
 * database at PATH, ":memory:" for a private in-memory one, and applies pending migrations (each in
 * its own transaction, the version in PRAGMA user_version). A database file that does not exist is
 * created with mode 0600 whatever the umask (its -wal and -shm files take the
 * same mode); an existing file keeps its mode. A file database uses WAL and
 * synchronous=NORMAL: a committed batch survives a crash of the process, the last
 * commits may be lost on power failure. *out is written only on success. Returns 0,
 * -EINVAL (NULL path or out, retentions out of order), -EPROTO
 * (schema newer than this build), -ENOMEM, or a translated SQLite error.
 *
 * With opts->read_only, a reader of a database that store__open() already made
 * and migrated: opened SQLITE_OPEN_READONLY, it creates no file (-ENOENT when
 * there is none), writes no pragma and applies no migration, so it never takes
 * the write lock; it checks that every migration is applied (-EPROTO otherwise,
 * older or newer) and that the file is in WAL mode (-EINVAL otherwise: a reader
 * of a rollback journal would block the writer's commits). ":memory:" is
 * -EINVAL: a private in-memory database is empty to any other connection. A
 * read sees what was committed when it started, however long it runs; a write in
 * progress neither blocks it nor shows in it. Every write (store__ingest,
 * store__maintain) fails with -EROFS. Its page cache is SQLite's default cache_size,
 * about 2 MB, whatever the file's size. */
int store__open(const char *location, const struct store_options *opts, struct store **out);

/* store__open(), and when it fails, one line saying why in why (len bytes,
 * truncated; "" when the backend has nothing to add to the errno, as SQLite). */
int store__open_why(const char *location, const struct store_options *opts, struct store **out,
		    char *why, size_t len);

/* The checks of location that store__open() makes before it reads a file or
 * connects: its form, and ClickHouse's rule for credentials over plain http.
 * For a program that should refuse a location at start, before it serves.
 * Returns 0, -EINVAL (not a location of its backend), -EPROTONOSUPPORT (no
 * backend), or -EPERM (credentials would travel in clear); why (len bytes) says
 * what is wrong. */
int store__check_location(const char *location, char *why, size_t len);

/* Closes the database and frees the store. Accepts NULL. */
void store__close(struct store *s);

/* The last SQLite error message of s ("" if none): borrowed, valid until the next
 * call on s. */
const char *store__errmsg(const struct store *s);

/* Stores batch b in one transaction: interns its strings, frames, stacks and label
 * sets (through in-memory caches in front of the dictionary tables), adds each
 * label set's samples to the raw block of (window_start, label set) and, for a
 * window below a rollup watermark (a late batch), to the minute and hour blocks
 * already built over it, and records (agent_id, seq). If (agent_id, seq) was
 * already stored, nothing is written and *duplicate is true. Returns 0 only after
 * the commit; on any error the transaction is rolled back, the database (and the
 * caches) as before, and the result is -EINVAL (b fails batch__validate(), still
 * names stacks by id only (refs), has a label of the key STORE_TYPE_LABEL, or a
 * profile_type that is not a name of common/ptype.h's table ("" is cpu); or
 * a backend's own limit: SQLite's seq at most INT64_MAX), -ERANGE (a
 * window_start beyond +-STORE_MAX_ABS_WINDOW), -ENOSPC (the stack dictionary past
 * UINT32_MAX ids, a block's id width), or a translated SQLite error; the reason is
 * in store__errmsg(). Those checks of b are made once, before the backend sees
 * it (store/store.c), the same for every backend.
 *
 * What is stored cannot break a query: a frame's name and file are stored
 * through frame_sanitize() (no ';', newline or control character; at most
 * FRAME_MAX_NAME_LEN bytes, longer ones cut), and a stack's value saturates at
 * INT64_MAX instead of overflowing. duplicate may be NULL.
 *
 * store__ingest() is for data whose times the caller chose (fixtures, benches,
 * tools); a server ingesting what it receives calls store__ingest_at(). */
int store__ingest(struct store *s, const struct batch *b, bool *duplicate);

/* store__ingest() for a batch received at time now (unix seconds): a window_start
 * outside [now - retention, now + STORE_MAX_FUTURE_SECONDS] refuses the whole
 * batch with -ERANGE and a reason naming the window and the bounds (a window
 * older than retention would be deleted by the next maintenance anyway; the
 * sender should drop it rather than retry). */
int store__ingest_at(struct store *s, const struct batch *b, int64_t now, bool *duplicate);

/* ---- several batches in one call (group commit) --------------------------------
 *
 * A server that receives many batches at once stores them in one call: the
 * costs paid per call (SQLite's commit, ClickHouse's parts and round trips) are
 * then paid once for all of them. Each batch gets the answer it would get alone. */

/* The most batches one store__ingest_many() call takes. */
#define STORE_INGEST_MANY_MAX 1024

/* One batch's answer from store__ingest_many(). */
struct store_ingest_result {
	int err;	/* 0: stored or a duplicate; -EINVAL or -ERANGE: this batch is
			 * refused (its own reason in why), the others go on; another
			 * -errno: the store failed, see store__ingest_many() */
	bool duplicate; /* err 0 and (agent_id, seq) was stored already, by an
			 * earlier call or by an earlier batch of this call */
	char why[256];	/* err != 0: the reason (store__errmsg() of that batch) */
};

/* Stores batches[0..n) as n calls of store__ingest_at(s, batches[i], *now, ...)
 * (store__ingest() when now is NULL) in that order would, but in one call: each
 * results[i] is what that call would answer. Each batch is all or nothing: a
 * refused one (-EINVAL, -ERANGE: results[i].err and why) leaves no trace and does
 * not fail the others. A batch whose (agent_id, seq) an earlier batch of the call
 * stored is a duplicate of it.
 *
 * A store failure (any other error: unreachable server, I/O, disk full, out of
 * memory) fails the call: it returns that error, and every batch not refused gets
 * it in results[i].err, duplicates included: none of them is acknowledged, and
 * the caller should have them sent again. Some of their rows may be stored by
 * then (the ClickHouse store inserts every table before `ingested`): sent again
 * they are stored once, as after a failed store__ingest(). The SQLite backend
 * stores every batch in one transaction (a savepoint each, so a refused one rolls
 * back alone), so after a failure none is stored; the ClickHouse backend checks
 * (agent, seq) once for all, inserts each table once for every batch stored, and
 * `ingested` last.
 *
 * Returns 0 (each batch's answer in results), -EINVAL (NULL s, or batches or
 * results NULL with n > 0, a NULL batch, n over STORE_INGEST_MANY_MAX: then no
 * result is written) or the store failure. Not thread-safe, as every call on s. */
int store__ingest_many(struct store *s, const struct batch *const *batches, size_t n,
		       const int64_t *now, struct store_ingest_result *results);

/* Whether an ingest's error refuses the batch itself (-EINVAL, -ERANGE: the
 * sender must not send it again), not a failure of the store. Inline, so that a
 * backend asks it without calling back into the dispatcher. */
static inline bool store__refused(int err)
{
	return err == -EINVAL || err == -ERANGE;
}

/* Profile types. Each batch names its own (profile_type: a name of
 * common/ptype.h's table: "cpu", "offcpu", "inuse_space", ...);
 * the store keeps it as a label of the batch's label sets, STORE_TYPE_LABEL=type,
 * except for the CPU profile, whose label sets have no such label (as in every
 * store written before types were recorded), so that a series is of one type and
 * a query sums one type's values only. A batch whose own labels use the key is
 * refused (-EINVAL). The key is not listed by store__labels(). */
#define STORE_TYPE_LABEL "__type__"
#define STORE_TYPE_CPU	 "cpu"

/* A query: windows with window_start in [from, to), and label sets of the profile
 * type that hold every keys[i]=values[i] (i < nlabels; nlabels 0 selects all of
 * that type). */
struct store_query {
	int64_t from;		   /* unix seconds, inclusive */
	int64_t to;		   /* unix seconds, exclusive */
	const char *const *keys;   /* nlabels label keys */
	const char *const *values; /* nlabels label values */
	size_t nlabels;
	const char *type;  /* the profile type; NULL: STORE_TYPE_CPU. store__windows() is
			    * per window and records the CPU profile's batches only (their
			    * periods): it honours a type other than cpu as a selection
			    * (the windows where such a label set has a block) */
	size_t max_stacks; /* store__query_stacks(): more distinct stacks than this
			    * fail with -ENOBUFS before they are all held (a
			    * query's memory budget); 0: no cap but the store's own */
};

/* Called once per distinct stack: its nframes frames (common/frame.h), root first,
 * the first the process, borrowed for the call; count is the sum over the selected
 * windows and label sets. Return 0 to go on; anything else stops the query, which
 * then returns that value. */
struct frame;
typedef int (*store_stack_fn)(void *ctx, const struct frame *frames, size_t nframes,
			      uint64_t count);

/* Frame ids, for a caller that can use them (a flame tree compares ids where it
 * would compare texts): pass store__query_stacks() the callback store_stack_ids
 * and, as its ctx, a struct store_stack_ids naming the real callback. That one
 * gets, besides the stack, ids[i] for frames[i] (borrowed for the call): equal ids
 * are equal frames, every field, for as long as the store is open (the SQLite
 * backend's frame dictionary ids: never given to another frame). A backend
 * without ids calls store_stack_ids() like any callback, and the real callback
 * gets ids NULL. */
typedef int (*store_stack_ids_fn)(void *ctx, const struct frame *frames, const uint64_t *ids,
				  size_t nframes, uint64_t count);

struct store_stack_ids {
	store_stack_ids_fn cb;
	void *ctx;
};

/* The store_stack_fn of the above: calls ((struct store_stack_ids *)ctx)->cb with
 * ids NULL. */
int store_stack_ids(void *ctx, const struct frame *frames, size_t nframes, uint64_t count);

/* Runs q, calling cb for each stack with a nonzero sum, in no particular order
 * (the SQLite backend hands out stacks that share outer frames one after
 * another: see store/sqlite/read.c). The callback must not call into s. The answer is the raw
 * windows' wherever they are kept (rollups are used only for buckets that lie inside [from, to));
 * where they are gone, a rollup bucket counts whole when its start is in [from, to). The blocks are
 * merged in C; the stacks' frames come from a per-connection cache (64 MiB at most). Sums saturate
 * at INT64_MAX: no data makes a query fail. Returns 0, cb's nonzero return, -EINVAL, -ENOMEM, -EIO
 * (a stored block that does not decode, named in store__errmsg()), -E2BIG (more than
 * BLOCK_MERGE_MAX_IDS distinct stacks in one answer), -ENOBUFS (more than
 * q->max_stacks, found while merging, before the stacks are resolved or handed
 * out) or a translated SQLite error.
 *
 * A gauge type (ptype__is_gauge(): inuse_space, inuse_objects, goroutines) is
 * not summed over time: each window is a snapshot, and a stack's count is, per
 * label set, the mean over that label set's snapshots in [from, to) (a stack
 * absent from a snapshot counting 0 there, several batches of one window one
 * snapshot), rounded, then summed over the label sets (store/gauge.h). Its raw
 * windows are read wherever they are kept; past them a rollup bucket counts as
 * its length / STORE_GAUGE_WINDOW_SECONDS snapshots. */
int store__query_stacks(struct store *s, const struct store_query *q, store_stack_fn cb, void *ctx);

/* Called once per time bucket with samples, in time order: the bucket's start
 * (from + k * step) and the sum of the windows that start in it. Non-zero stops. */
typedef int (*store_series_fn)(void *ctx, int64_t bucket_start, uint64_t count);

/* A gauge's timeline reads each step's stacks: at most this many steps, a flame
 * graph's read each (query/fnseries.h's function timelines have the same
 * bound). */
#define STORE_GAUGE_MAX_BUCKETS 2000

/* Samples per step-long bucket over [from, to) for q's label selection: the
 * timeline that finds a spike. Each bucket is planned as a range of its own and
 * summed from the blocks' totals (no block is read). Sums saturate at INT64_MAX.
 * A gauge's bucket is its stacks' answer over the bucket (store__query_stacks: the
 * mean of its snapshots), one stacks read a bucket, at most
 * STORE_GAUGE_MAX_BUCKETS buckets (-E2BIG past them, with a reason).
 * Returns 0, cb's nonzero return, -EINVAL, -E2BIG, or a translated SQLite error. */
int store__query_series(struct store *s, const struct store_query *q, int64_t step_seconds,
			store_series_fn cb, void *ctx);

/* Called once per label key (store__labels) or value (store__label_values), in
 * sorted order. Non-zero stops. */
typedef int (*store_text_fn)(void *ctx, const char *text);

/* Label keys of the label sets with samples in [q->from, q->to) that hold q's
 * labels (all label sets when q->nlabels is 0). Returns 0, cb's nonzero return,
 * -EINVAL (as store__query_stacks) or a translated SQLite error. */
int store__labels(struct store *s, const struct store_query *q, store_text_fn cb, void *ctx);

/* The profile types (common/ptype.h's names, in the table's order) with samples
 * in [q->from, q->to) in label sets that hold q's labels; q->type is ignored.
 * Costs one timeline of one bucket a type (store__query_series' sums of block
 * totals, whatever the type's aggregation). Returns 0, cb's nonzero return,
 * -EINVAL or a translated backend error. */
int store__types(struct store *s, const struct store_query *q, store_text_fn cb, void *ctx);

/* Values of label key among the same label sets as store__labels(s, q). */
int store__label_values(struct store *s, const char *key, const struct store_query *q,
			store_text_fn cb, void *ctx);

/* Whether some label set with samples in [from, to) has label key: 1 or 0, or
 * -EINVAL (NULL s or key) or a translated SQLite error. Stops at the first block
 * of such a label set in the plan's spans, so a key in use costs about one row; a
 * key not in use costs a scan of those spans' block_index rows (as
 * store__labels). */
int store__label_key_used(struct store *s, const char *key, int64_t from, int64_t to);

struct store_stats {
	uint64_t sample_rows; /* (window, label set, stack) entries of raw blocks (kept
			       * by triggers) */
	uint64_t batches;     /* batches ever ingested (duplicates excluded) */
	uint64_t strings;     /* dictionary sizes */
	uint64_t frames;
	uint64_t stacks;
	uint64_t labelsets;
	uint64_t gc_deleted;	 /* dictionary rows the GC deleted, ever (006_gc.sql) */
	uint64_t db_bytes;	 /* page_count * page_size */
	uint64_t blocks[3];	 /* block rows per tier: raw, minute, hour (a count(*)
				  * of block_index's range per tier) */
	int64_t built_before[3]; /* [1], [2]: rollup watermarks (schema/sqlite/005), INT64_MIN
				  * when none; [0] unused (INT64_MIN) */
	int64_t kept_from[3];	 /* per tier: blocks older are gone, INT64_MIN: none */
};

/* Fills st. Cheap enough for every scrape: a few one-row reads (the sample row
 * count is kept by triggers, the dictionary sizes are row counts kept in state,
 * schema/sqlite/006_gc.sql) and a
 * count of block_index per tier (a few bytes a block), no block read.
 * Returns 0 or a translated SQLite error. */
int store__stats(struct store *s, struct store_stats *st);

/* The schema version (PRAGMA user_version: the number of migrations applied). */
int store__schema_version(struct store *s, int64_t *version);

/* Runs PRAGMA integrity_check. Returns 0 when it reports "ok", -EIO when it finds
 * damage (the first report is then in store__errmsg()), or a translated error. */
int store__check(struct store *s);

/* ---- windows: what a stored range covers (store/sqlite/windows.c) -------------------
 *
 * Each batch's window length and sampling period are kept per stored window
 * (schema/sqlite/004_windows.sql), so that an answer can state the time it really covers
 * (queries select whole windows: a window counts when its start is in [from, to))
 * and turn samples into CPU time (samples x period). */

#define STORE_WINDOWS_MAX_PERIODS 8 /* distinct periods reported; the rest counted */

struct store_windows {
	uint64_t nwindows;    /* distinct window starts in range; 0: none (the rest 0) */
	int64_t first_start;  /* the first window's start: the effective from */
	int64_t last_end;     /* the latest end of a window in range: the effective to */
	uint32_t min_seconds; /* shortest and longest window length (a rollup bucket */
	uint32_t max_seconds; /* whose raw windows are gone is longer than theirs) */
	uint64_t periods[STORE_WINDOWS_MAX_PERIODS];	    /* distinct sampling periods in ns, by
							     * batches descending, then period; 0:
							     * unknown (sent as 0) */
	uint64_t period_batches[STORE_WINDOWS_MAX_PERIODS]; /* batches stored at each */
	size_t nperiods;				    /* entries of periods[] */
	size_t more_periods; /* distinct periods past STORE_WINDOWS_MAX_PERIODS */
};

/* Fills *out for the windows with window_start in [q->from, q->to) and, with a
 * label selection, samples of a selected label set. The table is per window, not
 * per label set (one upsert per batch keeps ingest cost unchanged): a window that
 * two agents sampled at different periods reports both even when the selection
 * holds one agent's processes only (agents' windows coincide when their clocks
 * align them alike). Windows stored before migration 004 have no rows and are not
 * counted. Cost: one range read of a table with a row per window and period; with
 * a selection, one seek on block_index's primary key per window and selected
 * label set (any tier's block at the window's start counts). Returns 0, -EINVAL
 * (NULL argument, bad selection) or a translated SQLite error. */
int store__windows(struct store *s, const struct store_query *q, struct store_windows *out);

/* One bounded step of maintenance at time now (unix seconds), in steps, each in
 * its own transaction so that one failing never undoes or blocks another:
 *   rollup     builds the next minute buckets (oldest first, those that ended
 *              STORE_ROLLUP_DELAY_SECONDS ago) from the raw windows, and the next
 *              hour buckets from built minute buckets, advancing the watermarks;
 *   retention  deletes each tier's blocks older than its retention, but never
 *              those the next tier is not built over yet; the windows rows of raw
 *              windows deleted become one row per minute bucket, those of minute
 *              buckets one per hour (schema/sqlite/004); the (agent, seq) of batches
 *              older than the raw retention are forgotten;
 *   gc         deletes the dictionary rows (label sets, stacks, frames, strings)
 *              no block uses any more (schema/sqlite/006_gc.sql), at most 4 x 64 rows a
 *              call; ids are never given out again.
 * Together they touch at most about max_rows blocks (0 means 2000), so ingest
 * waits for at most one bounded call. *more is true when work remains: call again
 * (e.g. after the next ingest). Every step runs even when an earlier one failed;
 * the result is 0 or the first step's error (a translated SQLite error), whose
 * reason store__errmsg() keeps. The caller should log a failure and count it: a
 * step that fails every call means the disk grows (retention) or queries slow
 * down (rollups). */
int store__maintain(struct store *s, int64_t now, size_t max_rows, bool *more);

/* ---- stack references: the fleet wire's stacks by content id ----------------
 *
 * An agent sends a stack the collectors have already stored as its content id
 * alone (wire format 3, schema/smolder.proto; the id is wire/stackid.h's hash
 * of the stack's canonical bytes). The store remembers id -> canonical bytes, so
 * that any collector of a store resolves any agent's ids (stateless collectors
 * share only the store). The bytes are opaque here: the collector computes the
 * id from them (never trusting an agent's claim) before it asks the store to
 * remember them, and parses them back when it resolves an id. */
#define STORE_STACKREF_ID_LEN 16
/* The most ids one call takes: a batch's stacks (BATCH_MAX_STACKS). */
#define STORE_STACKREF_MAX_REFS (1u << 20)
/* The most canonical bytes one stack takes: BATCH_MAX_STACK_DEPTH frames of two
 * strings of BATCH_MAX_STRING_LEN, each frame with its 9 bytes of header
 * (wire/stackid.h, STACKID_MAX_BYTES, which a test holds equal). */
#define STORE_STACKREF_MAX_BYTES (512u * (9u + 2u * 4096u))

struct store_stackref {
	uint8_t id[STORE_STACKREF_ID_LEN]; /* the stack's content id */
	void *bytes; /* remember: the canonical bytes (borrowed); look up: NULL on
		      * the way in, a malloc'd copy on the way out when the id is
		      * known (the caller frees it), NULL when it is not */
	size_t len;  /* bytes' length: 1..STORE_STACKREF_MAX_BYTES */
};

/* Remembers and looks up stacks by content id, in one transaction: each refs[i]
 * whose bytes is set is remembered (an id already known keeps its first bytes:
 * the caller made id from bytes, so they are the same), each whose bytes is NULL
 * is looked up (bytes and len set when known). Every id named becomes used at
 * now (unix seconds); an id not used for the store's retention_seconds is
 * forgotten, a few at each call (the store's other GC is for blocks), and an
 * agent then sends that stack in full again. Returns 0, -EINVAL (NULL s, refs
 * NULL with n > 0, n over STORE_STACKREF_MAX_REFS, a len of 0 or over
 * STORE_STACKREF_MAX_BYTES), -EROFS (a reader), -EOPNOTSUPP (a backend without
 * them), -ENOMEM or a translated backend error (store__errmsg()); on error no
 * looked-up bytes are left allocated (each is NULL again) and nothing was
 * remembered. */
int store__stackrefs(struct store *s, int64_t now, struct store_stackref *refs, size_t n);

#endif

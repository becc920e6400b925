/* Private to store/: the in-memory caches of dictionary ids that the SQLite
 * store's ingest (store/sqlite/ingest.c) puts in front of the SELECT-then-INSERT
 * on strings, frames, stacks and label sets (schema/sqlite/001_init.sql); the
 * ClickHouse store's memo of content ids (store/clickhouse/ids.c) is the same
 * table. One flat open-addressing hash table maps (kind, key bytes) to the id the
 * table gave, and for stacks and label sets the last_seen ingest knows the row
 * has (schema/sqlite/006_gc.sql: it raises it at most once an hour); keys are kept
 * in one arena. A hit is trusted because a committed id is never renumbered and
 * never deleted while the cache may hold it: what a transaction learnt is dropped
 * when it rolls back (store_intern_reset), and everything when the dictionary GC
 * deleted rows since the cache was filled (store_intern_sync, on state.gc_epoch).
 *
 * Memory is bounded: keys, slots and arena together stay under the cap (default
 * STORE_INTERN_DEFAULT_CAP); an add that would pass it empties the cache first,
 * which costs only misses (one SELECT each) until it is warm again.
 */
#ifndef SMOLDER_STORE_INTERN_H
#define SMOLDER_STORE_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store_intern;

/* 64 MiB: the dictionaries a collector meets in a day of a dozen busy hosts
 * (bench/ingest_bench's host: about 90 k stacks of ~100 B of key, as many frames
 * and strings, so ~25 MB with the table) stay warm, and the collector's RSS cannot
 * grow with what hostile or churning agents send. */
#define STORE_INTERN_DEFAULT_CAP ((size_t)64 << 20)
/* Caps are below 4 GiB (arena offsets are 32-bit) and at least a few keys. */
#define STORE_INTERN_MAX_CAP ((size_t)UINT32_MAX)
#define STORE_INTERN_MIN_CAP ((size_t)4096)

enum store_intern_kind {
	INTERN_TEXT,  /* strings.text */
	INTERN_FRAME, /* frames by content as sent: kind, line, name length (varints), name, file */
	INTERN_STACK, /* stacks.frames blob */
	INTERN_LABELSET, /* labelsets.labels blob */
};

struct store_intern_stats {
	size_t bytes;	 /* arena and slots */
	size_t entries;	 /* keys cached */
	size_t cap;	 /* the cap on bytes */
	uint64_t clears; /* times the cap emptied the cache */
	uint64_t resets; /* store_intern_reset() calls (rollbacks) */
	uint64_t syncs;	 /* times a GC (a new state.gc_epoch) emptied the cache */
	uint64_t hits, misses;
};

/* Makes an empty cache bounded by cap bytes (0: the default). Returns 0, -EINVAL
 * (cap outside [STORE_INTERN_MIN_CAP, STORE_INTERN_MAX_CAP]) or -ENOMEM; *out
 * written only on success. */
int store_intern_new(size_t cap, struct store_intern **out);

/* Frees the cache (NULL is fine): store__close(). store_intern_reset() empties
 * it after a rollback (ids it learnt there were never committed). */
void store_intern_free(struct store_intern *in);
void store_intern_reset(struct store_intern *in);

/* The hash of (kind, key[0..len)), for the calls below. */
uint64_t store_intern_hash(const struct store_intern *in, int kind, const void *key, size_t len);

/* The id of (kind, key[0..len)) of this hash if cached: true and *id set, and *seen
 * (may be NULL) the last_seen it was cached or last updated with. */
bool store_intern_find_hashed(struct store_intern *in, int kind, const void *key, size_t len,
			      uint64_t hash, int64_t *id, int64_t *seen);

/* Sets the last_seen of a cached key; nothing when it is not cached. */
void store_intern_set_seen(struct store_intern *in, int kind, const void *key, size_t len,
			   uint64_t hash, int64_t seen);

/* Empties the cache when epoch (state.gc_epoch, read in the caller's transaction)
 * is not the one it was filled under, and remembers epoch. */
void store_intern_sync(struct store_intern *in, int64_t epoch);

/* Prefetches what store_intern_find_hashed() of a key of this hash will read:
 * stage 0 its first slot, stage 1 (after stage 0 for many keys) the key that slot
 * points to, so that the misses of many lookups overlap. */
void store_intern_prefetch(const struct store_intern *in, uint64_t hash, int stage);

/* Caches (kind, key) -> (id, seen) (id > 0, key not cached yet, hash its
 * store_intern_hash()). Past the cap the cache is emptied first; a key that alone
 * passes it is not cached. Returns 0 or -ENOMEM (the cache is then emptied,
 * never wrong). */
int store_intern_add(struct store_intern *in, int kind, const void *key, size_t len, uint64_t hash,
		     int64_t id, int64_t seen);

/* For tests and the bench: the cache at *slot (made if NULL) is replaced by an
 * empty one of cap (0: the default) that keeps its counters. Returns 0, -EINVAL
 * or -ENOMEM (*slot unchanged then). */
int store_intern_set_cap(struct store_intern **slot, size_t cap);

/* in's counters (all 0 for NULL: ingest has not made the cache yet). */
void store_intern_get_stats(const struct store_intern *in, struct store_intern_stats *out);

#endif

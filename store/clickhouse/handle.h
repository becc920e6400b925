/* Private to the ClickHouse store (store/clickhouse/): the handle every piece
 * works on (struct ch_store, behind struct store of store/backend.h) and the
 * limits its pieces share. Only types, constants and inline functions: each
 * piece's functions are declared in its own header (store/clickhouse/X.h for
 * X.c); the map of the pieces is at the top of store/backend.h.
 * docs/clickhouse.md is the user's view.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_HANDLE_H
#define SMOLDER_STORE_CLICKHOUSE_HANDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/batch.h"
#include "store/backend.h"
#include "store/clickhouse/ids.h"
#include "store/store.h"

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

struct ch_http;
struct ch_frames_cache;

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

static inline struct ch_store *ch_of(struct store *s)
{
	return (struct ch_store *)s;
}

#endif

/* The ClickHouse store's cache of stacks' frames for its flame graphs
 * (store/clickhouse/frames.c).
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_FRAMES_H
#define SMOLDER_STORE_CLICKHOUSE_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/frame.h"
#include "store/clickhouse/handle.h"
#include "store/store.h"

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

#endif

/* A ClickHouse flame graph's stacks (store/clickhouse/stacks.c;
 * schema/clickhouse/007_frames.sql): sums of stack ids to frames.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_STACKS_H
#define SMOLDER_STORE_CLICKHOUSE_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/clickhouse/handle.h"
#include "store/store.h"

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

#endif

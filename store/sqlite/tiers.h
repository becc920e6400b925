/* The SQLite store's tiers of profile blocks (store/sqlite/tiers.c;
 * schema/sqlite/005_blocks.sql): their watermarks in the state row, and the ways
 * any piece adds samples to a block. The plan over the tiers is store/plan.h.
 */
#ifndef SMOLDER_STORE_SQLITE_TIERS_H
#define SMOLDER_STORE_SQLITE_TIERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/block.h"
#include "store/plan.h"
#include "store/sqlite/db.h"

/* Whether tier's blocks hold a section per label set (store/block.h, version 2):
 * raw blocks, a window's batch each (schema/sqlite/008_window_blocks.sql), and minute
 * blocks, one per bucket (schema/sqlite/010_minute_blocks.sql); their block_index key is
 * no label set but -1, -2, ... Hour blocks are one per bucket and label set
 * (version 1, keyed by the label set). */
static inline bool store_tier_sections(int tier)
{
	return tier == TIER_RAW || tier == TIER_MINUTE;
}

/* Reads them in the caller's transaction (or its own read). Returns 0 or -errno. */
int store_read_tiers(struct sqlite_store *s, struct store_tiers *t);

/* Writes state.built_before_<tier> (tier 1 or 2) or state.kept_from_<tier>
 * (0..2); INT64_MIN writes NULL. In the caller's transaction. */
int store_set_built_before(struct sqlite_store *s, int tier, int64_t v);
int store_set_kept_from(struct sqlite_store *s, int tier, int64_t v);

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

#endif

/* The SQLite store's conversions of older layouts (store/sqlite/migrate.c): 004's
 * samples rows into raw blocks, 005-007's raw blocks into window blocks
 * (schema/sqlite/008_window_blocks.sql) and 005-009's minute blocks into bucket
 * blocks (schema/sqlite/010_minute_blocks.sql), run by a writer's open.
 */
#ifndef SMOLDER_STORE_SQLITE_MIGRATE_H
#define SMOLDER_STORE_SQLITE_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/sqlite/db.h"

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

#endif

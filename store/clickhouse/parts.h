/* Which partitions of the ClickHouse store's tier tables a read takes without
 * FINAL (store/clickhouse/parts.c): those of one part, looked up in
 * system.parts before the read and checked after it.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_PARTS_H
#define SMOLDER_STORE_CLICKHOUSE_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/clickhouse/handle.h"

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

#endif

/* The read plan both store backends share (store/plan.c): the three tiers of
 * stored profiles (raw windows, minute and hour buckets), the watermarks that say
 * which buckets are built and which are kept, and the split of a query's range
 * into spans of one tier each, the coarsest that lie inside it.
 */
#ifndef SMOLDER_STORE_PLAN_H
#define SMOLDER_STORE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* a / b rounded toward minus infinity. */
static inline int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The tiers of stored profiles, finest first: raw windows as sent, minute
 * buckets, hour buckets. Both backends keep these three. */
#define STORE_NTIERS 3
enum store_tier { TIER_RAW = 0, TIER_MINUTE = 1, TIER_HOUR = 2 };

/* A tier's bucket length in seconds; 0 for TIER_RAW (windows as sent). */
int64_t store_tier_seconds(int tier);

/* The watermarks a plan reads (each backend keeps its own: the SQLite store's
 * state row, schema/sqlite/005_blocks.sql; the ClickHouse store's `tiers` table,
 * schema/clickhouse/002_tiers.sql): built_before[t] for t >= 1, every bucket of
 * tier t starting below it is built (INT64_MIN: none; built_before[0] is
 * INT64_MAX: raw windows are there as soon as they are ingested); kept_from[t],
 * tier t's blocks starting below it are gone or being deleted (INT64_MIN: none
 * deleted). */
struct store_tiers {
	int64_t built_before[STORE_NTIERS];
	int64_t kept_from[STORE_NTIERS];
};

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

#endif

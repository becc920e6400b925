/* The ClickHouse store's rollup tiers (store/clickhouse/tiers.c;
 * schema/clickhouse/002_tiers.sql): the tier tables and their partitions, the
 * watermarks, the builds of minute and hour buckets, and the SQL of a read over
 * the tiers by the plan of store/plan.h.
 */
#ifndef SMOLDER_STORE_CLICKHOUSE_TIERS_H
#define SMOLDER_STORE_CLICKHOUSE_TIERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/tables.h"
#include "store/plan.h"
#include "store/store.h"

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
/* The watermarks read now as store_plan()'s input (store/plan.h); t's as
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

struct ch_parts; /* store/clickhouse/parts.h */

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
 * ch_w_spans(). A typed plan of a gauge (store/gauge.h) is made over
 * store_gauge_tiers() and its rows have a column more, w: the snapshots their
 * start counts for. Returns 0 or -errno. */
int ch_w_plan(struct ch_store *s, struct ch_wbuf *w, const struct store_query *q, bool typed,
	      struct ch_parts *parts);
/* The same plan with no FINAL anywhere: for a read that only asks which label
 * sets or stacks have rows (copies do not change that). */
int ch_w_plan_rows(struct ch_store *s, struct ch_wbuf *w, const struct store_query *q, bool typed);

#endif

/* The SQLite store's timelines (store/sqlite/series.h): each bucket [from + k * step,
 * + step) is planned on its own (store_plan(), store/plan.c) and its spans'
 * block_index.total summed, so no block is decoded and a rollup is used for a
 * bucket only when it lies inside it; raw and minute blocks under a selection
 * that does not keep every label set add their selected sections' totals from the
 * directory. Every read runs in one read transaction (store/sqlite/select.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "store/sqlite/series.h"
#include "store/block.h"
#include "store/plan.h"
#include "store/sqlite/db.h"
#include "store/sqlite/select.h"
#include "store/sqlite/tiers.h"

/* The earliest block start at or after t in any tier (for any label set), or
 * INT64_MAX: buckets before it are empty. */
static int next_start(struct sqlite_store *s, int64_t t, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	int err;

	err = store_slot_stmt(
		s, ST_R_NEXT,
		/* the aggregate min() skips the NULL of an empty tier */
		"SELECT min(x) FROM (SELECT (SELECT start FROM block_index WHERE "
		"tier = 0 AND start >= ?1 ORDER BY start LIMIT 1) AS x UNION ALL "
		"SELECT (SELECT start FROM block_index WHERE tier = 1 AND start >= ?1 "
		"ORDER BY start LIMIT 1) UNION ALL SELECT (SELECT start FROM "
		"block_index WHERE tier = 2 AND start >= ?1 ORDER BY start LIMIT 1))",
		&st);
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, t);
	err = store_step(s, st);
	if (err == 1)
		*out = sqlite3_column_type(st, 0) == SQLITE_NULL ? INT64_MAX
								 : sqlite3_column_int64(st, 0);
	store_done(st);
	return err < 0 ? err : 0;
}

static uint64_t sat_add(uint64_t a, int64_t v)
{
	if (v <= 0)
		return a;
	return a > (uint64_t)INT64_MAX - (uint64_t)v ? (uint64_t)INT64_MAX : a + (uint64_t)v;
}

struct point {
	int64_t start;
	uint64_t count;
};

/* The sum of a span of raw or minute blocks for f: block_index's totals when f keeps every
 * label set, else the totals of the sections f keeps from each block's directory
 * (inflated, no pair decoded). */
static int raw_total(struct sqlite_store *s, const struct ls_filter *f, struct block_reader **rd,
		     const struct store_span *sp, uint64_t *sum)
{
	const struct block_section *sec;
	sqlite3_stmt *st = NULL;
	size_t nsec, i;
	int err;

	if (store_filter_all(f)) {
		err = store_slot_stmt(s, ST_R_RAW_TOTAL,
				      "SELECT sat_sum(total) FROM block_index WHERE tier = ?1 AND "
				      "start >= ?2 AND start < ?3",
				      &st);
		if (err)
			return err;
		store_bind_span(st, sp->tier, sp->from, sp->to);
		err = store_step(s, st);
		if (err == 1)
			*sum = sat_add(*sum, sqlite3_column_int64(st, 0));
		store_done(st);
		return err < 0 ? err : 0;
	}
	if (!f->negate && !f->n)
		return 0; /* no label set is selected (a type nobody sent): nothing to read */
	if (!*rd) {
		err = block_reader__new(rd);
		if (err)
			return err;
	}
	err = store_slot_stmt(s, ST_R_RAW,
			      "SELECT bi.block_id, b.data, bi.start, bi.labelset_id "
			      "FROM block_index bi JOIN blocks b ON b.id = bi.block_id "
			      "WHERE bi.tier = ?1 AND bi.start >= ?2 AND bi.start < ?3",
			      &st);
	if (err)
		return err;
	store_bind_span(st, sp->tier, sp->from, sp->to);
	while ((err = store_step(s, st)) == 1) {
		err = block_reader__open(*rd, sqlite3_column_blob(st, 1),
					 (size_t)sqlite3_column_bytes(st, 1));
		if (err) {
			err = err == -ENOMEM
				      ? err
				      : store_fail(s, -EIO,
						   "block %" PRId64 " (tier %d, start %" PRId64
						   ") does not decode",
						   (int64_t)sqlite3_column_int64(st, 0), sp->tier,
						   (int64_t)sqlite3_column_int64(st, 2));
			break;
		}
		sec = block_reader__sections(*rd, &nsec);
		for (i = 0; i < nsec; i++)
			if (store_filter_keeps(sec[i].labelset_id, (void *)f))
				*sum = sat_add(*sum, sec[i].total);
	}
	store_done(st);
	return err < 0 ? err : 0;
}

/* The non-empty buckets of q into *out (time order). */
static int series_points(struct sqlite_store *s, const struct store_query *q, int64_t step,
			 struct point **out, size_t *nout, size_t *cap)
{
	struct store_span sp[STORE_PLAN_MAX_SPANS];
	struct block_reader *rd = NULL;
	struct ls_filter f = { 0 };
	bool made = false;
	struct store_tiers t;
	sqlite3_stmt *st = NULL;
	int64_t b, next = INT64_MIN;
	bool owned = false;
	int err;

	err = store_read_tiers(s, &t);
	if (err)
		return err;
	err = store_span_stmt(s, q, ST_R_TOTAL,
			      "SELECT sat_sum(total) FROM block_index "
			      "WHERE tier = ?1 AND start >= ?2 AND start < ?3",
			      "", &st, &owned);
	if (err)
		return err;
	/* bucket ends in 128 bits: from + step may pass INT64_MAX */
	for (b = q->from; b < q->to;) {
		int64_t e = (__int128)b + step >= q->to ? q->to : b + step;
		uint64_t sum = 0;
		size_t n, i;

		if (next < b) {
			err = next_start(s, b, &next);
			if (err)
				break;
		}
		if (next >= e) { /* no block starts in this bucket: skip to next's */
			if (next >= q->to)
				break;
			b = (int64_t)(b + ((__int128)next - b) / step * step); /* <= next */
			continue;
		}
		n = store_plan(&t, b, e, sp);
		for (i = 0; i < n; i++) {
			if (store_tier_sections(sp[i].tier)) {
				if (!made) {
					err = store_filter_make(s, q, &f);
					made = !err;
				}
				err = err ?: raw_total(s, &f, &rd, &sp[i], &sum);
				if (err)
					break;
				continue;
			}
			store_bind_span(st, sp[i].tier, sp[i].from, sp[i].to);
			err = store_step(s, st);
			if (err < 0)
				break;
			sum = sat_add(sum, sqlite3_column_int64(st, 0));
			sqlite3_reset(st);
			err = 0;
		}
		if (err)
			break;
		if (sum) {
			err = array_grow((void **)out, cap, *nout + 1, sizeof(**out));
			if (err)
				break;
			(*out)[(*nout)++] = (struct point){ b, sum };
		}
		if (e >= q->to)
			break;
		b = e;
	}
	store_span_stmt_done(st, owned);
	store_filter_free(&f);
	block_reader__free(rd);
	return err;
}

int sqlite_store__query_series(struct store *base, const struct store_query *q,
			       int64_t step_seconds, store_series_fn cb, void *ctx)
{
	struct sqlite_store *s = sqlite_store_of(base);
	struct point *pts = NULL;
	size_t n = 0, cap = 0, i;
	bool began = false;
	int err;

	if (!cb || step_seconds <= 0)
		return -EINVAL;
	err = store_check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	err = store_read_begin(s, &began);
	if (err)
		return err;
	err = series_points(s, q, step_seconds, &pts, &n, &cap);
	err = store_read_end(s, began, err);
	for (i = 0; i < n && !err; i++)
		err = cb(ctx, pts[i].start, pts[i].count);
	free(pts);
	return err;
}

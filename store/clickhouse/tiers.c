/* The ClickHouse store's tiers (store/clickhouse/tiers.h; schema/clickhouse/002_tiers.sql, the
 * raw and minute tables of 006_layout.sql): the
 * watermarks in the `tiers` table, the rollups built inside ClickHouse (minute
 * buckets from raw rows, hour buckets from minute rows, each an INSERT ... SELECT
 * over a FINAL read, which collapses a batch inserted twice before summing), and
 * the SQL of one span of a read plan (FINAL too). The plan itself is shared with
 * the SQLite store (store_plan(), store/plan.c), so both backends answer a range from the
 * same tiers. Every read of a raw or minute range states the range's time chunks
 * as the table's key writes them (ch_w_chunk()), so the primary key narrows it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse/tiers.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/parts.h"
#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/tables.h"
#include "store/gauge.h"
#include "store/plan.h"

/* A watermark is stored as its bits with the top one flipped (002_tiers.sql). */
#define TIER_BIAS (UINT64_C(1) << 63)

/* The chunk that leads a tier table's key after the type (006_layout.sql), 0:
 * none (the hour tier's partitions each hold one start). */
static const int64_t tier_chunk[STORE_NTIERS] = { CH_RAW_CHUNK_SECONDS, CH_MINUTE_CHUNK_SECONDS,
						  0 };

void ch_w_chunk(struct ch_wbuf *w, int tier, int64_t from, int64_t to)
{
	const char *col = ch_tier_column(tier);
	const int64_t c = tier_chunk[tier];

	/* intDiv is monotonic, so the chunks of [from, to - 1] hold every row of the
	 * range; ClickHouse computes both bounds, with its own rounding */
	if (!c || from >= to)
		return;
	ch_w_text(w,
		  " AND intDiv(%s, %" PRId64 ") >= intDiv(toInt64(%" PRId64 "), %" PRId64
		  ") AND intDiv(%s, %" PRId64 ") <= intDiv(toInt64(%" PRId64 "), %" PRId64 ")",
		  col, c, from, c, col, c, to - 1, c);
}

int64_t ch_floor(int64_t v, int64_t len)
{
	return floor_div(v, len) * len;
}

int ch_tiers_read(struct ch_store *s, struct ch_tiers *t)
{
	struct ch_answer a;
	struct ch_rbuf r;
	int err, i;

	for (i = 0; i < STORE_NTIERS; i++)
		t->claim[i] = t->built[i] = t->kept[i] = t->totals[i] = INT64_MIN;
	t->claim[0] = t->built[0] = INT64_MAX; /* raw rows are there once inserted */
	err = ch_run(s, "tiers",
		     "SELECT name, max(value) FROM tiers GROUP BY name" CH_LOOKUP_SETTINGS
		     " FORMAT RowBinary",
		     NULL, 0, &a);
	if (err)
		return err;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		size_t n;
		const char *name = ch_r_str(&r, &n);
		int64_t v = (int64_t)(ch_r_uint(&r, 8) ^ TIER_BIAS);
		int k;

		if (r.bad || n < 2 || name[n - 2] != '_' || name[n - 1] < '0' || name[n - 1] > '2')
			continue; /* a name of a later version */
		k = name[n - 1] - '0';
		if (n == 7 && !memcmp(name, "claim", 5) && k)
			t->claim[k] = v;
		else if (n == 7 && !memcmp(name, "built", 5) && k)
			t->built[k] = v;
		else if (n == 6 && !memcmp(name, "kept", 4))
			t->kept[k] = v;
		else if (n == 8 && !memcmp(name, "totals", 6) && k)
			t->totals[k] = v;
	}
	return r.bad ? ch_fail(s, -EIO, "tiers: malformed answer") : 0;
}

int ch_tiers_raise(struct ch_store *s, const char *name, int tier, int64_t v)
{
	struct ch_wbuf w = { 0 };
	char n[16];
	int err;

	snprintf(n, sizeof(n), "%s_%d", name, tier);
	ch_w_str(&w, n, strlen(n));
	ch_w_uint(&w, (uint64_t)v ^ TIER_BIAS, 8);
	err = w.err ?: ch_run(s, "tiers", "INSERT INTO tiers FORMAT RowBinary", w.p, w.len, NULL);
	free(w.p);
	return err;
}

/* The rows of tier - 1 starting in [from, to) summed into tier's buckets: each
 * batch's raw row (or each finer rollup row of one src) once, then summed, the
 * sum saturated as reads saturate (ch_r_sum(): a UInt64 sum wraps). */
int ch_tiers_build(struct ch_store *s, int tier, int64_t from, int64_t to)
{
	const int64_t len = store_tier_seconds(tier);
	const char *col = ch_tier_column(tier - 1);
	struct ch_wbuf sql = { 0 };
	int err;

	if (tier != TIER_MINUTE && tier != TIER_HOUR)
		return -EINVAL;
	if (from >= to)
		return 0;
	ch_w_text(&sql,
		  "INSERT INTO %s (start, type, labelset, stack, src, value) "
		  "SELECT toInt64(%s - ((%s %% %" PRId64 ") + %" PRId64 ") %% %" PRId64
		  ") AS b, type, labelset, stack, toUInt64(0), if(sum(toFloat64(value)) >= "
		  "%.17g, toUInt64(%" PRId64 "), sum(value)) FROM %s FINAL WHERE %s >= %" PRId64
		  " AND %s < %" PRId64,
		  ch_tier_table(tier), col, col, len, len, len, CH_SUM_SATURATED, INT64_MAX,
		  ch_tier_table(tier - 1), col, from, col, to);
	ch_w_chunk(&sql, tier - 1, from, to);
	ch_w_text(&sql, " GROUP BY b, type, labelset, stack");
	err = ch_run_sql(s, tier == TIER_MINUTE ? "rollup minutes" : "rollup hours", &sql, NULL);
	/* what stats report of the buckets (005_counts.sql): the raw rows under the
	 * minutes just built, then the new buckets' own rows */
	if (!err && tier == TIER_MINUTE) {
		sql.len = 0;
		ch_w_text(&sql,
			  "INSERT INTO counts (tier, bucket, rows, blocks) SELECT toUInt8(0), b, "
			  "uniqExact(window_start, labelset, stack), uniqExact(window_start, "
			  "labelset) FROM (SELECT toInt64(window_start - ((window_start %% 60) + "
			  "60) %% 60) AS b, window_start, labelset, stack FROM " CH_RAW_TABLE
			  " WHERE window_start >= %" PRId64 " AND window_start < %" PRId64,
			  from, to);
		ch_w_chunk(&sql, 0, from, to);
		ch_w_text(&sql, ") GROUP BY b");
		err = ch_run_sql(s, "rollup counts", &sql, NULL);
	}
	free(sql.p);
	return err ?: ch_tiers_count(s, tier, from, to);
}

int ch_tiers_count(struct ch_store *s, int tier, int64_t from, int64_t to)
{
	struct ch_wbuf sql = { 0 };
	int err;

	if (tier != TIER_MINUTE && tier != TIER_HOUR)
		return -EINVAL;
	ch_w_text(&sql,
		  "INSERT INTO counts (tier, bucket, rows, blocks) SELECT toUInt8(%d), start, "
		  "uniqExact(labelset, stack), uniqExact(labelset) FROM %s WHERE start >= %" PRId64
		  " AND start < %" PRId64,
		  tier, ch_tier_table(tier), from, to);
	ch_w_chunk(&sql, tier, from, to); /* the key narrows the read */
	ch_w_text(&sql, " GROUP BY start");
	err = ch_run_sql(s, "rollup counts", &sql, NULL);
	if (err)
		goto out;
	/* the totals: every stack and src of a (start, type, label set), copies
	 * collapsed (FINAL), the sum saturated as reads saturate (ch_r_sum()) */
	sql.len = 0;
	ch_w_text(&sql,
		  "INSERT INTO %s (start, type, labelset, value) SELECT start, type, labelset, "
		  "if(sum(toFloat64(value)) >= %.17g, toUInt64(%" PRId64 "), sum(value)) "
		  "FROM %s FINAL WHERE start >= %" PRId64 " AND start < %" PRId64,
		  ch_totals_table(tier), CH_SUM_SATURATED, INT64_MAX, ch_tier_table(tier), from,
		  to);
	ch_w_chunk(&sql, tier, from, to);
	ch_w_text(&sql, " GROUP BY start, type, labelset");
	err = ch_run_sql(s, "rollup totals", &sql, NULL);
out:
	free(sql.p);
	return err;
}

/* " AND type = 'T' AND labelset IN (...)": q's selection. */
void ch_w_selection(struct ch_wbuf *w, const struct store_query *q, bool typed)
{
	size_t i;

	if (typed) {
		ch_w_text(w, " AND type = ");
		ch_w_quoted(w, q->type ? q->type : STORE_TYPE_CPU);
	}
	if (!q->nlabels)
		return;
	ch_w_text(w, " AND labelset IN (SELECT id FROM labelsets WHERE 1");
	for (i = 0; i < q->nlabels; i++) {
		ch_w_text(w, " AND has(lkeys, ");
		ch_w_quoted(w, q->keys[i]);
		ch_w_text(w, ") AND lvalues[indexOf(lkeys, ");
		ch_w_quoted(w, q->keys[i]);
		ch_w_text(w, ")] = ");
		ch_w_quoted(w, q->values[i]);
	}
	ch_w_text(w, ")");
}

/* Ranges of one read's plain or FINAL half at most (an OR of them); a read that
 * would split into more takes FINAL everywhere. */
#define CH_SPLIT_MAX_RANGES 256

/* The first entry of parts at or after (tier, hour), or the end. */
static struct ch_part *parts_from(const struct ch_parts *p, int tier, int64_t hour)
{
	size_t lo = 0, hi = p->n;

	if (!p->n)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ch_part *e = &p->v[mid];

		if (e->tier < tier || (e->tier == tier && e->hour < hour))
			lo = mid + 1;
		else
			hi = mid;
	}
	return p->v + lo;
}

/* Splits [from, to) of tier into the runs of partitions parts lets be read
 * plainly (all of it when parts->plain) and the rest; writes (when w) the half
 * asked for as OR-joined ranges, each with its chunk condition, marking the
 * plain partitions written used. Returns the ranges of that half, counted on
 * from k. */
static size_t w_split(struct ch_wbuf *w, struct ch_parts *p, int tier, int64_t from, int64_t to,
		      bool plain, size_t k)
{
	const int64_t len = CH_PARTITION_SECONDS, last = (to - 1) / len;
	struct ch_part *e = parts_from(p, tier, from / len), *x;
	const struct ch_part *end = p->n ? p->v + p->n : NULL;
	int64_t a = from, b;
	bool here;

	while (a < to) {
		bool next = e < end && e->tier == tier && e->hour <= last;

		x = NULL;
		if (p->plain) {
			here = true;
			b = to;
		} else if (next && e->hour == a / len) {
			/* a run of plain partitions: e and the ones right after it */
			for (x = e; x + 1 < end && x[1].tier == tier && x[1].hour == x->hour + 1 &&
				    x[1].hour <= last;
			     x++)
				;
			here = true;
			b = x->hour >= last ? to : ch_partition_last(x->hour, len) + 1;
		} else {
			here = false;
			b = next ? ch_partition_first(e->hour, len) : to;
		}
		if (here == plain) {
			if (w) {
				ch_w_text(w, "%s(%s >= %" PRId64 " AND %s < %" PRId64,
					  k ? " OR " : "", ch_tier_column(tier), a,
					  ch_tier_column(tier), b);
				ch_w_chunk(w, tier, a, b);
				ch_w_text(w, ")");
				for (; x && e <= x; e++)
					e->used = true;
			}
			k++;
		}
		if (x)
			e = x + 1;
		a = b;
	}
	return k;
}

void ch_w_spans(struct ch_wbuf *w, const struct store_query *q, bool typed, int tier,
		const int64_t *from, const int64_t *to, size_t n, struct ch_parts *parts)
{
	struct ch_parts none = { 0 }, *p = parts ? parts : &none;
	size_t i, k, ranges[2] = { 0, 0 }, halves = 0;
	int half;

	/* the ranges of each half: plain, FINAL */
	for (i = 0; i < n; i++)
		for (half = 0; half < 2; half++)
			ranges[half] = w_split(NULL, p, tier, from[i], to[i], !half, ranges[half]);
	if (ranges[0] > CH_SPLIT_MAX_RANGES) {
		p = &none; /* one FINAL range a span */
		ranges[0] = 0;
		ranges[1] = n;
	}
	/* The plain half, then the FINAL one: FINAL's merge on read collapses rows
	 * equal by the ORDER BY key, a batch's (agent, seq) or a rollup's src
	 * included, keeping the largest value (002_tiers.sql); a partition of one
	 * part holds no such rows (clickhouse/parts.c). */
	for (half = 0; half < 2; half++) {
		if (!ranges[half])
			continue;
		ch_w_text(w, "%sSELECT %s AS t, labelset, stack, value AS v FROM %s%s WHERE (",
			  halves++ ? " UNION ALL " : "", ch_tier_column(tier), ch_tier_table(tier),
			  half ? " FINAL" : "");
		for (i = 0, k = 0; i < n; i++)
			k = w_split(w, p, tier, from[i], to[i], !half, k);
		ch_w_text(w, ")");
		ch_w_selection(w, q, typed);
	}
}

/* Appends "(col >= from AND col < to) OR ..." of n intervals. */
static void w_ranges(struct ch_wbuf *w, const char *col, const int64_t *from, const int64_t *to,
		     size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		ch_w_text(w, "%s(%s >= %" PRId64 " AND %s < %" PRId64 ")", i ? " OR " : "", col,
			  from[i], col, to[i]);
}

void ch_w_totals(struct ch_wbuf *w, const struct store_query *q, int tier, const int64_t *from,
		 const int64_t *to, size_t n)
{
	ch_w_text(w, "SELECT start AS t, value AS v FROM %s FINAL WHERE (", ch_totals_table(tier));
	w_ranges(w, "start", from, to, n);
	ch_w_text(w, ")");
	ch_w_selection(w, q, true);
}

void ch_w_totals_check(struct ch_wbuf *w, int tier, const int64_t *from, const int64_t *to,
		       size_t n)
{
	ch_w_text(w, "(SELECT uniqExact(start, type, labelset) FROM %s WHERE ",
		  ch_totals_table(tier));
	w_ranges(w, "start", from, to, n);
	ch_w_text(w,
		  "), (SELECT sum(b) FROM (SELECT max(blocks) AS b FROM counts WHERE tier = %d "
		  "AND (",
		  tier);
	w_ranges(w, "bucket", from, to, n);
	ch_w_text(w, ") GROUP BY bucket))");
}

void ch_tiers_to_plan(const struct ch_tiers *t, struct store_tiers *st)
{
	int i;

	for (i = 0; i < STORE_NTIERS; i++) {
		st->built_before[i] = t->built[i];
		st->kept_from[i] = t->kept[i];
	}
}

int ch_tiers_plan_input(struct ch_store *s, struct store_tiers *st)
{
	struct ch_tiers t;
	int err = ch_tiers_read(s, &t);

	if (!err)
		ch_tiers_to_plan(&t, st);
	return err;
}

int ch_tiers_mark_totals(struct ch_store *s)
{
	struct ch_tiers t;
	int err = ch_tiers_read(s, &t), tier;

	for (tier = TIER_MINUTE; tier < STORE_NTIERS && !err; tier++)
		err = ch_tiers_raise(s, "totals", tier,
				     t.claim[tier] == INT64_MIN ? -STORE_MAX_ABS_WINDOW
								: t.claim[tier]);
	return err;
}

int ch_w_plan(struct ch_store *s, struct ch_wbuf *w, const struct store_query *q, bool typed,
	      struct ch_parts *parts)
{
	struct store_span sp[STORE_PLAN_MAX_SPANS];
	struct store_tiers st;
	size_t n, i;
	int err;

	bool gauge = typed && store_is_gauge(q);

	err = ch_tiers_plan_input(s, &st);
	if (err)
		return err;
	if (gauge)
		store_gauge_tiers(&st);
	n = store_plan(&st, q->from, q->to, sp);
	ch_w_text(w, "(");
	for (i = 0; i < n; i++) {
		ch_w_text(w, "%s", i ? " UNION ALL " : "");
		/* a gauge's rows say how many snapshots their start counts for */
		if (gauge)
			ch_w_text(w,
				  "SELECT t, labelset, stack, v, toUInt64(%" PRIu64 ") AS w FROM (",
				  store_gauge_snapshots(sp[i].tier));
		ch_w_spans(w, q, typed, sp[i].tier, &sp[i].from, &sp[i].to, 1, parts);
		if (gauge)
			ch_w_text(w, ")");
	}
	if (!n) /* nothing: a source with no rows, of the same columns */
		ch_w_text(w,
			  "SELECT toInt64(0) AS t, toUInt64(0) AS labelset, toUInt64(0) AS "
			  "stack, toUInt64(0) AS v%s FROM system.one WHERE 0",
			  gauge ? ", toUInt64(1) AS w" : "");
	ch_w_text(w, ")");
	return w->err;
}

int ch_w_plan_rows(struct ch_store *s, struct ch_wbuf *w, const struct store_query *q, bool typed)
{
	struct ch_parts plain = { .plain = true };

	return ch_w_plan(s, w, q, typed, &plain);
}

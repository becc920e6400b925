/* The ClickHouse store's reads (store/clickhouse/read.h): stacks, series, labels and windows of
 * a range and selection, summed in ClickHouse over the spans of the tiers' plan
 * (ch_w_plan(), clickhouse/tiers.c; each span a FINAL read, which collapses a batch's
 * copies, but of the partitions that hold one part, which have none: clickhouse/parts.c,
 * which reads again with FINAL when one changed meanwhile) and read back as
 * RowBinary; query_stacks has clickhouse/stacks.c add the sums' frames (the store's
 * cache's, then the others fetched); a timeline reads each tier only where its
 * buckets' plans do, then plans each of its buckets in C over per-tier sums, as
 * the SQLite store does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "store/clickhouse/read.h"
#include "store/block.h"
#include "store/clickhouse/handle.h"
#include "store/clickhouse/http.h"
#include "store/clickhouse/parts.h"
#include "store/clickhouse/rowbin.h"
#include "store/clickhouse/stacks.h"
#include "store/clickhouse/tables.h"
#include "store/clickhouse/tiers.h"
#include "store/gauge.h"
#include "store/plan.h"

/* ---- queries -------------------------------------------------------------- */

/* q's labels well formed. */
static int check_query(struct ch_store *s, const struct store_query *q)
{
	size_t i;

	if (q->nlabels && (!q->keys || !q->values))
		return -EINVAL;
	if (q->nlabels > BATCH_MAX_LABELS)
		return ch_fail(s, -EINVAL, "%zu labels in a query, at most %d", q->nlabels,
			       BATCH_MAX_LABELS);
	for (i = 0; i < q->nlabels; i++)
		if (!q->keys[i] || !q->values[i])
			return -EINVAL;
	return 0;
}

/* The stacks' sums over the plan (plan: its SQL), in the answer's order, into
 * *out (*n). */
static int stack_sums(struct ch_store *s, const char *plan, bool gauge, size_t max,
		      struct ch_stack_sum **out, size_t *n)
{
	struct ch_stack_sum *sums = NULL;
	struct ch_wbuf sql = { 0 };
	size_t cap = 0;
	struct ch_answer a;
	struct ch_rbuf r;
	int err;

	*n = 0;
	/* a memory budget (max): the server sends one row past it at most */
	if (gauge) /* each label set's mean of its snapshots (store/gauge.h), rounded
		    * per label set and stack as the SQLite store does */
		ch_w_text(&sql,
			  "SELECT stack, sum(a), sum(toFloat64(a)) FROM (SELECT x.stack AS stack, "
			  "intDiv(x.s + intDiv(y.n, 2), y.n) AS a FROM (SELECT labelset, stack, "
			  "sum(v) AS s FROM %s GROUP BY labelset, stack) AS x INNER JOIN (SELECT "
			  "labelset, sum(w) AS n FROM (SELECT DISTINCT labelset, t, w FROM %s) "
			  "GROUP BY labelset) AS y ON x.labelset = y.labelset) GROUP BY stack "
			  "HAVING sum(a) > 0 ",
			  plan, plan);
	else
		ch_w_text(&sql, "SELECT stack, sum(v), sum(toFloat64(v)) FROM %s GROUP BY stack ",
			  plan);
	if (max)
		ch_w_text(&sql, "LIMIT %zu ", max + 1);
	ch_w_text(&sql, "FORMAT RowBinary");
	if ((err = ch_run_sql(s, "query stacks", &sql, &a)))
		goto out;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		if (max && *n == max) {
			err = ch_fail(
				s, -ENOBUFS,
				"query stacks: more than %zu stacks (the query's memory budget)",
				max);
			goto out;
		}
		if (*n == BLOCK_MERGE_MAX_IDS) {
			err = ch_fail(s, -E2BIG, "query stacks: more than %u stacks",
				      BLOCK_MERGE_MAX_IDS);
			goto out;
		}
		if (*n == cap) {
			struct ch_stack_sum *p =
				realloc(sums, (cap = cap ? 2 * cap : 1024) * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				goto out;
			}
			sums = p;
		}
		sums[*n].id = ch_r_uint(&r, 8);
		sums[*n].count = ch_r_sum(&r);
		(*n)++;
	}
	if (r.bad)
		err = ch_fail(s, -EIO, "query stacks: malformed answer");
out:
	free(sql.p);
	if (err) {
		free(sums);
		sums = NULL;
		*n = 0;
	}
	*out = sums;
	return err;
}

/* A flame graph's sums (ch_parts_run()): its plan, kept for the frames' query. */
struct sums_read {
	struct ch_store *s;
	const struct store_query *q;
	struct ch_wbuf plan;
	struct ch_stack_sum *sums;
	size_t n;
};

static int read_sums(void *ctx, struct ch_parts *parts)
{
	struct sums_read *x = ctx;
	int err;

	x->plan.len = 0;
	free(x->sums);
	x->sums = NULL;
	x->n = 0;
	err = ch_w_plan(x->s, &x->plan, x->q, true, parts);
	return err
		       ?: stack_sums(x->s, x->plan.p, store_is_gauge(x->q), x->q->max_stacks,
				     &x->sums, &x->n);
}

int ch_query_stacks(struct store *base, const struct store_query *q, store_stack_fn cb, void *ctx)
{
	struct ch_store *s = ch_of(base);
	struct sums_read x = { .s = s, .q = q };
	int err;

	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	/* one plan for both: the stacks summed, then (clickhouse/stacks.c) the frames of
	 * those the cache lacks */
	err = ch_parts_run(s, read_sums, &x);
	if (!err && x.n)
		err = ch_stacks_emit(s, x.sums, x.n, x.plan.p, cb, ctx);
	if (err == -ENOMEM)
		ch_fail(s, err, "query stacks: out of memory");
	free(x.sums);
	free(x.plan.p);
	return err;
}

/* A tier's rows of a series: starts and the running sum before each. */
struct tier_rows {
	int64_t *t;
	unsigned __int128 *pre; /* pre[i]: sum of rows before i; n + 1 entries */
	size_t n, cap;
};

/* Index of the first row starting at or after v. */
static size_t lower_bound(const struct tier_rows *tr, int64_t v)
{
	size_t lo = 0, hi = tr->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tr->t[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* A timeline plans at most this many buckets up front to learn which rows of each
 * tier its buckets read; a longer one reads each tier wherever a plan may use it. */
#define CH_SERIES_PLAN_MAX_BUCKETS 4096
/* Intervals of one tier a timeline's query names at most (an OR of ranges); more
 * are read as the one interval that covers them. */
#define CH_SERIES_MAX_INTERVALS 256

/* Intervals of one tier's starts, [from, to). */
struct ivals {
	struct store_span *v; /* only from and to are used */
	size_t n, cap;
};

static int span_cmp(const void *a, const void *b)
{
	int64_t x = ((const struct store_span *)a)->from, y = ((const struct store_span *)b)->from;

	return x < y ? -1 : x > y;
}

static int ivals_add(struct ivals *x, int64_t from, int64_t to)
{
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 64;
		struct store_span *p = realloc(x->v, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		x->v = p;
		x->cap = cap;
	}
	x->v[x->n++] = (struct store_span){ .from = from, .to = to };
	return 0;
}

/* Sorted, touching intervals joined; more than CH_SERIES_MAX_INTERVALS become one. */
static void ivals_merge(struct ivals *x)
{
	size_t i, n = 0;

	if (!x->n)
		return;
	qsort(x->v, x->n, sizeof(*x->v), span_cmp);
	for (i = 1; i < x->n; i++) {
		if (x->v[i].from <= x->v[n].to) {
			if (x->v[i].to > x->v[n].to)
				x->v[n].to = x->v[i].to;
		} else
			x->v[++n] = x->v[i];
	}
	x->n = n + 1;
	if (x->n > CH_SERIES_MAX_INTERVALS) {
		x->v[0].to = x->v[x->n - 1].to;
		x->n = 1;
	}
}

/* What each tier's rows a timeline of q at step reads: the spans of every bucket's
 * plan, merged (x[tier]); or, with more than CH_SERIES_PLAN_MAX_BUCKETS buckets,
 * each tier's part of [from, to) where a plan may use it. 0 or -ENOMEM. */
static int series_reads(const struct store_tiers *st, const struct store_query *q, int64_t step,
			struct ivals x[STORE_NTIERS])
{
	struct store_span sp[STORE_PLAN_MAX_SPANS];
	__int128 nb = ((__int128)q->to - q->from + step - 1) / step, k;
	size_t n, i;
	int tier, err = 0;

	if (nb > CH_SERIES_PLAN_MAX_BUCKETS) {
		for (tier = 0; tier < STORE_NTIERS && !err; tier++) {
			int64_t lo = q->from > st->kept_from[tier] ? q->from : st->kept_from[tier];
			int64_t hi =
				q->to < st->built_before[tier] ? q->to : st->built_before[tier];

			if (lo < hi)
				err = ivals_add(&x[tier], lo, hi);
		}
		return err;
	}
	for (k = 0; k < nb && !err; k++) {
		int64_t b = (int64_t)(q->from + k * step);
		int64_t e = (__int128)b + step >= q->to ? q->to : b + step;

		n = store_plan(st, b, e, sp);
		for (i = 0; i < n && !err; i++)
			err = ivals_add(&x[sp[i].tier], sp[i].from, sp[i].to);
	}
	for (tier = 0; tier < STORE_NTIERS; tier++)
		ivals_merge(&x[tier]);
	return err;
}

/* A timeline's sums per tier and start (ch_parts_run()). */
struct series_read {
	struct ch_store *s;
	const struct store_query *q;
	const struct ivals *reads; /* per tier */
	bool totals[STORE_NTIERS]; /* the tier's totals answer its reads */
	struct tier_rows tr[STORE_NTIERS];
	size_t nall; /* rows of every tier */
};

/* v's intervals as two arrays (at most CH_SERIES_MAX_INTERVALS). */
static void ivals_split(const struct ivals *v, int64_t *from, int64_t *to)
{
	size_t i;

	for (i = 0; i < v->n; i++) {
		from[i] = v->v[i].from;
		to[i] = v->v[i].to;
	}
}

/* Whether tier's reads all start at or above its totals_T (t): every bucket
 * there was claimed by a build that writes totals. */
static bool totals_cover(const struct ch_tiers *t, const struct ivals *v, int tier)
{
	size_t i;

	if (t->totals[tier] == INT64_MIN)
		return false;
	for (i = 0; i < v->n; i++)
		if (v->v[i].from < t->totals[tier])
			return false;
	return true;
}

/* Which rollup tiers' totals answer x's reads (one query for both): where all
 * the reads are above the tier's totals_T, and the totals there hold as many
 * rows as `counts` names label sets (a bucket built by a collector of version
 * 7 during an upgrade has neither), every bucket was totalled when it was last
 * built (008_totals.sql); else the tier's rows are read. */
static int totals_usable(struct series_read *x, const struct ch_tiers *t)
{
	int64_t from[CH_SERIES_MAX_INTERVALS], to[CH_SERIES_MAX_INTERVALS];
	struct ch_wbuf sql = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	bool any = false, ask[STORE_NTIERS] = { false };
	int err = 0, tier;

	ch_w_text(&sql, "SELECT ");
	for (tier = TIER_MINUTE; tier < STORE_NTIERS; tier++) {
		ask[tier] = x->reads[tier].n && totals_cover(t, &x->reads[tier], tier);
		if (!ask[tier])
			continue;
		ivals_split(&x->reads[tier], from, to);
		ch_w_text(&sql, "%s", any ? ", " : "");
		ch_w_totals_check(&sql, tier, from, to, x->reads[tier].n);
		any = true;
	}
	ch_w_text(&sql, " FORMAT RowBinary");
	if (!any || (err = ch_run_sql(x->s, "query series", &sql, &a)))
		goto out;
	r = ch_answer_reader(&a);
	for (tier = TIER_MINUTE; tier < STORE_NTIERS; tier++) {
		uint64_t have, want;

		if (!ask[tier])
			continue;
		have = ch_r_uint(&r, 8);
		want = ch_r_uint(&r, 8);
		x->totals[tier] = !r.bad && want && have == want;
	}
	if (r.bad)
		err = ch_fail(x->s, -EIO, "query series: malformed answer");
out:
	free(sql.p);
	return err;
}

static void series_rows_free(struct series_read *x)
{
	int tier;

	for (tier = 0; tier < STORE_NTIERS; tier++) {
		free(x->tr[tier].t);
		free(x->tr[tier].pre);
		memset(&x->tr[tier], 0, sizeof(x->tr[tier]));
	}
	x->nall = 0;
}

/* Appends row (start, c) of a tier: its start and the running sum after it. */
static int tier_rows_add(struct tier_rows *x, int64_t start, uint64_t c)
{
	if (x->n + 1 >= x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 256;
		int64_t *nt = realloc(x->t, cap * sizeof(*nt));
		unsigned __int128 *np;

		if (nt)
			x->t = nt;
		np = nt ? realloc(x->pre, cap * sizeof(*np)) : NULL;
		if (!np)
			return -ENOMEM;
		x->pre = np;
		x->cap = cap;
		if (!x->n)
			x->pre[0] = 0;
	}
	x->t[x->n] = start;
	x->pre[x->n + 1] = x->pre[x->n] + c;
	x->n++;
	return 0;
}

/* Each tier's sums per start over the rows its reads name (one query). */
static int read_series_rows(void *ctx, struct ch_parts *parts)
{
	struct series_read *x = ctx;
	struct ch_wbuf sql = { 0 }, outer = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	bool any = false;
	int err = 0, tier;

	series_rows_free(x);
	for (tier = 0; tier < STORE_NTIERS; tier++) {
		const struct ivals *v = &x->reads[tier];
		int64_t from[CH_SERIES_MAX_INTERVALS], to[CH_SERIES_MAX_INTERVALS];

		if (!v->n)
			continue;
		ivals_split(v, from, to);
		ch_w_text(&sql, "%sSELECT toUInt8(%d) AS tier, t, v FROM (",
			  any ? " UNION ALL " : "", tier);
		if (x->totals[tier])
			ch_w_totals(&sql, x->q, tier, from, to, v->n);
		else
			ch_w_spans(&sql, x->q, true, tier, from, to, v->n, parts);
		ch_w_text(&sql, ")");
		any = true;
	}
	if (!any)
		goto out;
	ch_w_text(&outer,
		  "SELECT tier, t, sum(v), sum(toFloat64(v)) FROM (%s) GROUP BY tier, t "
		  "ORDER BY tier, t FORMAT RowBinary",
		  sql.p ? sql.p : "");
	if ((err = sql.err ?: ch_run_sql(x->s, "query series", &outer, &a)))
		goto out;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad && !err) {
		int k8 = (int)ch_r_uint(&r, 1);
		int64_t start = (int64_t)ch_r_uint(&r, 8);
		uint64_t c = ch_r_sum(&r);

		if (r.bad || k8 >= STORE_NTIERS) {
			r.bad = true;
			break;
		}
		err = tier_rows_add(&x->tr[k8], start, c);
		x->nall++;
	}
	if (!err && r.bad)
		err = ch_fail(x->s, -EIO, "query series: malformed answer");
out:
	free(sql.p);
	free(outer.p);
	return err;
}

/* The series: each tier's sums per start over the rows the buckets' plans read
 * (read_series_rows()), then each step-long bucket that holds a start planned on
 * its own (store_plan(), as the SQLite store does) and summed from those rows,
 * so a rollup counts for a bucket only when it lies inside it. */
int ch_query_series(struct store *base, const struct store_query *q, int64_t step,
		    store_series_fn cb, void *ctx)
{
	struct ch_store *s = ch_of(base);
	struct ivals reads[STORE_NTIERS] = { { 0 } };
	struct series_read x = { .s = s, .q = q, .reads = reads };
	const struct tier_rows *tr = x.tr;
	struct store_span sp[STORE_PLAN_MAX_SPANS];
	struct store_tiers st;
	struct ch_tiers t;
	int64_t *all = NULL, last = 0;
	size_t nall, i, k;
	bool have = false;
	int err, tier;

	if (step <= 0)
		return -EINVAL;
	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	err = ch_tiers_read(s, &t);
	if (err)
		return err;
	ch_tiers_to_plan(&t, &st);
	err = series_reads(&st, q, step, reads);
	err = err ?: totals_usable(&x, &t);
	err = err ?: ch_parts_run(s, read_series_rows, &x);
	if (err || !x.nall)
		goto out;
	/* every start, sorted: the buckets that may have samples */
	all = malloc(x.nall * sizeof(*all));
	if (!all) {
		err = -ENOMEM;
		goto out;
	}
	for (nall = 0, tier = 0; tier < STORE_NTIERS; tier++)
		for (i = 0; i < tr[tier].n; i++)
			all[nall++] = tr[tier].t[i];
	qsort(all, nall, sizeof(*all), i64_cmp);
	for (i = 0; i < nall && !err; i++) {
		/* bucket ends in 128 bits: from + step may pass INT64_MAX */
		int64_t b =
			(int64_t)((__int128)q->from + ((__int128)all[i] - q->from) / step * step);
		int64_t e = (__int128)b + step >= q->to ? q->to : b + step;
		unsigned __int128 sum = 0;
		size_t n;

		if (have && b == last)
			continue;
		have = true;
		last = b;
		n = store_plan(&st, b, e, sp);
		for (k = 0; k < n; k++) {
			const struct tier_rows *r = &tr[sp[k].tier];

			if (r->n)
				sum += r->pre[lower_bound(r, sp[k].to)] -
				       r->pre[lower_bound(r, sp[k].from)];
		}
		if (sum)
			err = cb(ctx, b, sum > INT64_MAX ? INT64_MAX : (uint64_t)sum);
	}
out:
	if (err == -ENOMEM)
		ch_fail(s, err, "query series: out of memory");
	series_rows_free(&x);
	for (tier = 0; tier < STORE_NTIERS; tier++)
		free(reads[tier].v);
	free(all);
	return err;
}

/* Runs a one-String-column query and calls cb with each value, NUL-terminated. */
static int text_rows(struct ch_store *s, const char *what, const char *sql, store_text_fn cb,
		     void *ctx)
{
	struct ch_answer a;
	struct ch_rbuf r;
	char *copy = NULL;
	int err;

	err = ch_run(s, what, sql, NULL, 0, &a);
	if (err)
		return err;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !err) {
		size_t n;
		const char *t = ch_r_str(&r, &n);
		char *p;

		if (r.bad)
			break;
		p = realloc(copy, n + 1);
		if (!p) {
			err = ch_fail(s, -ENOMEM, "%s: out of memory", what);
			break;
		}
		copy = p;
		memcpy(copy, t, n);
		copy[n] = '\0';
		err = cb(ctx, copy);
	}
	if (!err && r.bad)
		err = ch_fail(s, -EIO, "%s: malformed answer", what);
	free(copy);
	return err;
}

int ch_labels(struct store *base, const struct store_query *q, store_text_fn cb, void *ctx)
{
	struct ch_store *s = ch_of(base);
	struct ch_wbuf sql = { 0 };
	int err;

	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	ch_w_text(&sql, "SELECT DISTINCT arrayJoin(lkeys) AS k FROM labelsets WHERE id IN "
			"(SELECT labelset FROM ");
	err = ch_w_plan_rows(s, &sql, q, true);
	ch_w_text(&sql, ") AND k != '" STORE_TYPE_LABEL "' ORDER BY k FORMAT RowBinary");
	err = err ?: sql.err ?: text_rows(s, "labels", sql.p, cb, ctx);
	free(sql.p);
	return err;
}

int ch_label_values(struct store *base, const char *key, const struct store_query *q,
		    store_text_fn cb, void *ctx)
{
	struct ch_store *s = ch_of(base);
	struct ch_wbuf sql = { 0 };
	int err;

	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	ch_w_text(&sql, "SELECT DISTINCT lvalues[indexOf(lkeys, ");
	ch_w_quoted(&sql, key);
	ch_w_text(&sql, ")] AS v FROM labelsets WHERE has(lkeys, ");
	ch_w_quoted(&sql, key);
	ch_w_text(&sql, ") AND id IN (SELECT labelset FROM ");
	err = ch_w_plan_rows(s, &sql, q, true);
	ch_w_text(&sql, ") ORDER BY v FORMAT RowBinary");
	err = err ?: sql.err ?: text_rows(s, "label values", sql.p, cb, ctx);
	free(sql.p);
	return err;
}

int ch_label_key_used(struct store *base, const char *key, int64_t from, int64_t to)
{
	struct ch_store *s = ch_of(base);
	struct store_query q = { .from = from, .to = to };
	struct ch_wbuf sql = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	int err;

	if (from >= to)
		return 0;
	ch_w_text(&sql, "SELECT count() FROM (SELECT id FROM labelsets WHERE has(lkeys, ");
	ch_w_quoted(&sql, key);
	ch_w_text(&sql, ") AND id IN (SELECT labelset FROM ");
	err = ch_w_plan_rows(s, &sql, &q, false);
	ch_w_text(&sql, ") LIMIT 1) FORMAT RowBinary");
	if (err || (err = ch_run_sql(s, "label key used", &sql, &a)))
		goto out;
	r = ch_answer_reader(&a);
	err = ch_r_uint(&r, 8) ? 1 : 0;
	if (r.bad)
		err = ch_fail(s, -EIO, "label key used: malformed answer");
out:
	free(sql.p);
	return err;
}

/* Appends " OR "-joined reads of tier's starts in [max(from, lo), min(to, hi)) with
 * q's selection (as "SELECT t"), when that is not empty; *any tells whether one
 * was written before. */
static void windows_tier(struct ch_wbuf *w, const struct store_query *q, int tier, int64_t lo,
			 int64_t hi, bool *any)
{
	const char *col = ch_tier_column(tier);
	int64_t from = q->from > lo ? q->from : lo, to = q->to < hi ? q->to : hi;

	if (from >= to)
		return;
	ch_w_text(w, "%sSELECT %s AS t FROM %s WHERE %s >= %" PRId64 " AND %s < %" PRId64,
		  *any ? " UNION ALL " : "", col, ch_tier_table(tier), col, from, col, to);
	ch_w_chunk(w, tier, from, to);
	ch_w_selection(w, q, true);
	*any = true;
}

/* The windows as SQLite's windows table has them (store/sqlite/windows.c): a batch's own
 * window where raw windows are kept (at or after kept_0), its minute bucket where
 * only minutes are (60 s long), its hour where only hours are, none below kept_2;
 * `ingested` keeps a row per batch for as long as the hour tier (clickhouse/maint.c), and
 * each row counts at the start it has there. With a selection or another type,
 * the starts where a selected label set has rows in the tier kept there. */
int ch_windows(struct store *base, const struct store_query *q, struct store_windows *out)
{
	struct ch_store *s = ch_of(base);
	const char *type = q->type ? q->type : STORE_TYPE_CPU;
	struct ch_wbuf where = { 0 }, sql = { 0 }, rows = { 0 };
	struct ch_tiers t;
	struct ch_answer a;
	struct ch_rbuf r;
	int64_t k[STORE_NTIERS], hi;
	int err, i;

	memset(out, 0, sizeof(*out));
	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	err = ch_tiers_read(s, &t);
	if (err)
		return err;
	/* kept_T, never above kept_T-1 (no tier is kept from above a finer one) */
	for (i = STORE_NTIERS - 1; i >= 0; i--) {
		k[i] = t.kept[i] == INT64_MIN ? -STORE_MAX_ABS_WINDOW - 1 : t.kept[i];
		if (i < STORE_NTIERS - 1 && k[i] < k[i + 1])
			k[i] = k[i + 1];
	}
	/* each CPU batch's start (b) and length (secs) as the tier kept there has them;
	 * b <= window_start < b + 3600 */
	hi = q->to > STORE_MAX_ABS_WINDOW ? STORE_MAX_ABS_WINDOW + STORE_HOUR_SECONDS
					  : q->to + STORE_HOUR_SECONDS;
	ch_w_text(&rows,
		  "SELECT multiIf(window_start >= %" PRId64
		  ", window_start, window_start >= %" PRId64
		  ", window_start - ((window_start %% 60) + 60) %% 60, window_start - "
		  "((window_start %% 3600) + 3600) %% 3600) AS b, multiIf(window_start >= %" PRId64
		  ", window_seconds, window_start >= %" PRId64 ", toUInt32(60), toUInt32(3600)) AS "
		  "secs, period_ns, agent, seq FROM ingested WHERE type = '" STORE_TYPE_CPU
		  "' AND window_start >= %" PRId64 " AND window_start >= %" PRId64
		  " AND window_start < %" PRId64,
		  k[0], k[1], k[0], k[1], k[2], q->from, hi);
	ch_w_text(&where, "b >= %" PRId64 " AND b < %" PRId64, q->from, q->to);
	if (q->nlabels || strcmp(type, STORE_TYPE_CPU)) {
		bool any = false;

		ch_w_text(&where, " AND b IN (SELECT DISTINCT t FROM (");
		windows_tier(&where, q, TIER_RAW, k[0], INT64_MAX, &any);
		windows_tier(&where, q, TIER_MINUTE, k[1], k[0], &any);
		windows_tier(&where, q, TIER_HOUR, k[2], k[1], &any);
		if (!any)
			goto out; /* every window in range is gone */
		ch_w_text(&where, "))");
	}
	if ((err = where.err ?: rows.err))
		goto out;
	ch_w_text(&sql,
		  "SELECT uniqExact(b), min(b), max(b + secs), min(secs), max(secs) "
		  "FROM (%s) WHERE %s FORMAT RowBinary",
		  rows.p, where.p);
	if ((err = ch_run_sql(s, "windows", &sql, &a)))
		goto out;
	r = ch_answer_reader(&a);
	out->nwindows = ch_r_uint(&r, 8);
	out->first_start = (int64_t)ch_r_uint(&r, 8);
	out->last_end = (int64_t)ch_r_uint(&r, 8);
	out->min_seconds = (uint32_t)ch_r_uint(&r, 4);
	out->max_seconds = (uint32_t)ch_r_uint(&r, 4);
	if (r.bad) {
		err = ch_fail(s, -EIO, "windows: malformed answer");
		goto out;
	}
	if (!out->nwindows) {
		memset(out, 0, sizeof(*out));
		goto out;
	}
	sql.len = 0;
	ch_w_text(&sql,
		  "SELECT period_ns, uniqExact(agent, seq) AS n FROM (%s) WHERE %s "
		  "GROUP BY period_ns ORDER BY n DESC, period_ns FORMAT RowBinary",
		  rows.p, where.p);
	if ((err = ch_run_sql(s, "windows", &sql, &a)))
		goto out;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		uint64_t period = ch_r_uint(&r, 8), n = ch_r_uint(&r, 8);

		if (r.bad)
			break;
		if (out->nperiods == STORE_WINDOWS_MAX_PERIODS) {
			out->more_periods++;
			continue;
		}
		out->periods[out->nperiods] = period;
		out->period_batches[out->nperiods++] = n;
	}
	if (r.bad)
		err = ch_fail(s, -EIO, "windows: malformed answer");
out:
	free(where.p);
	free(rows.p);
	free(sql.p);
	return err;
}

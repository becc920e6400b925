/* The ClickHouse store's reads (ch_int.h): stacks, series, labels and windows of
 * a range and selection, summed in ClickHouse and read back as RowBinary;
 * query_stacks fetches the answer's stacks' frames in one more query and merges
 * the two in C.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/batch.h"
#include "common/frame.h"
#include "store/block.h"
#include "store/ch_int.h"

/* ---- queries -------------------------------------------------------------- */

/* "type = T AND window_start >= F AND window_start < T [AND labelset IN (...)]":
 * the samples of q, appended to w. */
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

static void w_filter(struct ch_wbuf *w, const struct store_query *q, bool typed)
{
	size_t i;

	ch_w_text(w, "window_start >= %" PRId64 " AND window_start < %" PRId64, q->from, q->to);
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

struct stack_sum {
	uint64_t id, count;
};

static int sum_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct stack_sum *)a)->id, y = ((const struct stack_sum *)b)->id;

	return x < y ? -1 : x > y;
}

int ch_query_stacks(struct store *base, const struct store_query *q, store_stack_fn cb, void *ctx)
{
	struct ch_store *s = ch_of(base);
	struct frame *frames = NULL;
	struct stack_sum *sums = NULL;
	struct ch_wbuf sql = { 0 };
	size_t n = 0, cap = 0;
	struct ch_answer a;
	struct ch_rbuf r;
	int err;

	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	ch_w_text(&sql, "SELECT stack, sum(value), sum(toFloat64(value)) FROM samples WHERE ");
	w_filter(&sql, q, true);
	ch_w_text(&sql, " GROUP BY stack FORMAT RowBinary");
	if ((err = sql.err) || (err = ch_run(s, "query stacks", sql.p, NULL, 0, &a)))
		goto out;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad) {
		if (n == BLOCK_MERGE_MAX_IDS) {
			err = ch_fail(s, -E2BIG, "query stacks: more than %u stacks",
				      BLOCK_MERGE_MAX_IDS);
			goto out;
		}
		if (n == cap) {
			struct stack_sum *p =
				realloc(sums, (cap = cap ? 2 * cap : 1024) * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				goto out;
			}
			sums = p;
		}
		sums[n].id = ch_r_uint(&r, 8);
		sums[n].count = ch_r_sum(&r);
		n++;
	}
	if (r.bad) {
		err = ch_fail(s, -EIO, "query stacks: malformed answer");
		goto out;
	}
	if (!n)
		goto out;
	qsort(sums, n, sizeof(*sums), sum_cmp);

	/* the frames of those stacks, in one query */
	sql.len = 0;
	ch_w_text(&sql, "SELECT id, kinds, names, files, lines FROM stacks WHERE id IN "
			"(SELECT DISTINCT stack FROM samples WHERE ");
	w_filter(&sql, q, true);
	ch_w_text(&sql, ") LIMIT 1 BY id FORMAT RowBinary");
	if ((err = sql.err) || (err = ch_run(s, "query stacks", sql.p, NULL, 0, &a)))
		goto out;
	frames = calloc(CH_MAX_FRAMES, sizeof(*frames));
	if (!frames) {
		err = -ENOMEM;
		goto out;
	}
	r = ch_answer_reader(&a);
	while (r.p < r.end && !r.bad && !err) {
		struct stack_sum key = { .id = ch_r_uint(&r, 8) }, *hit;
		uint64_t k, nf = ch_r_varint(&r);

		if (nf > CH_MAX_FRAMES || !nf) {
			err = ch_fail(s, -EIO, "stack %" PRIu64 ": %" PRIu64 " frames", key.id, nf);
			break;
		}
		for (k = 0; k < nf; k++)
			frames[k].kind = (uint32_t)ch_r_uint(&r, 1);
		if (ch_r_varint(&r) != nf)
			r.bad = true;
		for (k = 0; k < nf && !r.bad; k++)
			frames[k].name = ch_r_str(&r, &frames[k].name_len);
		if (ch_r_varint(&r) != nf)
			r.bad = true;
		for (k = 0; k < nf && !r.bad; k++)
			frames[k].file = ch_r_str(&r, &frames[k].file_len);
		if (ch_r_varint(&r) != nf)
			r.bad = true;
		for (k = 0; k < nf && !r.bad; k++)
			frames[k].line = (uint32_t)ch_r_uint(&r, 4);
		if (r.bad)
			break;
		hit = bsearch(&key, sums, n, sizeof(*sums), sum_cmp);
		if (hit && hit->count) {
			err = cb(ctx, frames, (size_t)nf, hit->count);
			hit->count = 0; /* once, whatever merges are pending */
		}
	}
	if (!err && r.bad)
		err = ch_fail(s, -EIO, "query stacks: malformed stacks answer");
out:
	if (err == -ENOMEM)
		ch_fail(s, err, "query stacks: out of memory");
	free(frames);
	free(sums);
	free(sql.p);
	return err;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

int ch_query_series(struct store *base, const struct store_query *q, int64_t step,
		    store_series_fn cb, void *ctx)
{
	struct ch_store *s = ch_of(base);
	struct ch_wbuf sql = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	int64_t bucket = 0;
	uint64_t sum = 0;
	bool have = false;
	int err;

	if (step <= 0)
		return -EINVAL;
	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	/* per window, bucketed here: from + k * step is computed in 128 bits */
	ch_w_text(&sql,
		  "SELECT window_start, sum(value), sum(toFloat64(value)) FROM samples WHERE ");
	w_filter(&sql, q, true);
	ch_w_text(&sql, " GROUP BY window_start ORDER BY window_start FORMAT RowBinary");
	if ((err = sql.err) || (err = ch_run(s, "query series", sql.p, NULL, 0, &a)))
		goto out;
	r = ch_answer_reader(&a);
	while (r.p < r.end && !err) {
		int64_t w = (int64_t)ch_r_uint(&r, 8);
		uint64_t c = ch_r_sum(&r);
		int64_t b;

		if (r.bad)
			break;
		b = (int64_t)((__int128)q->from + ((__int128)w - q->from) / step * step);
		if (have && b != bucket) {
			err = cb(ctx, bucket, sum);
			sum = 0;
		}
		bucket = b;
		have = true;
		sum = add_sat(sum, c);
	}
	if (!err && r.bad)
		err = ch_fail(s, -EIO, "query series: malformed answer");
	if (!err && have && sum)
		err = cb(ctx, bucket, sum);
out:
	free(sql.p);
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
			"(SELECT DISTINCT labelset FROM samples WHERE ");
	w_filter(&sql, q, true);
	ch_w_text(&sql, ") AND k != '" STORE_TYPE_LABEL "' ORDER BY k FORMAT RowBinary");
	err = sql.err ?: text_rows(s, "labels", sql.p, cb, ctx);
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
	ch_w_text(&sql, ") AND id IN (SELECT DISTINCT labelset FROM samples WHERE ");
	w_filter(&sql, q, true);
	ch_w_text(&sql, ") ORDER BY v FORMAT RowBinary");
	err = sql.err ?: text_rows(s, "label values", sql.p, cb, ctx);
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
	ch_w_text(&sql, ") AND id IN (SELECT DISTINCT labelset FROM samples WHERE ");
	w_filter(&sql, &q, false);
	ch_w_text(&sql, ") LIMIT 1) FORMAT RowBinary");
	if ((err = sql.err) || (err = ch_run(s, "label key used", sql.p, NULL, 0, &a)))
		goto out;
	r = ch_answer_reader(&a);
	err = ch_r_uint(&r, 8) ? 1 : 0;
	if (r.bad)
		err = ch_fail(s, -EIO, "label key used: malformed answer");
out:
	free(sql.p);
	return err;
}

int ch_windows(struct store *base, const struct store_query *q, struct store_windows *out)
{
	struct ch_store *s = ch_of(base);
	const char *type = q->type ? q->type : STORE_TYPE_CPU;
	struct ch_wbuf where = { 0 }, sql = { 0 };
	struct ch_answer a;
	struct ch_rbuf r;
	int err;

	memset(out, 0, sizeof(*out));
	err = check_query(s, q);
	if (err || q->from >= q->to)
		return err;
	/* the CPU batches' windows; with a selection, where a selected label set has samples */
	ch_w_text(&where,
		  "type = '" STORE_TYPE_CPU "' AND window_start >= %" PRId64
		  " AND window_start < %" PRId64,
		  q->from, q->to);
	if (q->nlabels || strcmp(type, STORE_TYPE_CPU)) {
		ch_w_text(&where,
			  " AND window_start IN (SELECT DISTINCT window_start FROM samples WHERE ");
		w_filter(&where, q, true);
		ch_w_text(&where, ")");
	}
	if ((err = where.err))
		goto out;
	ch_w_text(&sql,
		  "SELECT uniqExact(window_start), min(window_start), "
		  "max(window_start + window_seconds), min(window_seconds), max(window_seconds) "
		  "FROM ingested WHERE %s FORMAT RowBinary",
		  where.p);
	if ((err = sql.err) || (err = ch_run(s, "windows", sql.p, NULL, 0, &a)))
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
		  "SELECT period_ns, uniqExact(agent, seq) AS n FROM ingested WHERE %s "
		  "GROUP BY period_ns ORDER BY n DESC, period_ns FORMAT RowBinary",
		  where.p);
	if ((err = sql.err) || (err = ch_run(s, "windows", sql.p, NULL, 0, &a)))
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
	free(sql.p);
	return err;
}

/* Query parsing, execution and rendering; see query.h. */
#include "query/query.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/reason.h"
#include "query/flame.h"
#include "query/query_int.h"
#include "query/render_folded.h"
#include "query/render_html.h"
#include "query/render_json.h"
#include "query/render_pprof.h"
#include "query/render_speedscope.h"
#include "query/render_svg.h"
#include "store/store.h"

#define PERIOD_NS 10101010 /* 99 Hz: the store does not keep the period yet */

static struct store_query store_query(int64_t from, int64_t to, const struct query_where *w)
{
	return (struct store_query){
		.from = from, .to = to, .keys = w->keys, .values = w->values, .nlabels = w->n
	};
}

struct side {
	struct flame *f;
	unsigned side;
};

static int add_stack(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct side *s = ctx;

	return flame__add_frames(s->f, frames, nframes, count, s->side);
}

/* Loads the query's samples into a tree (both sides for a diff). */
static int load_flame(struct store *st, const struct query *q, struct flame **out)
{
	struct store_query sq;
	struct side s;
	/* pprof always keeps lines: its readers aggregate by function themselves */
	bool lines = q->lines || strcmp(q->format, "pprof") == 0;
	int err = flame__new_granular(&s.f, lines ? FLAME_BY_LINE : FLAME_BY_FUNCTION);

	if (err)
		return err;
	if (q->kind == QUERY_DIFF) {
		s.side = 0;
		sq = store_query(q->before_from, q->before_to, &q->before_where);
		err = store__query_stacks(st, &sq, add_stack, &s);
		s.side = 1;
		sq = store_query(q->after_from, q->after_to, &q->after_where);
		err = err ?: store__query_stacks(st, &sq, add_stack, &s);
	} else {
		s.side = 0;
		sq = store_query(q->from, q->to, &q->where);
		err = store__query_stacks(st, &sq, add_stack, &s);
	}
	if (err) {
		flame__free(s.f);
		return err;
	}
	flame__finish(s.f);
	*out = s.f;
	return 0;
}

/* ---- output formats --------------------------------------------------------- */

/* What a renderer gets, read from the store beforehand (query_load): one tree for
 * flamegraph, diff and top, the points with samples for series, the names for
 * labels. Rendering touches no store. */
struct series_point {
	int64_t bucket;
	uint64_t count;
};

struct query_answer {
	const struct query *q;
	struct flame *tree;	     /* flamegraph, diff, top */
	struct series_point *points; /* series: buckets with samples, in time order */
	size_t npoints, points_cap;
	char *names; /* labels: NUL-terminated names, one after another */
	size_t names_len, names_cap, nnames;
	size_t max_bytes; /* cap on names_len; 0: none */
};

static const char *title(const struct query *q)
{
	return q->kind == QUERY_DIFF ? "smolder diff" : "smolder";
}

static int out_tree_json(const struct query_answer *a, FILE *out)
{
	return render_json_tree(a->tree, NULL, out);
}

static int out_folded(const struct query_answer *a, FILE *out)
{
	return render_folded(a->tree, a->q->kind == QUERY_DIFF, out);
}

static int out_svg(const struct query_answer *a, FILE *out)
{
	struct render_svg_options o = { .title = title(a->q), .diff = a->q->kind == QUERY_DIFF };

	return render_svg(a->tree, &o, out);
}

static int out_html(const struct query_answer *a, FILE *out)
{
	struct render_html_options o = { .title = title(a->q), .diff = a->q->kind == QUERY_DIFF };

	return render_html(a->tree, &o, out);
}

static int out_pprof(const struct query_answer *a, FILE *out)
{
	const struct query *q = a->q;
	void *buf = NULL;
	size_t len = 0;
	int err;

	err = render_pprof(a->tree, PERIOD_NS, render_pprof_seconds_to_ns(q->from),
			   render_pprof_duration_ns(q->from, q->to), &buf, &len);
	if (!err && fwrite(buf, 1, len, out) != len)
		err = -EIO;
	free(buf);
	return err;
}

static int out_speedscope(const struct query_answer *a, FILE *out)
{
	return render_speedscope(a->tree, "smolder", out);
}

/* Total descending, then self, then name: flame__top's order with total first. */
static int by_total(const void *pa, const void *pb)
{
	const struct flame_function *a = pa, *b = pb;

	if (a->total != b->total)
		return a->total < b->total ? 1 : -1;
	if (a->self != b->self)
		return a->self < b->self ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* Functions of side 0 with self and total, sorted as asked, at most q->limit. */
static int top_functions(const struct query_answer *a, struct flame_function **fns, size_t *n)
{
	int err = flame__top(a->tree, 0, fns, n);

	if (!err && a->q->sort == QUERY_SORT_TOTAL)
		qsort(*fns, *n, sizeof(**fns), by_total);
	if (!err && *n > a->q->limit)
		*n = a->q->limit;
	return err;
}

static int out_top_table(const struct query_answer *a, FILE *out)
{
	uint64_t total = flame__total(a->tree, 0);
	struct flame_function *fns = NULL;
	size_t n = 0, i;
	int err = top_functions(a, &fns, &n);

	if (!err)
		fprintf(out, "%8s %7s %8s %7s  %s\n", "SELF", "SELF%", "TOTAL", "TOTAL%",
			"FUNCTION");
	for (i = 0; !err && i < n; i++)
		fprintf(out, "%8llu %6.2f%% %8llu %6.2f%%  %s\n", (unsigned long long)fns[i].self,
			total ? 100.0 * (double)fns[i].self / (double)total : 0.0,
			(unsigned long long)fns[i].total,
			total ? 100.0 * (double)fns[i].total / (double)total : 0.0, fns[i].name);
	free(fns);
	return err;
}

static int out_top_json(const struct query_answer *a, FILE *out)
{
	struct flame_function *fns = NULL;
	size_t n = 0;
	int err = top_functions(a, &fns, &n);

	err = err ?: render_json_top(fns, n, flame__total(a->tree, 0), NULL, out);
	free(fns);
	return err;
}

struct series_ctx {
	const struct query *q;
	FILE *out;
	int64_t next; /* the next bucket to write */
	bool json, first;
};

/* Keeps one point of the store's series; at most one per step of the range. */
static int keep_point(void *ctx, int64_t bucket, uint64_t count)
{
	struct query_answer *a = ctx;
	struct series_point *p;
	size_t cap;

	if (a->npoints > QUERY_MAX_POINTS)
		return -E2BIG; /* the store answers one per bucket: never */
	if (a->npoints == a->points_cap) {
		cap = a->points_cap ? a->points_cap * 2 : 256;
		p = realloc(a->points, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		a->points = p;
		a->points_cap = cap;
	}
	a->points[a->npoints++] = (struct series_point){ bucket, count };
	return 0;
}

/* Keeps one label name, up to max_bytes of them in all. */
static int keep_name(void *ctx, const char *text)
{
	struct query_answer *a = ctx;
	size_t n = strlen(text) + 1, cap;
	char *p;

	if (a->max_bytes && a->names_len + n > a->max_bytes)
		return -E2BIG;
	if (a->names_len + n > a->names_cap) {
		cap = a->names_cap ? a->names_cap * 2 : 4096;
		while (cap < a->names_len + n)
			cap *= 2;
		p = realloc(a->names, cap);
		if (!p)
			return -ENOMEM;
		a->names = p;
		a->names_cap = cap;
	}
	memcpy(a->names + a->names_len, text, n);
	a->names_len += n;
	a->nnames++;
	return 0;
}

static void write_point(struct series_ctx *c, int64_t t, uint64_t count)
{
	if (c->json)
		fprintf(c->out, "%s[%lld,%llu]", c->first ? "" : ",", (long long)t,
			(unsigned long long)count);
	else
		fprintf(c->out, "%12lld %10llu\n", (long long)t, (unsigned long long)count);
	c->first = false;
}

/* Buckets with no samples are written as zeros: a gap is information. */
static int series_point(void *ctx, int64_t bucket, uint64_t count)
{
	struct series_ctx *c = ctx;

	for (; c->next < bucket; c->next += c->q->step)
		write_point(c, c->next, 0);
	write_point(c, bucket, count);
	c->next = bucket + c->q->step;
	return 0;
}

static int write_series(const struct query_answer *a, FILE *out, bool json)
{
	const struct query *q = a->q;
	struct series_ctx c = { .q = q, .out = out, .next = q->from, .first = true, .json = json };
	int err = 0;
	size_t i;

	if (c.json)
		fprintf(out, "{\"from\":%lld,\"to\":%lld,\"step\":%lld,\"points\":[",
			(long long)q->from, (long long)q->to, (long long)q->step);
	else
		fprintf(out, "%12s %10s\n", "TIME", "SAMPLES");
	for (i = 0; i < a->npoints; i++)
		series_point(&c, a->points[i].bucket, a->points[i].count);
	for (; !err && c.next < q->to; c.next += q->step)
		write_point(&c, c.next, 0);
	if (c.json)
		fprintf(out, "]}\n");
	return err;
}

static int out_series_table(const struct query_answer *a, FILE *out)
{
	return write_series(a, out, false);
}

static int out_series_json(const struct query_answer *a, FILE *out)
{
	return write_series(a, out, true);
}

struct labels_ctx {
	FILE *out;
	bool first;
};

static int write_label(void *ctx, const char *text)
{
	struct labels_ctx *c = ctx;

	fputs(c->first ? "" : ",", c->out);
	render_json_string(c->out, text);
	c->first = false;
	return 0;
}

static int out_labels(const struct query_answer *a, FILE *out)
{
	const struct query *q = a->q;
	struct labels_ctx c = { .out = out, .first = true };

	const char *p = a->names;
	size_t i;

	(void)q;
	fputc('[', out);
	for (i = 0; i < a->nnames; i++, p += strlen(p) + 1)
		write_label(&c, p);
	fputs("]\n", out);
	return ferror(out) ? -EIO : 0;
}

#define KIND(k)	 (1u << (k))
#define PROFILES (KIND(QUERY_FLAMEGRAPH) | KIND(QUERY_DIFF))
#define TEXT	 "text/plain; charset=utf-8"
#define JSON	 "application/json"

/* Every output format: a new one is a row here and a renderer of its own. */
struct query_format {
	const char *name;
	unsigned kinds; /* KIND() bits of the queries that offer it */
	const char *content_type;
	int (*render)(const struct query_answer *a, FILE *out);
};

static const struct query_format formats[] = {
	{ "json", PROFILES, JSON, out_tree_json },
	{ "folded", PROFILES, TEXT, out_folded },
	{ "svg", PROFILES, "image/svg+xml", out_svg },
	{ "html", PROFILES, "text/html; charset=utf-8", out_html },
	{ "pprof", KIND(QUERY_FLAMEGRAPH), "application/octet-stream", out_pprof },
	{ "speedscope", KIND(QUERY_FLAMEGRAPH), JSON, out_speedscope },
	{ "json", KIND(QUERY_TOP), JSON, out_top_json },
	{ "table", KIND(QUERY_TOP), TEXT, out_top_table },
	{ "json", KIND(QUERY_SERIES), JSON, out_series_json },
	{ "table", KIND(QUERY_SERIES), TEXT, out_series_table },
	{ "json", KIND(QUERY_LABELS) | KIND(QUERY_LABEL_VALUES), JSON, out_labels },
};

const struct query_format *query_format__find(enum query_kind kind, const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if ((formats[i].kinds & KIND(kind)) && strcmp(formats[i].name, name) == 0)
			return &formats[i];
	return NULL;
}

int query_load(struct store *st, const struct query *q, size_t max_bytes, struct query_answer **out,
	       char *why, size_t whylen)
{
	struct query_answer *a = calloc(1, sizeof(*a));
	struct store_query sq;
	int err = 0;

	if (!a)
		return reason_fail(why, whylen, -ENOMEM, "query failed: out of memory");
	a->q = q;
	a->max_bytes = max_bytes;
	switch (q->kind) {
	case QUERY_FLAMEGRAPH:
	case QUERY_DIFF:
	case QUERY_TOP:
		err = load_flame(st, q, &a->tree);
		break;
	case QUERY_SERIES:
		sq = store_query(q->from, q->to, &q->where);
		err = store__query_series(st, &sq, q->step, keep_point, a);
		break;
	case QUERY_LABELS:
		sq = store_query(q->from, q->to, &q->where);
		err = store__labels(st, &sq, keep_name, a);
		break;
	case QUERY_LABEL_VALUES:
		sq = store_query(q->from, q->to, &q->where);
		err = store__label_values(st, q->label, &sq, keep_name, a);
		break;
	}
	if (err == -E2BIG)
		reason_fail(why, whylen, err,
			    "more than %zu MiB of label names: narrow the time range",
			    max_bytes >> 20);
	else if (err)
		reason_fail(why, whylen, err, "query failed: %s",
			    err == -EINVAL ? store__errmsg(st) : strerror(-err));
	if (err) {
		query_answer__free(a);
		return err;
	}
	*out = a;
	return 0;
}

int query_render(const struct query_answer *a, FILE *out, const char **content_type, char *why,
		 size_t whylen)
{
	int err;

	*content_type = a->q->output->content_type;
	err = a->q->output->render(a, out);
	if (err && why[0] == '\0')
		snprintf(why, whylen, "query failed: %s", strerror(-err));
	return err;
}

void query_answer__free(struct query_answer *a)
{
	if (!a)
		return;
	flame__free(a->tree);
	free(a->points);
	free(a->names);
	free(a);
}

int query_run(struct store *st, const struct query *q, FILE *out, const char **content_type,
	      char *why, size_t whylen)
{
	struct query_answer *a = NULL;
	int err;

	*content_type = q->output->content_type;
	err = query_load(st, q, 0, &a, why, whylen);
	err = err ?: query_render(a, out, content_type, why, whylen);
	query_answer__free(a);
	return err;
}

/* Query parsing, execution and rendering; see query.h. */
#include "query/query.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/reason.h"
#include "query/flame.h"
#include "query/render_folded.h"
#include "query/render_html.h"
#include "query/render_json.h"
#include "query/render_pprof.h"
#include "query/render_speedscope.h"
#include "query/render_svg.h"
#include "query/timeparse.h"
#include "store/store.h"

#define DEFAULT_RANGE 3600
#define DEFAULT_LIMIT 50
#define MAX_LIMIT     100000
#define MIN_STEP      10
#define MAX_POINTS    100000   /* series buckets in one answer */
#define PERIOD_NS     10101010 /* 99 Hz: the store does not keep the period yet */

struct query_format;
static const struct query_format *find_format(enum query_kind kind, const char *name);

static int parse_time_param(query_param_fn param, void *ctx, const char *name, int64_t dflt,
			    int64_t now, int64_t *out, char *why, size_t len)
{
	const char *v = param(ctx, name, 0);

	if (!v || !*v) {
		*out = dflt;
		return 0;
	}
	if (timeparse(v, now, out))
		return reason_fail(why, len, -EINVAL,
				   "%s: '%.64s' is not a time (RFC 3339, unix seconds, now, -15m)",
				   name, v);
	return 0;
}

static int parse_range(query_param_fn param, void *ctx, const char *from_name, const char *to_name,
		       int64_t now, int64_t *from, int64_t *to, char *why, size_t len)
{
	int err = parse_time_param(param, ctx, to_name, now, now, to, why, len);

	err = err
		      ?: parse_time_param(param, ctx, from_name, *to - DEFAULT_RANGE, now, from,
					  why, len);
	if (!err && *to <= *from)
		err = reason_fail(why, len, -EINVAL, "%s must be after %s", to_name, from_name);
	return err;
}

/* Appends every where=K=V value of `name` to w; the split strings are owned by q. */
static int parse_where(struct query *q, struct query_where *w, query_param_fn param, void *ctx,
		       const char *name, char *why, size_t len)
{
	const char *v, *eq;
	size_t i;

	for (i = 0; (v = param(ctx, name, i)); i++) {
		eq = strchr(v, '=');
		if (!eq || eq == v)
			return reason_fail(why, len, -EINVAL, "%s wants KEY=VALUE, got '%.64s'",
					   name, v);
		if (w->n == QUERY_MAX_WHERE ||
		    q->nowned + 2 > sizeof(q->owned) / sizeof(q->owned[0]))
			return reason_fail(why, len, -EINVAL, "at most %d %s selections",
					   QUERY_MAX_WHERE, name);
		q->owned[q->nowned] = strndup(v, (size_t)(eq - v));
		q->owned[q->nowned + 1] = strdup(eq + 1);
		if (!q->owned[q->nowned] || !q->owned[q->nowned + 1]) {
			free(q->owned[q->nowned]);
			free(q->owned[q->nowned + 1]);
			return -ENOMEM;
		}
		w->keys[w->n] = q->owned[q->nowned];
		w->values[w->n++] = q->owned[q->nowned + 1];
		q->nowned += 2;
	}
	return 0;
}

int query_parse(struct query *q, enum query_kind kind, query_param_fn param, void *ctx, int64_t now,
		char *why, size_t whylen)
{
	const char *v;
	int err = 0;

	*q = (struct query){ .kind = kind, .limit = DEFAULT_LIMIT };
	q->format = param(ctx, "format", 0);
	if (kind == QUERY_DIFF) {
		err = parse_range(param, ctx, "before_from", "before_to", now, &q->before_from,
				  &q->before_to, why, whylen);
		err = err
			      ?: parse_range(param, ctx, "after_from", "after_to", now,
					     &q->after_from, &q->after_to, why, whylen);
		err = err ?: parse_where(q, &q->before_where, param, ctx, "where", why, whylen);
		err = err ?: parse_where(q, &q->after_where, param, ctx, "where", why, whylen);
		err = err
			      ?: parse_where(q, &q->before_where, param, ctx, "before_where", why,
					     whylen);
		err = err
			      ?: parse_where(q, &q->after_where, param, ctx, "after_where", why,
					     whylen);
	} else {
		err = parse_range(param, ctx, "from", "to", now, &q->from, &q->to, why, whylen);
		err = err ?: parse_where(q, &q->where, param, ctx, "where", why, whylen);
	}
	if (err)
		goto out;
	if (!q->format)
		q->format = "json";
	q->output = find_format(kind, q->format);
	if (!q->output) {
		err = reason_fail(why, whylen, -EINVAL, "unknown format '%.32s' for this query",
				  q->format);
		goto out;
	}
	v = param(ctx, "type", 0);
	if (v && strcmp(v, "cpu") != 0) {
		err = reason_fail(why, whylen, -EINVAL,
				  "unknown profile type '%.32s' (only cpu is recorded)", v);
		goto out;
	}
	if (kind == QUERY_TOP && (v = param(ctx, "limit", 0))) {
		char *end;
		unsigned long n = strtoul(v, &end, 10);

		if (*end || !*v || n < 1 || n > MAX_LIMIT) {
			err = reason_fail(why, whylen, -EINVAL, "limit wants 1 to %d", MAX_LIMIT);
			goto out;
		}
		q->limit = n;
	}
	if (kind == QUERY_SERIES) {
		v = param(ctx, "step", 0);
		if (v && timeparse_duration(v, &q->step)) {
			err = reason_fail(why, whylen, -EINVAL,
					  "step wants a duration like 10s or 5m, got '%.32s'", v);
			goto out;
		}
		if (!v)
			q->step = (q->to - q->from) / 60 > MIN_STEP ? (q->to - q->from) / 60
								    : MIN_STEP;
		if ((q->to - q->from) / q->step > MAX_POINTS) {
			err = reason_fail(why, whylen, -EINVAL,
					  "step too small: more than %d points", MAX_POINTS);
			goto out;
		}
	}
	if (kind == QUERY_LABEL_VALUES) {
		q->label = param(ctx, "name", 0);
		if (!q->label || !*q->label)
			err = reason_fail(why, whylen, -EINVAL, "which label? name is missing");
	}
out:
	if (err)
		query_free(q);
	return err;
}

bool query_args__add(struct query_args *a, const char *name, const char *value)
{
	if (a->n == QUERY_MAX_ARGS)
		return false;
	a->names[a->n] = name;
	a->values[a->n++] = value;
	return true;
}

const char *query_args__get(void *ctx, const char *name, size_t i)
{
	const struct query_args *a = ctx;
	size_t k;

	for (k = 0; k < a->n; k++)
		if (strcmp(a->names[k], name) == 0 && i-- == 0)
			return a->values[k];
	return NULL;
}

void query_free(struct query *q)
{
	size_t i;

	for (i = 0; i < q->nowned; i++)
		free(q->owned[i]);
	q->nowned = 0;
}

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
	int err = flame__new(&s.f);

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
	return render_json_tree(a->tree, out);
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

/* Functions of side 0 with self and total, at most q->limit of them. */
static int top_functions(const struct query_answer *a, struct flame_function **fns, size_t *n)
{
	int err = flame__top(a->tree, 0, fns, n);

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

	err = err ?: render_json_top(fns, n, flame__total(a->tree, 0), out);
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

	if (a->npoints > MAX_POINTS)
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

static const struct query_format *find_format(enum query_kind kind, const char *name)
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
		err = store__labels(st, q->from, q->to, keep_name, a);
		break;
	case QUERY_LABEL_VALUES:
		err = store__label_values(st, q->label, q->from, q->to, keep_name, a);
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

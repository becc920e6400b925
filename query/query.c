/* Query parsing, execution and rendering; see query.h. */
#include "query/query.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "query/flame.h"
#include "common/folded.h"
#include "common/reason.h"
#include "query/render_html.h"
#include "query/render_json.h"
#include "query/render_pprof.h"
#include "query/render_speedscope.h"
#include "query/render_svg.h"
#include "query/timeparse.h"
#include "store/store.h"

#define DEFAULT_RANGE 3600
#define DEFAULT_LIMIT 50
#define MAX_LIMIT 100000
#define MIN_STEP 10
#define MAX_POINTS 100000      /* series buckets in one answer */
#define PERIOD_NS 10101010     /* 99 Hz: the store does not keep the period yet */

static int parse_time_param(query_param_fn param, void *ctx, const char *name, int64_t dflt,
			    int64_t now, int64_t *out, char *why, size_t len)
{
	const char *v = param(ctx, name, 0);

	if (!v || !*v) {
		*out = dflt;
		return 0;
	}
	if (timeparse(v, now, out))
		return reason_fail(why, len, -EINVAL, "%s: '%.64s' is not a time (RFC 3339, unix seconds, now, -15m)",
			    name, v);
	return 0;
}

static int parse_range(query_param_fn param, void *ctx, const char *from_name, const char *to_name,
		       int64_t now, int64_t *from, int64_t *to, char *why, size_t len)
{
	int err = parse_time_param(param, ctx, to_name, now, now, to, why, len);

	err = err ?: parse_time_param(param, ctx, from_name, *to - DEFAULT_RANGE, now, from, why, len);
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
			return reason_fail(why, len, -EINVAL, "%s wants KEY=VALUE, got '%.64s'", name, v);
		if (w->n == QUERY_MAX_WHERE || q->nowned + 2 > sizeof(q->owned) / sizeof(q->owned[0]))
			return reason_fail(why, len, -EINVAL, "at most %d %s selections", QUERY_MAX_WHERE, name);
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

static bool one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

int query_parse(struct query *q, enum query_kind kind, query_param_fn param, void *ctx,
		int64_t now, char *why, size_t whylen)
{
	static const char *const flame_formats[] = { "json", "folded", "svg", "html",
						     "pprof", "speedscope", NULL };
	static const char *const diff_formats[] = { "json", "folded", "svg", "html", NULL };
	static const char *const table_formats[] = { "json", "table", NULL };
	const char *const *formats = table_formats;
	const char *v;
	int err = 0;

	*q = (struct query){ .kind = kind, .limit = DEFAULT_LIMIT };
	q->format = param(ctx, "format", 0);
	if (kind == QUERY_DIFF) {
		err = parse_range(param, ctx, "before_from", "before_to", now, &q->before_from,
				  &q->before_to, why, whylen);
		err = err ?: parse_range(param, ctx, "after_from", "after_to", now, &q->after_from,
					 &q->after_to, why, whylen);
		err = err ?: parse_where(q, &q->before_where, param, ctx, "where", why, whylen);
		err = err ?: parse_where(q, &q->after_where, param, ctx, "where", why, whylen);
		err = err ?: parse_where(q, &q->before_where, param, ctx, "before_where", why, whylen);
		err = err ?: parse_where(q, &q->after_where, param, ctx, "after_where", why, whylen);
		formats = diff_formats;
	} else {
		err = parse_range(param, ctx, "from", "to", now, &q->from, &q->to, why, whylen);
		err = err ?: parse_where(q, &q->where, param, ctx, "where", why, whylen);
		if (kind == QUERY_FLAMEGRAPH)
			formats = flame_formats;
	}
	if (err)
		goto out;
	if (!q->format)
		q->format = "json";
	if (!one_of(q->format, formats)) {
		err = reason_fail(why, whylen, -EINVAL, "unknown format '%.32s' for this query", q->format);
		goto out;
	}
	v = param(ctx, "type", 0);
	if (v && strcmp(v, "cpu") != 0) {
		err = reason_fail(why, whylen, -EINVAL, "unknown profile type '%.32s' (only cpu is recorded)", v);
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
			err = reason_fail(why, whylen, -EINVAL, "step wants a duration like 10s or 5m, got '%.32s'", v);
			goto out;
		}
		if (!v)
			q->step = (q->to - q->from) / 60 > MIN_STEP ? (q->to - q->from) / 60 : MIN_STEP;
		if ((q->to - q->from) / q->step > MAX_POINTS) {
			err = reason_fail(why, whylen, -EINVAL, "step too small: more than %d points", MAX_POINTS);
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

void query_free(struct query *q)
{
	size_t i;

	for (i = 0; i < q->nowned; i++)
		free(q->owned[i]);
	q->nowned = 0;
}

static struct store_query store_query(int64_t from, int64_t to, const struct query_where *w)
{
	return (struct store_query){ .from = from, .to = to, .keys = w->keys, .values = w->values,
				     .nlabels = w->n };
}

struct side {
	struct flame *f;
	unsigned side;
};

static int add_flame(void *ctx, const char *stack, uint64_t count)
{
	struct side *s = ctx;

	return flame__add(s->f, stack, count, s->side);
}

static int add_folded(void *ctx, const char *stack, uint64_t count)
{
	return folded__add(ctx, stack, count);
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
		err = store__query_stacks(st, &sq, add_flame, &s);
		s.side = 1;
		sq = store_query(q->after_from, q->after_to, &q->after_where);
		err = err ?: store__query_stacks(st, &sq, add_flame, &s);
	} else {
		s.side = 0;
		sq = store_query(q->from, q->to, &q->where);
		err = store__query_stacks(st, &sq, add_flame, &s);
	}
	if (err) {
		flame__free(s.f);
		return err;
	}
	flame__finish(s.f);
	*out = s.f;
	return 0;
}

static int load_folded(struct store *st, int64_t from, int64_t to, const struct query_where *w,
		       struct folded **out)
{
	struct store_query sq = store_query(from, to, w);
	int err = folded__new(out);

	err = err ?: store__query_stacks(st, &sq, add_folded, *out);
	if (err) {
		folded__free(*out);
		*out = NULL;
	}
	return err;
}

/* difffolded.pl's format: "stack before after", every stack of either side. */
struct diff_ctx {
	const struct folded *other;
	FILE *out;
	bool before_side;
};

static int write_diff_line(void *ctx, const char *stack, uint64_t count)
{
	struct diff_ctx *d = ctx;
	uint64_t other = folded__count(d->other, stack);

	if (d->before_side)
		fprintf(d->out, "%s %llu %llu\n", stack, (unsigned long long)count,
			(unsigned long long)other);
	else if (!other) /* only in after: not written by the first pass */
		fprintf(d->out, "%s 0 %llu\n", stack, (unsigned long long)count);
	return 0;
}

static int run_diff_folded(struct store *st, const struct query *q, FILE *out)
{
	struct folded *before = NULL, *after = NULL;
	struct diff_ctx d = { .out = out };
	int err;

	err = load_folded(st, q->before_from, q->before_to, &q->before_where, &before);
	err = err ?: load_folded(st, q->after_from, q->after_to, &q->after_where, &after);
	if (!err) {
		d.other = after;
		d.before_side = true;
		folded__foreach(before, write_diff_line, &d);
		d.other = before;
		d.before_side = false;
		folded__foreach(after, write_diff_line, &d);
	}
	folded__free(before);
	folded__free(after);
	return err;
}

static void write_top_table(const struct flame_function *fns, size_t n, uint64_t total, FILE *out)
{
	size_t i;

	fprintf(out, "%8s %7s %8s %7s  %s\n", "SELF", "SELF%", "TOTAL", "TOTAL%", "FUNCTION");
	for (i = 0; i < n; i++)
		fprintf(out, "%8llu %6.2f%% %8llu %6.2f%%  %s\n", (unsigned long long)fns[i].self,
			total ? 100.0 * (double)fns[i].self / (double)total : 0.0,
			(unsigned long long)fns[i].total,
			total ? 100.0 * (double)fns[i].total / (double)total : 0.0, fns[i].name);
}

static int run_top(struct store *st, const struct query *q, FILE *out, const char **type)
{
	struct flame_function *fns = NULL;
	struct flame *f = NULL;
	size_t n = 0;
	int err = load_flame(st, q, &f);

	err = err ?: flame__top(f, 0, &fns, &n);
	if (!err) {
		if (n > q->limit)
			n = q->limit;
		if (strcmp(q->format, "table") == 0) {
			*type = "text/plain; charset=utf-8";
			write_top_table(fns, n, flame__total(f, 0), out);
		} else {
			*type = "application/json";
			err = render_json_top(fns, n, flame__total(f, 0), out);
		}
	}
	free(fns);
	flame__free(f);
	return err;
}

struct series_ctx {
	const struct query *q;
	FILE *out;
	int64_t next; /* the next bucket to write */
	bool json, first;
};

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

static int run_series(struct store *st, const struct query *q, FILE *out, const char **type)
{
	struct store_query sq = store_query(q->from, q->to, &q->where);
	struct series_ctx c = { .q = q, .out = out, .next = q->from, .first = true };
	int err;

	c.json = strcmp(q->format, "json") == 0;
	*type = c.json ? "application/json" : "text/plain; charset=utf-8";
	if (c.json)
		fprintf(out, "{\"from\":%lld,\"to\":%lld,\"step\":%lld,\"points\":[", (long long)q->from,
			(long long)q->to, (long long)q->step);
	else
		fprintf(out, "%12s %10s\n", "TIME", "SAMPLES");
	err = store__query_series(st, &sq, q->step, series_point, &c);
	for (; !err && c.next < q->to; c.next += q->step)
		write_point(&c, c.next, 0);
	if (c.json)
		fprintf(out, "]}\n");
	return err;
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

static int run_labels(struct store *st, const struct query *q, FILE *out, const char **type)
{
	struct labels_ctx c = { .out = out, .first = true };
	int err;

	*type = "application/json";
	fputc('[', out);
	if (q->kind == QUERY_LABELS)
		err = store__labels(st, q->from, q->to, write_label, &c);
	else
		err = store__label_values(st, q->label, q->from, q->to, write_label, &c);
	fputs("]\n", out);
	return err;
}

static int run_flame(struct store *st, const struct query *q, FILE *out, const char **type)
{
	struct folded *folded = NULL;
	struct flame *f = NULL;
	bool diff = q->kind == QUERY_DIFF;
	int err;

	if (!diff && (strcmp(q->format, "folded") == 0 || strcmp(q->format, "pprof") == 0 ||
		      strcmp(q->format, "speedscope") == 0)) {
		err = load_folded(st, q->from, q->to, &q->where, &folded);
		if (err)
			return err;
		if (strcmp(q->format, "folded") == 0) {
			*type = "text/plain; charset=utf-8";
			err = folded__write(folded, out);
		} else if (strcmp(q->format, "speedscope") == 0) {
			*type = "application/json";
			err = render_speedscope(folded, "smolder", out);
		} else {
			void *buf = NULL;
			size_t len = 0;

			*type = "application/octet-stream";
			err = render_pprof(folded, PERIOD_NS, q->from * 1000000000ll,
					   (q->to - q->from) * 1000000000ll, &buf, &len);
			if (!err && fwrite(buf, 1, len, out) != len)
				err = -EIO;
			free(buf);
		}
		folded__free(folded);
		return err;
	}
	if (diff && strcmp(q->format, "folded") == 0) {
		*type = "text/plain; charset=utf-8";
		return run_diff_folded(st, q, out);
	}
	err = load_flame(st, q, &f);
	if (err)
		return err;
	if (strcmp(q->format, "svg") == 0) {
		struct render_svg_options o = { .title = diff ? "smolder diff" : "smolder",
						.diff = diff };

		*type = "image/svg+xml";
		err = render_svg(f, &o, out);
	} else if (strcmp(q->format, "html") == 0) {
		struct render_html_options o = { .title = diff ? "smolder diff" : "smolder",
						 .diff = diff };

		*type = "text/html; charset=utf-8";
		err = render_html(f, &o, out);
	} else {
		*type = "application/json";
		err = render_json_tree(f, out);
	}
	flame__free(f);
	return err;
}

int query_run(struct store *st, const struct query *q, FILE *out, const char **content_type,
	      char *why, size_t whylen)
{
	int err;

	switch (q->kind) {
	case QUERY_FLAMEGRAPH:
	case QUERY_DIFF:
		err = run_flame(st, q, out, content_type);
		break;
	case QUERY_TOP:
		err = run_top(st, q, out, content_type);
		break;
	case QUERY_SERIES:
		err = run_series(st, q, out, content_type);
		break;
	default:
		err = run_labels(st, q, out, content_type);
		break;
	}
	if (err && why[0] == '\0')
		snprintf(why, whylen, "query failed: %s", err == -EINVAL ? store__errmsg(st)
									  : strerror(-err));
	return err;
}

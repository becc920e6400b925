/* Query parameters: validation of the name/value pairs shared by HTTP and the
 * CLI into a struct query, with a one-line reason for what is refused; see
 * query.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/reason.h"
#include "query/query.h"
#include "query/query_int.h"
#include "query/timeparse.h"

#define DEFAULT_RANGE 3600
#define DEFAULT_LIMIT 50
#define MAX_LIMIT     100000
#define MIN_STEP      10

static int parse_time_param(query_param_fn param, void *ctx, const char *name, int64_t dflt,
			    int64_t now, int64_t *out, char *why, size_t len)
{
	const char *v = param(ctx, name, 0);

	if (!v || !*v) {
		*out = dflt;
		return 0;
	}
	switch (timeparse(v, now, out)) {
	case 0:
		return 0;
	case -ERANGE:
		return reason_fail(why, len, -EINVAL,
				   "%s: '%.64s' does not exist in local time (clocks went forward "
				   "then): give a zone, like 2026-03-29T02:30:00+01:00",
				   name, v);
	default:
		return reason_fail(why, len, -EINVAL,
				   "%s: '%.64s' is not a time (forms: " TIMEPARSE_FORMS ")", name,
				   v);
	}
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
	q->output = query_format__find(kind, q->format);
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
	v = param(ctx, "granularity", 0);
	if (v && (kind == QUERY_FLAMEGRAPH || kind == QUERY_DIFF || kind == QUERY_TOP)) {
		if (strcmp(v, "line") != 0 && strcmp(v, "function") != 0) {
			err = reason_fail(why, whylen, -EINVAL,
					  "granularity wants function or line, got '%.32s'", v);
			goto out;
		}
		q->lines = strcmp(v, "line") == 0;
	}
	v = param(ctx, "sort", 0);
	if (v && kind == QUERY_TOP) {
		if (strcmp(v, "self") != 0 && strcmp(v, "total") != 0) {
			err = reason_fail(why, whylen, -EINVAL,
					  "sort wants self or total, got '%.32s'", v);
			goto out;
		}
		q->sort = strcmp(v, "total") == 0 ? QUERY_SORT_TOTAL : QUERY_SORT_SELF;
	}
	if (kind == QUERY_SERIES) {
		v = param(ctx, "step", 0);
		if (v && timeparse_duration(v, &q->step)) {
			err = reason_fail(why, whylen, -EINVAL,
					  "step wants a duration (" TIMEPARSE_DURATION_FORMS
					  "), got '%.32s'",
					  v);
			goto out;
		}
		if (!v)
			q->step = (q->to - q->from) / 60 > MIN_STEP ? (q->to - q->from) / 60
								    : MIN_STEP;
		if ((q->to - q->from) / q->step > QUERY_MAX_POINTS) {
			err = reason_fail(why, whylen, -EINVAL,
					  "step too small: more than %d points", QUERY_MAX_POINTS);
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

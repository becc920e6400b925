/* Query parameters: validation of the name/value pairs shared by HTTP and the
 * CLI into a struct query, with a one-line reason for what is refused (a name the
 * query does not take, a single-valued one given twice, a missing diff range, a
 * bad value), and the check of a selection's label keys against a store; see
 * query.h. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/ptype.h"
#include "common/reason.h"
#include "query/fnseries.h"
#include "query/query.h"
#include "query/query_int.h"
#include "query/timeparse.h"
#include "store/store.h"

#define DEFAULT_RANGE 3600
#define DEFAULT_LIMIT 50
#define MAX_LIMIT     100000
/* max_nodes (json flame graphs): below 16 a graph says nothing; 10 M is past any
 * tree the store can answer (BLOCK_MERGE_MAX_IDS stacks of distinct frames
 * aside), so a larger value is a typo. */
#define MIN_MAX_NODES 16
#define MAX_MAX_NODES 10000000
#define MIN_STEP      10

/* The parameters each kind takes, for the unknown-parameter check and its
 * reason; the where family may repeat, every other one is single-valued. */
static const struct {
	const char *what;	  /* the query's name in a reason */
	const char *const *names; /* NULL-terminated */
} kinds[] = {
	[QUERY_FLAMEGRAPH] = { "flamegraph",
			       (const char *const[]){ "from", "to", "where", "type", "format",
						      "granularity", "max_nodes", NULL } },
	[QUERY_DIFF] = { "diff", (const char *const[]){ "before_from", "before_to", "after_from",
							"after_to", "where", "before_where",
							"after_where", "type", "format",
							"granularity", "max_nodes", NULL } },
	[QUERY_TOP] = { "top", (const char *const[]){ "from", "to", "where", "type", "format",
						      "granularity", "limit", "sort", NULL } },
	[QUERY_SERIES] = { "series",
			   (const char *const[]){ "from", "to", "where", "type", "format", "step",
						  "function", "breakdown", NULL } },
	[QUERY_LABELS] = { "labels",
			   (const char *const[]){ "from", "to", "where", "format", NULL } },
	[QUERY_LABEL_VALUES] = { "label values", (const char *const[]){ "name", "from", "to",
									"where", "format", NULL } },
	[QUERY_TYPES] = { "types", (const char *const[]){ "from", "to", "where", "format", NULL } },
};

static bool is_multi(const char *name)
{
	return !strcmp(name, "where") || !strcmp(name, "before_where") ||
	       !strcmp(name, "after_where");
}

/* Every name given must be one that kind takes, single-valued ones once. */
static int check_names(enum query_kind kind, const struct query_params *p, char *why, size_t len)
{
	const char *const *names = kinds[kind].names;
	const char *name;
	char list[256];
	size_t i, k, off = 0;

	for (i = 0; (name = p->name_at(p->ctx, i)); i++) {
		for (k = 0; names[k] && strcmp(names[k], name) != 0; k++)
			;
		if (names[k]) {
			if (!is_multi(name) && p->get(p->ctx, name, 1))
				return reason_fail(why, len, -EINVAL,
						   "parameter '%.64s' given more than once (%s "
						   "takes one)",
						   name, kinds[kind].what);
			continue;
		}
		for (k = 0; names[k] && off < sizeof(list); k++) /* 120 bytes at most */
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
						k ? ", " : "", names[k]);
		return reason_fail(why, len, -EINVAL, "unknown parameter '%.64s' (%s takes %s)",
				   name, kinds[kind].what, list);
	}
	return 0;
}

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

/* The API's step: a duration, or plain seconds as programs send it (the web UI,
 * Prometheus-style clients). The CLI refuses a bare number itself: a person typing
 * "--step 5" may mean minutes. */
static bool parse_step(const char *v, int64_t *out)
{
	char *end;
	long long n;

	if (!timeparse_duration(v, out))
		return true;
	if (!isdigit((unsigned char)v[0]))
		return false;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || *end || n <= 0 || n > 100LL * 365 * 86400)
		return false;
	*out = n;
	return true;
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

int query_parse(struct query *q, enum query_kind kind, const struct query_params *p, int64_t now,
		char *why, size_t whylen)
{
	static const char *const ranges[] = { "before_from", "before_to", "after_from",
					      "after_to" };
	query_param_fn param = p->get;
	void *ctx = p->ctx;
	const char *v;
	size_t i;
	int err = 0;

	*q = (struct query){ .kind = kind, .limit = DEFAULT_LIMIT };
	if ((unsigned)kind >= sizeof(kinds) / sizeof(kinds[0]))
		return reason_fail(why, whylen, -EINVAL, "unknown query");
	err = check_names(kind, p, why, whylen);
	if (err)
		return err;
	q->format = param(ctx, "format", 0);
	if (kind == QUERY_DIFF) {
		/* a default range would compare something nobody asked for */
		for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
			if (!(v = param(ctx, ranges[i], 0)) || !*v)
				return reason_fail(why, whylen, -EINVAL,
						   "diff needs both ranges: %s is missing "
						   "(before_from, before_to, after_from, after_to; "
						   "CLI: --before FROM,TO --after FROM,TO)",
						   ranges[i]);
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
	q->ptype = ptype__find(v ? v : STORE_TYPE_CPU);
	if (!q->ptype) {
		char list[320];

		err = reason_fail(why, whylen, -EINVAL, "unknown profile type '%.32s' (types: %s)",
				  v, ptype__list(list, sizeof(list)));
		goto out;
	}
	/* the table's string, not the caller's: q outlives no parameter list */
	q->type = strcmp(q->ptype->name, STORE_TYPE_CPU) != 0 ? q->ptype->name : NULL;
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
	v = param(ctx, "max_nodes", 0);
	if (v) { /* flamegraph and diff only: check_names refused it elsewhere */
		char *end;
		unsigned long n = strtoul(v, &end, 10);

		if (*end || !*v || *v == '-' || n < MIN_MAX_NODES || n > MAX_MAX_NODES) {
			err = reason_fail(why, whylen, -EINVAL,
					  "max_nodes wants %d to %d, got '%.32s'", MIN_MAX_NODES,
					  MAX_MAX_NODES, v);
			goto out;
		}
		if (strcmp(q->format, "json") != 0) {
			err = reason_fail(why, whylen, -EINVAL,
					  "max_nodes applies to format=json, not %.32s", q->format);
			goto out;
		}
		q->max_nodes = n;
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
		if (v && !parse_step(v, &q->step)) {
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
		v = param(ctx, "breakdown", 0);
		if (v) {
			char *end;
			unsigned long n = strtoul(v, &end, 10);

			if (!isdigit((unsigned char)*v) || *end || n < 1 ||
			    n > FNSERIES_MAX_BREAKDOWN) {
				err = reason_fail(why, whylen, -EINVAL,
						  "breakdown wants a number of functions, 1 to %d, "
						  "got '%.32s'",
						  FNSERIES_MAX_BREAKDOWN, v);
				goto out;
			}
			if (param(ctx, "function", 0)) {
				err = reason_fail(why, whylen, -EINVAL,
						  "breakdown and function are two views: give one");
				goto out;
			}
			q->breakdown = n;
		}
		if (ptype__is_gauge(q->ptype) &&
		    (q->to - q->from + q->step - 1) / q->step > STORE_GAUGE_MAX_BUCKETS) {
			err = reason_fail(why, whylen, -EINVAL,
					  "step too small for a gauge (%s): more than %d points "
					  "(each averages its snapshots)",
					  q->ptype->name, STORE_GAUGE_MAX_BUCKETS);
			goto out;
		}
		v = param(ctx, "function", 0);
		if ((v || q->breakdown) &&
		    (q->to - q->from + q->step - 1) / q->step > FNSERIES_MAX_POINTS) {
			err = reason_fail(why, whylen, -EINVAL,
					  "step too small for a %s: more than %d points (each "
					  "reads its stacks)",
					  v ? "function's timeline" : "breakdown",
					  FNSERIES_MAX_POINTS);
			goto out;
		}
		if (v) {
			err = fnseries__compile(v, &q->function_re, why, whylen);
			if (err)
				goto out;
			q->function = v;
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

const char *query_args__name_at(void *ctx, size_t i)
{
	const struct query_args *a = ctx;

	return i < a->n ? a->names[i] : NULL;
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

	if (q->function)
		regfree(&q->function_re);
	q->function = NULL;

	for (i = 0; i < q->nowned; i++)
		free(q->owned[i]);
	q->nowned = 0;
}

/* Bounds on the label key check: keys read from the store (past it, the check
 * gives up and lets the query run: it cannot tell), and the list in a reason. */
#define MAX_CHECKED_KEYS 1024

/* The keys a query names: its selection's, and labels/NAME/values' NAME. */
struct named_keys {
	const char *keys[QUERY_MAX_WHERE + 1];
	size_t n;
};

struct key_check {
	char list[160];
	size_t off, nkeys;
};

static int see_key(void *ctx, const char *key)
{
	struct key_check *kc = ctx;
	size_t n = strlen(key);

	if (++kc->nkeys > MAX_CHECKED_KEYS)
		return 1;
	if (kc->off + n + 6 < sizeof(kc->list)) {
		kc->off += (size_t)snprintf(kc->list + kc->off, sizeof(kc->list) - kc->off, "%s%s",
					    kc->off ? ", " : "", key);
	} else if (kc->off + 5 < sizeof(kc->list) && !strstr(kc->list, "...")) {
		kc->off +=
			(size_t)snprintf(kc->list + kc->off, sizeof(kc->list) - kc->off, ", ...");
	}
	return 0;
}

/* The whole of time a store can hold: timeparse's bounds. */
#define ALL_TIME_FROM 0
#define ALL_TIME_TO   (INT64_C(1) << 40)

static int probe_failed(struct store *s, int err, char *why, size_t len)
{
	return reason_fail(why, len, err, "query failed: %s",
			   err == -EINVAL ? store__errmsg(s) : strerror(-err));
}

/* Checks w's keys, and extra (when not NULL): a key no label set in [from, to)
 * has is a typo only if none in the whole store has it either; a key in use at
 * other times makes an empty answer ("nothing"), not a refusal ("wrong"). */
static int check_range_keys(struct store *s, int64_t from, int64_t to,
			    const struct query_where *where, const char *extra, char *why,
			    size_t len)
{
	struct store_query sq = { .from = from, .to = to };
	struct named_keys all = { .n = where->n };
	const struct named_keys *w = &all;
	struct key_check kc = { 0 };
	const char *scope = "in range";
	size_t i;
	int err;

	memcpy(all.keys, where->keys, where->n * sizeof(where->keys[0]));
	if (extra)
		all.keys[all.n++] = extra;
	/* the usual case, every key in use in the range: one cheap probe per key */
	for (i = 0; i < w->n; i++) {
		err = store__label_key_used(s, w->keys[i], from, to);
		if (err == 0) /* not in the range: anywhere at all? */
			err = store__label_key_used(s, w->keys[i], ALL_TIME_FROM, ALL_TIME_TO);
		if (err < 0)
			return probe_failed(s, err, why, len);
		if (!err)
			break;
	}
	if (i == w->n)
		return 0;
	/* a key nobody has: the keys that are, for the reason (the range's, or the
	 * store's when the range holds none) */
	err = store__labels(s, &sq, see_key, &kc);
	if (!err && kc.nkeys == 0) {
		scope = "stored";
		sq.from = ALL_TIME_FROM;
		sq.to = ALL_TIME_TO;
		err = store__labels(s, &sq, see_key, &kc);
	}
	if (err == 1 || kc.nkeys == 0)
		return 0; /* too many keys to tell, or an empty store: the answer is empty */
	if (err)
		return probe_failed(s, err, why, len);
	return reason_fail(why, len, -EINVAL, "unknown label key '%.64s' (keys %s: %s)", w->keys[i],
			   scope, kc.list);
}

int query_check_keys(struct store *s, const struct query *q, char *why, size_t whylen)
{
	switch (q->kind) {
	case QUERY_DIFF:
		return check_range_keys(s, q->before_from, q->before_to, &q->before_where, NULL,
					why, whylen)
			       ?: check_range_keys(s, q->after_from, q->after_to, &q->after_where,
						   NULL, why, whylen);
	case QUERY_LABEL_VALUES: /* the values of a key nobody has: a typo, like where's */
		return check_range_keys(s, q->from, q->to, &q->where, q->label, why, whylen);
	default:
		return check_range_keys(s, q->from, q->to, &q->where, NULL, why, whylen);
	}
}

/* The query engine, shared by the collector's HTTP API and the CLI's --db mode:
 * parameters (as name/value pairs, the same names for both), validation with a
 * one-line reason, execution against a store, and rendering in the requested
 * format.
 *
 * Queries (kind) and their parameters
 *   flamegraph  from, to, where=K=V..., type=NAME (a name of common/ptype.h's
 *               table: cpu, the default, offcpu, inuse_space, ...), granularity=function|line,
 *               format=json|text|folded|svg|html|pprof|speedscope
 *   diff        before_from, before_to, after_from, after_to (all four required),
 *               where (both sides), before_where, after_where, granularity;
 *               format=json|text|folded|svg|html
 *   top         from, to, where, granularity, limit (default 50), sort=self|total,
 *               format=json|table
 *   series      from, to, where, step (duration; default range/60, at least 10 s),
 *               format=json|table
 *   labels      from, to, where, format=json;  values of one label: name=KEY
 *   types       from, to, where, format=json|table: the profile types with data
 *               in the range and selection, each with its unit, aggregation and
 *               title (common/ptype.h), in the table's order
 * Any other parameter, or a single-valued one given twice, is refused.
 * flamegraph, diff and top take granularity: function (the default) tells frames
 * apart by kind, name and file, and keeps a Python frame's line in its node's
 * per-line breakdown; line makes the line part of a frame's identity.
 * Times: query/timeparse.h's forms (RFC 3339 with or without a zone, a date,
 * unix seconds, now, now-5m, -1h30m; no zone: the process's local time, TZ);
 * from defaults to -1h, to to now. Every answer states its context (query_int.h,
 * query/context.c): ranges requested and read, selection, type, totals, CPU time.
 */
#ifndef SMOLDER_QUERY_H
#define SMOLDER_QUERY_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ptype;
struct store;
struct query_format;

enum query_kind {
	QUERY_FLAMEGRAPH,
	QUERY_DIFF,
	QUERY_TOP,
	QUERY_SERIES,
	QUERY_LABELS,
	QUERY_LABEL_VALUES,
	QUERY_TYPES,
};

#define QUERY_MAX_WHERE 16

enum query_sort {
	QUERY_SORT_SELF,  /* top: by self samples (the default) */
	QUERY_SORT_TOTAL, /* top: by total samples */
};

struct query_where {
	const char *keys[QUERY_MAX_WHERE];
	const char *values[QUERY_MAX_WHERE];
	size_t n;
};

struct query {
	enum query_kind kind;
	int64_t from, to;		/* flamegraph, top, series, labels */
	int64_t before_from, before_to; /* diff */
	int64_t after_from, after_to;
	struct query_where where, before_where, after_where;
	const char *format;		      /* the format's name */
	const struct query_format *output;    /* the format's row (query.c) */
	const char *label;		      /* labels: the key whose values are listed */
	int64_t step;			      /* series */
	size_t limit;			      /* top */
	enum query_sort sort;		      /* top */
	bool lines;			      /* granularity=line: a line is part of a frame */
	size_t max_nodes;		      /* json flame graphs: at most this many nodes
					       * (render_json_tree); 0: all */
	size_t max_memory;		      /* bytes of working memory of a flame graph,
					       * diff or top (the store's stacks, the tree);
					       * 0: no budget. Not a parameter: set by the
					       * caller (the collector's --query-memory-mb) */
	const char *type;		      /* type=: the store's type (store_query.type);
					       * NULL: cpu */
	const struct ptype *ptype;	      /* type='s row of the table (never NULL after
					       * query_parse: cpu by default) */
	const char *function;		      /* series: function=REGEX (fnseries.h); NULL:
					       * the selection's total alone */
	regex_t function_re;		      /* function compiled; query_free() frees it */
	size_t breakdown;		      /* series: breakdown=N, the N heaviest
					       * functions' self samples per step
					       * (fnseries.h); 0: none */
	char *owned[2 * QUERY_MAX_WHERE * 3]; /* strings split out of where=K=V */
	size_t nowned;
};

/* Looks up a parameter's values: returns the i-th value of name, NULL past the
 * last. Lets HTTP arguments and command-line options feed one parser. */
typedef const char *(*query_param_fn)(void *ctx, const char *name, size_t i);

/* The name of the i-th parameter given, in order, repeats included; NULL past
 * the last: how query_parse() finds names it does not know. */
typedef const char *(*query_name_fn)(void *ctx, size_t i);

/* A source of parameters: both callbacks over one ctx. */
struct query_params {
	query_param_fn get;
	query_name_fn name_at;
	void *ctx;
};

/* A list of name/value parameters (the CLI's options, a fuzzer's input) and the
 * query_param_fn that reads it (ctx: the list). Strings are borrowed. */
#define QUERY_MAX_ARGS 64

struct query_args {
	const char *names[QUERY_MAX_ARGS], *values[QUERY_MAX_ARGS];
	size_t n;
};

/* Appends name=value; false when the list is full (QUERY_MAX_ARGS). */
bool query_args__add(struct query_args *a, const char *name, const char *value);
const char *query_args__get(void *ctx, const char *name, size_t i);
const char *query_args__name_at(void *ctx, size_t i);

/* Fills q for kind from the parameters. Returns 0, or -EINVAL with a one-line
 * reason in why: a parameter kind does not take ("unknown parameter 'frm'
 * (flamegraph takes from, to, ...)"; limit is top's only, step series' only), a
 * single-valued one given twice, a diff without all four of before_from,
 * before_to, after_from, after_to, a bad time, to <= from, an unknown format or
 * type, a bad where. */
int query_parse(struct query *q, enum query_kind kind, const struct query_params *p, int64_t now,
		char *why, size_t whylen);
void query_free(struct query *q);

/* Checks q's where keys (diff: each side's, in its range) and labels/NAME/values'
 * NAME: a key no label set with samples in q's range has, and none in the whole
 * store either, is a typo: -EINVAL with "unknown label key 'srvice' (keys in
 * range: comm, exe, ...)" (or "keys stored:" when the range is empty) in why. A
 * key in use at other times is not: the answer is empty ("nothing", exit 0, as
 * against "wrong", exit 2). Costs one store probe per key (store__label_key_used:
 * about one row when the key is in use), two for a key not in the range, and a
 * read of the keys for the reason (at most 1024 looked at; past that the check
 * passes). Returns 0, -EINVAL or a store error. Calls on s must be serialized,
 * as for query_load(). */
int query_check_keys(struct store *s, const struct query *q, char *why, size_t whylen);

/* A query's answer in memory: what query_load() read from the store, ready for
 * query_render(), which no longer needs the store. The split lets a server hold
 * its store lock only while reading, never while rendering (a rendering can be
 * hundreds of times larger than what was read). */
struct query_answer;

/* What a store holds for each distinct stack while it merges and hands them out
 * (SQLite's hash slot at half load, its entry and handout: 64 bytes; ClickHouse's
 * sums and answer rows less), counted against q->max_memory. */
#define QUERY_STACK_BYTES 64

/* Reads what q needs from s into *out (the flame tree of flamegraph, diff and
 * top; the points of series, at most one per step; the names of labels). Calls on
 * s must be serialized by the caller, as for every store call. max_bytes caps the
 * label names kept in memory (0: no cap); the other answers are bounded by what
 * is stored and by query_parse()'s caps. q->max_memory (when set) bounds a flame
 * tree's working memory: the store is asked for at most max_memory /
 * QUERY_STACK_BYTES distinct stacks, and the tree (flame__bytes) plus the stacks
 * handed out are checked after each stack and before the public tree is made, so
 * the query stops before it spends the budget. q must outlive *out. Returns 0,
 * -E2BIG (past max_bytes), -ENOBUFS (past q->max_memory), -EINVAL, -ENOMEM or a
 * store error, with a one-line reason in why; *out is written only on success. */
int query_load(struct store *s, const struct query *q, size_t max_bytes, struct query_answer **out,
	       char *why, size_t whylen);

/* Writes the answer in its query's format to out and sets *content_type. Touches
 * no store: safe without the store's lock, on any thread (one answer at a time).
 * Returns 0, -EIO when out reports a write error, or another -errno, with a
 * reason in why. */
int query_render(const struct query_answer *a, FILE *out, const char **content_type, char *why,
		 size_t whylen);

/* Frees an answer. Accepts NULL. */
void query_answer__free(struct query_answer *a);

/* query_load(), query_render() and query_answer__free() in one call (no cap):
 * for callers that own their store, like the CLI's --db mode. */
int query_run(struct store *s, const struct query *q, FILE *out, const char **content_type,
	      char *why, size_t whylen);

#endif

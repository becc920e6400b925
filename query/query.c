/* Query execution and rendering (parsing is parse.c); see query.h. query_load()
 * reads what an answer needs from the store, its context (query_int.h, context.c)
 * included; query_render() writes it in the query's format, context and units
 * first: titles, JSON "meta", "# " header lines before a table. */
#include "query/query.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/frame.h"
#include "common/ptype.h"
#include "common/reason.h"
#include "query/flame.h"
#include "query/fnseries.h"
#include "query/query_int.h"
#include "query/render_folded.h"
#include "query/render_html.h"
#include "query/render_json.h"
#include "query/render_pprof.h"
#include "query/render_speedscope.h"
#include "query/render_svg.h"
#include "query/render_text.h"
#include "query/shortname.h"
#include "store/store.h"

static struct store_query store_query(int64_t from, int64_t to, const struct query_where *w,
				      const char *type)
{
	return (struct store_query){ .from = from,
				     .to = to,
				     .keys = w->keys,
				     .values = w->values,
				     .nlabels = w->n,
				     .type = type };
}

/* A flame tree's store query with the stacks q's memory budget allows: a store
 * holds about QUERY_STACK_BYTES a distinct stack while it merges and hands them
 * out. */
static struct store_query stacks_query(const struct query *q, int64_t from, int64_t to,
				       const struct query_where *w)
{
	struct store_query sq = store_query(from, to, w, q->type);

	if (q->max_memory)
		sq.max_stacks = q->max_memory / QUERY_STACK_BYTES ?: 1;
	return sq;
}

struct side {
	struct flame *f;
	unsigned side;
	size_t max_memory; /* the query's (0: none) */
	size_t nstacks;	   /* handed to the tree so far, both sides */
};

/* Whether the tree and the stacks handed so far are over s's budget. */
static bool over_budget(const struct side *s, size_t more)
{
	return s->max_memory &&
	       flame__bytes(s->f) + s->nstacks * QUERY_STACK_BYTES + more > s->max_memory;
}

/* Called through store_stack_ids: with the store's frame ids, which the tree
 * keys frames on. */
static int add_stack(void *ctx, const struct frame *frames, const uint64_t *ids, size_t nframes,
		     uint64_t count)
{
	struct side *s = ctx;
	int err = flame__add_frames_ids(s->f, frames, ids, nframes, count, s->side);

	s->nstacks++;
	/* checked after each stack: a stack adds at most its frames' nodes and
	 * texts, so the query stops within a stack of its budget */
	return err ?: over_budget(s, 0) ? -ENOBUFS : 0;
}

/* The formats rendered from the compact tree alone (flame__view). */
static bool lean_format(const char *format)
{
	return strcmp(format, "json") == 0 || strcmp(format, "folded") == 0;
}

/* Loads the query's samples into a tree (both sides for a diff). */
static int load_flame(struct store *st, const struct query *q, struct flame **out)
{
	struct store_query sq;
	struct side s = { .max_memory = q->max_memory };
	struct store_stack_ids with_ids = { add_stack, &s };
	/* pprof always keeps lines: its readers aggregate by function themselves */
	bool lines = q->lines || strcmp(q->format, "pprof") == 0;
	int err = flame__new_granular(&s.f, lines ? FLAME_BY_LINE : FLAME_BY_FUNCTION);

	if (err)
		return err;
	if (q->kind == QUERY_DIFF) {
		s.side = 0;
		sq = stacks_query(q, q->before_from, q->before_to, &q->before_where);
		err = store__query_stacks(st, &sq, store_stack_ids, &with_ids);
		s.side = 1;
		sq = stacks_query(q, q->after_from, q->after_to, &q->after_where);
		err = err ?: store__query_stacks(st, &sq, store_stack_ids, &with_ids);
	} else {
		s.side = 0;
		sq = stacks_query(q, q->from, q->to, &q->where);
		err = store__query_stacks(st, &sq, store_stack_ids, &with_ids);
	}
	/* JSON and folded read the compact tree; the others, and folded of a tree
	 * whose stacks need sorting, the public one */
	err = err ?: flame__finish_lean(s.f);
	if (!err && (q->kind == QUERY_TOP || !lean_format(q->format) ||
		     (strcmp(q->format, "folded") == 0 && flame__has_twins(s.f))))
		err = over_budget(&s, flame__public_bytes(s.f)) ? -ENOBUFS : flame__finish(s.f);
	if (err) {
		flame__free(s.f);
		return err;
	}
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
	uint64_t matched; /* function=: the samples of matching stacks */
};

struct query_answer {
	const struct query *q;
	struct query_context ctx; /* range, selection, period, totals */
	char *meta;		  /* ctx as JSON text (query_int.h) */
	char title[1024], subtitle[1024];
	struct flame *tree;	      /* flamegraph, diff, top */
	struct series_point *points;  /* series: buckets with samples, in time order */
	struct fnseries_mix mix;      /* series with breakdown= */
	int64_t step;		      /* series: q->step, or the shortest window's
				       * length when that is longer (step_text()) */
	struct store_windows windows; /* series: the range's, read for the step */
	size_t npoints, points_cap;
	bool has_type[PTYPE_MAX]; /* types: the table's i-th type has data in range */
	uint64_t gauge_total;	  /* series of a gauge: the range's mean (its total) */
	char *names;		  /* labels: NUL-terminated names, one after another */
	size_t names_len, names_cap, nnames;
	size_t max_bytes; /* cap on names_len; 0: none */
};

static int out_tree_json(const struct query_answer *a, FILE *out)
{
	return render_json_tree(a->tree, a->meta, a->q->max_nodes, out);
}

static int out_text(const struct query_answer *a, FILE *out)
{
	struct render_text_options o = { .period_ns = a->ctx.period_ns,
					 .diff = a->q->kind == QUERY_DIFF,
					 .type = query_context__cpu(&a->ctx) ? NULL : a->ctx.type };

	query_context__header(&a->ctx, out);
	return render_text(a->tree, &o, out);
}

static int out_folded(const struct query_answer *a, FILE *out)
{
	return render_folded(a->tree, a->q->kind == QUERY_DIFF, out);
}

static int out_svg(const struct query_answer *a, FILE *out)
{
	struct render_svg_options o = { .title = a->title,
					.subtitle = a->subtitle,
					.period_ns = a->ctx.period_ns,
					.type = query_context__cpu(&a->ctx) ? NULL : a->ctx.type,
					.diff = a->q->kind == QUERY_DIFF };

	return render_svg(a->tree, &o, out);
}

static int out_html(const struct query_answer *a, FILE *out)
{
	struct render_html_options o = { .title = a->title,
					 .subtitle = a->subtitle,
					 .period_ns = a->ctx.period_ns,
					 .unit = query_context__cpu(&a->ctx)
							 ? NULL
							 : ptype__unit_name(a->ctx.type->unit),
					 .diff = a->q->kind == QUERY_DIFF };

	return render_html(a->tree, &o, out);
}

static int out_pprof(const struct query_answer *a, FILE *out)
{
	const struct query_context *c = &a->ctx;
	const struct query *q = a->q;
	const char *comments[2] = { a->title, NULL };
	char hz[32], period[sizeof(c->periods) + 128];
	void *buf = NULL;
	size_t len = 0;
	int err;

	/* The one period of the range; with several, the most common (the answer's
	 * cpu/nanoseconds values are then off for the others' samples); unknown: 99 Hz.
	 * A comment says which when there is not one known period; the title always. */
	snprintf(hz, sizeof(hz), "%.4g Hz", 1e9 / (double)c->pprof_period_ns);
	if (!c->period_ns && c->periods[0]) {
		bool mixed = strchr(c->periods, ',') || strstr(c->periods, " more");
		bool listed = strstr(c->periods, hz) != NULL; /* else the 99 Hz guess */

		if (mixed)
			snprintf(period, sizeof(period),
				 "mixed sampling periods %s: period is %s %s", c->periods,
				 listed ? "the most common," : "assumed", hz);
		else
			snprintf(period, sizeof(period),
				 "sampling period unknown: period is assumed %s", hz);
		comments[1] = period;
	}
	/* a type other than cpu: its name and unit (pprof says "count" of objects) */
	err = !query_context__cpu(c)
		      ? render_pprof_typed(a->tree, c->type->name,
					   c->type->unit == PTYPE_UNIT_OBJECTS
						   ? "count"
						   : ptype__unit_name(c->type->unit),
					   render_pprof_seconds_to_ns(q->from),
					   render_pprof_duration_ns(q->from, q->to), comments, 1,
					   &buf, &len)
		      : render_pprof_commented(a->tree, c->pprof_period_ns,
					       render_pprof_seconds_to_ns(q->from),
					       render_pprof_duration_ns(q->from, q->to), comments,
					       comments[1] ? 2 : 1, &buf, &len);
	if (!err && fwrite(buf, 1, len, out) != len)
		err = -EIO;
	free(buf);
	return err;
}

static int out_speedscope(const struct query_answer *a, FILE *out)
{
	return render_speedscope_unit(a->tree, a->title, ptype__unit_name(a->ctx.type->unit), out);
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

/* A count's CPU time for a table column, one word so that awk and sscanf read a
 * row as before ("12.3s"), "-" when not shown. */
static void cpu_cell(const struct query_context *c, uint64_t samples, char *buf, size_t len)
{
	double s = query_context__cpu_seconds(c, samples);

	if (c->no_cpu)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, s >= 100 ? "%.0fs" : s >= 10 ? "%.1fs" : "%.2fs", s);
}

/* A value of the answer's type for a table column, one ASCII word with its unit
 * (ptype__format's cell: "850us", "12.3ms", "200MiB", "1234"), so that awk and
 * sscanf read a row; the JSON formats give the exact numbers. */
static void value_cell(const struct query_context *c, uint64_t v, char *buf, size_t len)
{
	ptype__format(c->type->unit, (double)v, PTYPE_CELL, buf, len);
}

static const char *unit_column(const struct query_context *c)
{
	return ptype__unit_column(c->type->unit);
}

/* A series column of the type's values: SAMPLES, OFF_CPU (offcpu: time off CPU),
 * else the unit's word. */
static const char *series_column(const struct query_context *c)
{
	return query_context__offcpu(c) ? "OFF_CPU" : unit_column(c);
}

/* Types other than cpu: columns named by their unit (SELF_TIME, SELF_BYTES...),
 * values humanised in it. */
static void out_top_typed(const struct query_context *c, const struct flame_function *fns, size_t n,
			  uint64_t total, FILE *out)
{
	char self[32], all[32], name[SHORTNAME_BUF], hs[32], ht[32];
	size_t i;
	int w;

	snprintf(hs, sizeof(hs), "SELF_%s", unit_column(c));
	snprintf(ht, sizeof(ht), "TOTAL_%s", unit_column(c));
	w = (int)strlen(ht) > 10 ? (int)strlen(ht) : 10;
	fprintf(out, "%*s %7s %*s %7s  %s\n", w, hs, "SELF%", w, ht, "TOTAL%", "FUNCTION");
	for (i = 0; i < n; i++) {
		value_cell(c, fns[i].self, self, sizeof(self));
		value_cell(c, fns[i].total, all, sizeof(all));
		fprintf(out, "%*s %6.2f%% %*s %6.2f%%  %s\n", w, self,
			total ? 100.0 * (double)fns[i].self / (double)total : 0.0, w, all,
			total ? 100.0 * (double)fns[i].total / (double)total : 0.0,
			shortname_of(fns[i].name, fns[i].kind, name, sizeof(name)));
	}
}

static int out_top_table(const struct query_answer *a, FILE *out)
{
	uint64_t total = flame__total(a->tree, 0);
	struct flame_function *fns = NULL;
	char self_cpu[32], total_cpu[32], name[SHORTNAME_BUF];
	size_t n = 0, i;
	int err = top_functions(a, &fns, &n);

	if (err)
		return err;
	query_context__header(&a->ctx, out);
	if (!query_context__cpu(&a->ctx)) {
		out_top_typed(&a->ctx, fns, n, total, out);
		free(fns);
		return ferror(out) ? -EIO : 0;
	}
	fprintf(out, "%8s %9s %7s %8s %9s %7s  %s\n", "SELF", "SELF_CPU", "SELF%", "TOTAL",
		"TOTAL_CPU", "TOTAL%", "FUNCTION");
	for (i = 0; i < n; i++) {
		cpu_cell(&a->ctx, fns[i].self, self_cpu, sizeof(self_cpu));
		cpu_cell(&a->ctx, fns[i].total, total_cpu, sizeof(total_cpu));
		fprintf(out, "%8llu %9s %6.2f%% %8llu %9s %6.2f%%  %s\n",
			(unsigned long long)fns[i].self, self_cpu,
			total ? 100.0 * (double)fns[i].self / (double)total : 0.0,
			(unsigned long long)fns[i].total, total_cpu,
			total ? 100.0 * (double)fns[i].total / (double)total : 0.0,
			shortname_of(fns[i].name, fns[i].kind, name, sizeof(name)));
	}
	free(fns);
	return ferror(out) ? -EIO : 0;
}

static int out_top_json(const struct query_answer *a, FILE *out)
{
	struct flame_function *fns = NULL;
	size_t n = 0;
	int err = top_functions(a, &fns, &n);

	err = err ?: render_json_top(fns, n, flame__total(a->tree, 0), a->meta, out);
	free(fns);
	return err;
}

struct series_ctx {
	const struct query *q;
	const struct query_context *c;
	int64_t step; /* the answer's (query_answer.step) */
	FILE *out;
	int64_t next; /* the next bucket to write */
	bool json, first;
};

/* Keeps one point of the store's series; at most one per step of the range. */
static int keep_fn_point(void *ctx, int64_t bucket, uint64_t count, uint64_t matched)
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
	a->points[a->npoints++] = (struct series_point){ bucket, count, matched };
	return 0;
}

static int keep_point(void *ctx, int64_t bucket, uint64_t count)
{
	return keep_fn_point(ctx, bucket, count, 0);
}

static int add_total(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	uint64_t *sum = ctx;

	(void)frames;
	(void)nframes;
	*sum = count > UINT64_MAX - *sum ? UINT64_MAX : *sum + count;
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

/* A series' step: the one asked, raised to the shortest stored window's length
 * in range when that is longer. A step shorter than a window cannot be honest:
 * the window's samples all fall into the step it starts in, and that step's
 * CPU time over its length reads as several times the host's cores (1 s steps
 * over 10 s windows showed 19.9 cores on a 2-core host). */
static int series_step(struct store *st, const struct store_query *sq, int64_t asked,
		       struct store_windows *w, int64_t *step)
{
	int err = store__windows(st, sq, w);

	*step = asked;
	if (!err && w->nwindows && w->min_seconds > asked)
		*step = w->min_seconds;
	return err;
}

/* The step for a header: JSON '"step":10,' (and '"requested_step":1,' when
 * raised); text "10 s", or "10 s (raised from 1 s: ...)". */
static void step_text(const struct query_answer *a, bool json, char *buf, size_t len)
{
	long long step = (long long)a->step, asked = (long long)a->q->step;

	if (json && step != asked)
		snprintf(buf, len, "\"step\":%lld,\"requested_step\":%lld,", step, asked);
	else if (json)
		snprintf(buf, len, "\"step\":%lld,", step);
	else if (step != asked)
		snprintf(buf, len,
			 "%lld s (raised from %lld s: no step is shorter than the windows, "
			 "%lld s here)",
			 step, asked, step);
	else
		snprintf(buf, len, "%lld s", step);
}

/* The matching samples' part of a step's, in percent (0 for an empty step). */
static double share(uint64_t matched, uint64_t count)
{
	return count ? 100.0 * (double)matched / (double)count : 0.0;
}

/* JSON: [epoch, samples] (function=: [epoch, samples, matching]); table: UTC
 * time, samples, CPU cores over the step (samples x period / step; "-" when the
 * period is mixed or unknown), and with function= the matching samples and
 * their share. */
static void write_point(struct series_ctx *c, int64_t t, uint64_t count, uint64_t matched)
{
	char when[32];

	if (c->json && c->q->function) {
		fprintf(c->out, "%s[%lld,%llu,%llu]", c->first ? "" : ",", (long long)t,
			(unsigned long long)count, (unsigned long long)matched);
	} else if (c->json) {
		fprintf(c->out, "%s[%lld,%llu]", c->first ? "" : ",", (long long)t,
			(unsigned long long)count);
	} else if (c->q->function) {
		query_context__utc(t, true, when, sizeof(when));
		if (!query_context__cpu(c->c)) {
			char off[32], hit[32];

			value_cell(c->c, count, off, sizeof(off));
			value_cell(c->c, matched, hit, sizeof(hit));
			fprintf(c->out, "%-19s %10s %10s %6.2f%%\n", when, off, hit,
				share(matched, count));
		} else {
			fprintf(c->out, "%-19s %10llu %10llu %6.2f%%\n", when,
				(unsigned long long)count, (unsigned long long)matched,
				share(matched, count));
		}
	} else {
		query_context__utc(t, true, when, sizeof(when));
		if (query_context__offcpu(c->c)) {
			char off[32];

			value_cell(c->c, count, off, sizeof(off));
			fprintf(c->out, "%-19s %10s %8.3f\n", when, off,
				(double)count / 1e9 / (double)c->step);
		} else if (!query_context__cpu(c->c)) {
			char v[32];

			value_cell(c->c, count, v, sizeof(v));
			fprintf(c->out, "%-19s %10s\n", when, v);
		} else if (c->c->no_cpu)
			fprintf(c->out, "%-19s %10llu %8s\n", when, (unsigned long long)count, "-");
		else
			fprintf(c->out, "%-19s %10llu %8.3f\n", when, (unsigned long long)count,
				query_context__cpu_seconds(c->c, count) / (double)c->step);
	}
	c->first = false;
}

/* Buckets with no samples are written as zeros: a gap is information. */
static int series_point(void *ctx, int64_t bucket, uint64_t count, uint64_t matched)
{
	struct series_ctx *c = ctx;

	for (; c->next < bucket; c->next += c->step)
		write_point(c, c->next, 0, 0);
	write_point(c, bucket, count, matched);
	c->next = bucket + c->step;
	return 0;
}

static int write_series(const struct query_answer *a, FILE *out, bool json)
{
	const struct query *q = a->q;
	struct series_ctx c = { .q = q,
				.c = &a->ctx,
				.step = a->step,
				.out = out,
				.next = q->from,
				.first = true,
				.json = json };
	char step[160];
	int err = 0;
	size_t i;

	step_text(a, json, step, sizeof(step));
	if (c.json) {
		fprintf(out, "{\"meta\":%s,\"from\":%lld,\"to\":%lld,%s", a->meta,
			(long long)q->from, (long long)q->to, step);
		if (q->function) {
			fputs("\"function\":", out);
			render_json_string(out, q->function);
			fputs(",", out);
		}
		fputs("\"points\":[", out);
	} else if (q->function) {
		query_context__header(&a->ctx, out);
		fprintf(out, "# step %s; MATCHED: stacks with a function matching /%s/\n", step,
			q->function);
		fprintf(out, "%-19s %10s %10s %7s\n", "TIME (UTC)", series_column(&a->ctx),
			"MATCHED", "SHARE");
	} else {
		query_context__header(&a->ctx, out);
		if (query_context__offcpu(&a->ctx)) {
			fprintf(out, "# step %s; WAITING = time off CPU / step (threads)\n", step);
			fprintf(out, "%-19s %10s %8s\n", "TIME (UTC)", "OFF_CPU", "WAITING");
		} else if (!query_context__cpu(&a->ctx)) {
			fprintf(out, "# step %s; %s: %s\n", step, unit_column(&a->ctx),
				ptype__is_gauge(a->ctx.type)
					? "the mean of the step's snapshots, per label set, summed"
					: "the step's sum");
			fprintf(out, "%-19s %10s\n", "TIME (UTC)", unit_column(&a->ctx));
		} else {
			fprintf(out, "# step %s; CORES = samples x period / step\n", step);
			fprintf(out, "%-19s %10s %8s\n", "TIME (UTC)", "SAMPLES", "CORES");
		}
	}
	for (i = 0; i < a->npoints; i++)
		series_point(&c, a->points[i].bucket, a->points[i].count, a->points[i].matched);
	for (; !err && c.next < q->to; c.next += a->step)
		write_point(&c, c.next, 0, 0);
	if (c.json)
		fprintf(out, "]}\n");
	return err ?: (ferror(out) ? -EIO : 0);
}

/* One step of a breakdown: JSON [t, total, c1, .., ck]; table: UTC time, the
 * step's samples (off-CPU: time) and each function's share of it. */
static void write_mix_point(const struct query_answer *a, FILE *out, bool json, int64_t t,
			    uint64_t total, const uint64_t *counts)
{
	size_t k = a->mix.k, j;
	char when[32], off[32];

	if (json) {
		fprintf(out, "[%lld,%llu", (long long)t, (unsigned long long)total);
		for (j = 0; j < k; j++)
			fprintf(out, ",%llu", (unsigned long long)(counts ? counts[j] : 0));
		fputs("]", out);
		return;
	}
	query_context__utc(t, true, when, sizeof(when));
	if (!query_context__cpu(&a->ctx)) {
		value_cell(&a->ctx, total, off, sizeof(off));
		fprintf(out, "%-19s %10s", when, off);
	} else {
		fprintf(out, "%-19s %10llu", when, (unsigned long long)total);
	}
	for (j = 0; j < k; j++)
		fprintf(out, " %6.1f%%", share(counts ? counts[j] : 0, total));
	fputs("\n", out);
}

/* A breakdown: the followed functions named once (JSON "breakdown", the table's
 * "# F1 = ..." lines), then every step, empty ones as zeros. */
static int write_mix(const struct query_answer *a, FILE *out, bool json)
{
	const struct query *q = a->q;
	const struct fnseries_mix *m = &a->mix;
	bool off = query_context__offcpu(&a->ctx), cpu = query_context__cpu(&a->ctx);
	char step[160];
	size_t i = 0, j;
	int64_t t;

	step_text(a, json, step, sizeof(step));
	if (json) {
		fprintf(out, "{\"meta\":%s,\"from\":%lld,\"to\":%lld,%s\"breakdown\":[", a->meta,
			(long long)q->from, (long long)q->to, step);
		for (j = 0; j < m->k; j++) {
			fputs(j ? ",{\"name\":" : "{\"name\":", out);
			render_json_string_n(out, m->names[j], m->name_lens[j]);
			fprintf(out, ",\"kind\":\"%s\",\"text\":",
				render_json_kind((uint8_t)m->kinds[j]));
			render_json_string(out, m->names[j]);
			fputs("}", out);
		}
		fputs("],\"points\":[", out);
	} else {
		query_context__header(&a->ctx, out);
		fprintf(out,
			"# step %s; F1..F%zu: the heaviest functions by self %s, each one's "
			"share of the step\n",
			step, m->k,
			off   ? "time off CPU"
			: cpu ? "samples"
			      : ptype__unit_name(a->ctx.type->unit));
		for (j = 0; j < m->k; j++)
			fprintf(out, "# F%zu = %s\n", j + 1, m->names[j]);
		fprintf(out, "%-19s %10s", "TIME (UTC)", series_column(&a->ctx));
		for (j = 0; j < m->k; j++) {
			char col[24];

			snprintf(col, sizeof(col), "F%zu", j + 1);
			fprintf(out, " %7s", col);
		}
		fputs("\n", out);
	}
	for (t = q->from; t < q->to; t += a->step) {
		bool here = i < m->npoints && m->buckets[i] == t;

		if (json && t != q->from)
			fputs(",", out);
		write_mix_point(a, out, json, t, here ? m->totals[i] : 0,
				here ? m->counts + i * m->k : NULL);
		i += here;
	}
	if (json)
		fputs("]}\n", out);
	return ferror(out) ? -EIO : 0;
}

static int out_series_table(const struct query_answer *a, FILE *out)
{
	return a->q->breakdown ? write_mix(a, out, false) : write_series(a, out, false);
}

static int out_series_json(const struct query_answer *a, FILE *out)
{
	return a->q->breakdown ? write_mix(a, out, true) : write_series(a, out, true);
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

/* types: the types with data, in the table's order; JSON objects or a table. */
static int write_types(const struct query_answer *a, FILE *out, bool json)
{
	size_t i;
	bool first = true;

	if (json)
		fputc('[', out);
	else
		fprintf(out, "%-14s %-12s %-12s %s\n", "TYPE", "UNIT", "AGGREGATION", "TITLE");
	for (i = 0; i < ptype__count(); i++) {
		const struct ptype *t = ptype__at(i);

		if (!a->has_type[i])
			continue;
		if (json)
			fprintf(out,
				"%s{\"name\":\"%s\",\"unit\":\"%s\",\"aggregation\":\"%s\","
				"\"title\":",
				first ? "" : ",", t->name, ptype__unit_name(t->unit),
				ptype__agg_name(t->agg));
		else
			fprintf(out, "%-14s %-12s %-12s %s\n", t->name, ptype__unit_name(t->unit),
				ptype__agg_name(t->agg), t->title);
		if (json) {
			render_json_string(out, t->title);
			fputc('}', out);
		}
		first = false;
	}
	if (json)
		fputs("]\n", out);
	return ferror(out) ? -EIO : 0;
}

static int out_types_json(const struct query_answer *a, FILE *out)
{
	return write_types(a, out, true);
}

static int out_types_table(const struct query_answer *a, FILE *out)
{
	return write_types(a, out, false);
}

/* Marks a type the store has data of (store__types). */
static int keep_type(void *ctx, const char *name)
{
	struct query_answer *a = ctx;

	for (size_t i = 0; i < ptype__count() && i < PTYPE_MAX; i++)
		if (!strcmp(ptype__at(i)->name, name))
			a->has_type[i] = true;
	return 0;
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
	{ "text", PROFILES, TEXT, out_text },
	{ "json", KIND(QUERY_TOP), JSON, out_top_json },
	{ "table", KIND(QUERY_TOP), TEXT, out_top_table },
	{ "json", KIND(QUERY_SERIES), JSON, out_series_json },
	{ "table", KIND(QUERY_SERIES), TEXT, out_series_table },
	{ "json", KIND(QUERY_LABELS) | KIND(QUERY_LABEL_VALUES), JSON, out_labels },
	{ "json", KIND(QUERY_TYPES), JSON, out_types_json },
	{ "table", KIND(QUERY_TYPES), TEXT, out_types_table },
};

const struct query_format *query_format__find(enum query_kind kind, const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if ((formats[i].kinds & KIND(kind)) && strcmp(formats[i].name, name) == 0)
			return &formats[i];
	return NULL;
}

/* The answer's context: the store's windows, the totals, and the texts every
 * format takes from it (computed once, here, while the store is at hand). */
static int load_context(struct store *st, struct query_answer *a)
{
	struct query_context *c = &a->ctx;
	uint64_t totals[2] = { 0, 0 };
	size_t i;
	int err;

	if (a->tree) {
		totals[0] = flame__total(a->tree, 0);
		totals[1] = a->q->kind == QUERY_DIFF ? flame__total(a->tree, 1) : 0;
	} else if (ptype__is_gauge(a->q->ptype)) {
		totals[0] = a->gauge_total; /* not the sum of its steps' means */
	} else {
		for (i = 0; i < a->npoints; i++)
			totals[0] = a->points[i].count > UINT64_MAX - totals[0]
					    ? UINT64_MAX
					    : totals[0] + a->points[i].count;
	}
	/* a series read its windows for its step: the context takes them */
	err = query_context__load(st, a->q, totals, a->q->kind == QUERY_SERIES ? &a->windows : NULL,
				  c);
	if (err)
		return err;
	query_context__title(c, a->title, sizeof(a->title));
	query_context__subtitle(c, a->subtitle, sizeof(a->subtitle));
	return query_context__json(c, &a->meta);
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
		sq = stacks_query(q, q->from, q->to, &q->where);
		err = series_step(st, &sq, q->step, &a->windows, &a->step);
		if (err)
			break;
		if (q->breakdown)
			err = fnseries__load_mix(st, &sq, a->step, q->breakdown, &a->mix);
		else if (q->function)
			err = fnseries__load(st, &sq, a->step, &q->function_re, keep_fn_point, a);
		else
			err = store__query_series(st, &sq, a->step, keep_point, a);
		for (size_t i = 0; !err && i < a->mix.npoints; i++) /* the context's totals */
			err = keep_point(a, a->mix.buckets[i], a->mix.totals[i]);
		/* a gauge's total is the range's mean, as a flame graph's of it */
		if (!err && ptype__is_gauge(q->ptype))
			err = store__query_stacks(st, &sq, add_total, &a->gauge_total);
		break;
	case QUERY_LABELS:
		sq = store_query(q->from, q->to, &q->where, q->type);
		err = store__labels(st, &sq, keep_name, a);
		break;
	case QUERY_LABEL_VALUES:
		sq = store_query(q->from, q->to, &q->where, q->type);
		err = store__label_values(st, q->label, &sq, keep_name, a);
		break;
	case QUERY_TYPES:
		sq = store_query(q->from, q->to, &q->where, NULL);
		err = store__types(st, &sq, keep_type, a);
		break;
	}
	if (!err && q->kind != QUERY_LABELS && q->kind != QUERY_LABEL_VALUES &&
	    q->kind != QUERY_TYPES)
		err = load_context(st, a);
	if (err == -E2BIG)
		reason_fail(why, whylen, err,
			    "more than %zu MiB of label names: narrow the time range",
			    max_bytes >> 20);
	else if (err == -ENOBUFS)
		reason_fail(why, whylen, err,
			    "the query needs more than its %zu %s of working memory: narrow the "
			    "time range or select fewer labels with where=",
			    q->max_memory >> 20 ? q->max_memory >> 20 : q->max_memory >> 10,
			    q->max_memory >> 20 ? "MiB" : "KiB");
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
	free(a->meta);
	free(a->points);
	fnseries_mix__free(&a->mix);
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

/* What query/parse.c, query/query.c and query/context.c share and nobody else
 * needs: the output formats' table (query.c) as parse.c looks a format up, the
 * caps both enforce, and an answer's context (context.c).
 *
 * The context of an answer, computed once (query_load) and written by every
 * format: SVG and HTML get it as title and subtitle (and the period), JSON as the
 * "meta" member, the tables and the text tree as two "# " lines before the table,
 * pprof its sampling period, speedscope the title as its name. The meta object:
 *   {"type":"cpu","unit":"samples","aggregation":"sum"|"average" (common/ptype.h's
 *    row of the type: a gauge's values are averages), "period_ns":N|null (offcpu: see
 *    query_context__offcpu; the other types: null),
 *    "no_cpu_reason":"..." (only when a cpu answer does not show CPU time),
 *    "periods":"99 Hz" (the distinct periods, readable),
 *    "granularity":"function"|"line" (null for series),
 *    "from":T,"to":T,"effective_from":T|null,"effective_to":T|null,
 *    "where":["comm=api",...],"total":N,"cpu_seconds":X|null,
 *    "cores_per_sample":X|null (series: a point's CPU cores are its samples x this)}
 * and for a diff the per-side keys (from .. cpu_seconds) in "before":{..} and
 * "after":{..} instead. Times are unix seconds in JSON, UTC text elsewhere. */
#ifndef SMOLDER_QUERY_INT_H
#define SMOLDER_QUERY_INT_H

#include <stdio.h>

#include "common/ptype.h"
#include "query/query.h"
#include "store/store.h"

#define QUERY_MAX_POINTS 100000 /* series buckets in one answer */

/* The format named name that queries of kind offer, NULL if none. */
const struct query_format *query_format__find(enum query_kind kind, const char *name);

/* One side of an answer: what was asked and what the store holds for it. */
struct query_side {
	int64_t from, to;		 /* requested, unix seconds */
	const struct query_where *where; /* the selection (borrowed from the query) */
	struct store_windows w;		 /* the stored windows in [from, to) */
	uint64_t total;			 /* samples (set by query.c once loaded) */
	/* When the side has no samples and a where value matches no label set in its
	 * range: "no comm=pyhton3 in range (comm: python3, sshd)"; else "". */
	char empty_why[384];
};

struct query_context {
	const struct query *q;
	const struct ptype *type;  /* q's type (cpu when q has none) */
	struct query_side side[2]; /* side[1]: a diff's after */
	unsigned nsides;
	uint64_t period_ns;	  /* the one period of every window; 0 when mixed/unknown */
	uint64_t pprof_period_ns; /* the most common period, else 99 Hz (pprof needs one) */
	const char *no_cpu;	  /* why CPU time is not shown (static text); NULL: shown */
	char periods[160];	  /* "99 Hz", "99 Hz, 49 Hz", "unknown" */
};

/* Fills c for q from the store's windows (store__windows per side) and the
 * answer's totals in samples (totals[1]: a diff's after side, else 0). known:
 * side 0's windows when the caller has read them already (a series does, for its
 * step), else NULL. Returns 0 or a store error. */
int query_context__load(struct store *s, const struct query *q, const uint64_t totals[2],
			const struct store_windows *known, struct query_context *c);

/* Whether the answer is of the offcpu type: values are nanoseconds off CPU, the
 * period is 1 ns, the JSON says "type":"offcpu","unit":"nanoseconds" and gives
 * "offcpu_seconds" instead of "cpu_seconds", the text says "s off CPU". */
bool query_context__offcpu(const struct query_context *c);

/* Whether the answer is of the cpu type: values are samples, a period makes them
 * CPU time. Every other type but offcpu has no period (period_ns 0, pprof's 1,
 * no_cpu set, "cpu_seconds":null) and states its totals in its unit. */
bool query_context__cpu(const struct query_context *c);

/* samples x period in seconds (0 when c->period_ns is 0). */
double query_context__cpu_seconds(const struct query_context *c, uint64_t samples);

/* "CPU flame graph · comm=api · 2026-11-30 23:40:00–23:45:00 UTC" */
void query_context__title(const struct query_context *c, char *buf, size_t len);

/* "12,345 samples · 124.7 s CPU (0.42 cores avg) · 99 Hz · windows 23:40:00–23:45:10
 * UTC (snapped to 10 s windows)"; the reason instead of CPU time when not shown. */
void query_context__subtitle(const struct query_context *c, char *buf, size_t len);

/* The title and subtitle as two "# " lines, for the tables and the text tree. */
void query_context__header(const struct query_context *c, FILE *out);

/* The meta object above as malloc'd JSON text in *out. Returns 0 or -ENOMEM. */
int query_context__json(const struct query_context *c, char **out);

/* "2026-11-30 23:44:50" (UTC); with date false only "23:44:50". */
void query_context__utc(int64_t t, bool date, char *buf, size_t len);

/* 12345 as "12,345"; seconds as "124.7 s" (3 significant digits or so). */
void query_context__count(uint64_t n, char *buf, size_t len);
void query_context__seconds(double s, char *buf, size_t len);

#endif

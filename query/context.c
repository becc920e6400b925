/* An answer's context, computed once per answer (query.c) and written into every
 * format: the requested range, the effective range (the first stored window's
 * start to the last one's end, from store__windows()), the selection (both sides
 * for a diff), the profile type, the granularity, the sampling period and the
 * totals in samples and in CPU time. See query_int.h for what each format gets.
 *
 * CPU time is samples x period, shown only when every window in the answer was
 * sampled at one known period; with several periods (agents at 99 Hz and 49 Hz)
 * or an unknown one (windows stored before the store kept periods) the answer
 * says why it shows none. Times are written in UTC ("2026-11-30 23:44:50 UTC"):
 * an answer read on another machine, or by a test with TZ unset, reads the same.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ptype.h"
#include "query/query_int.h"
#include "query/render_json.h"
#include "store/store.h"

/* pprof needs some period; agents sample at 99 Hz unless told otherwise */
#define PPROF_FALLBACK_PERIOD_NS 10101010

static const char *const no_data = "no samples in range";
static const char *const unknown =
	"sampling period unknown (windows stored before periods were kept): CPU time not shown";
static const char *const mixed = "mixed sampling periods: CPU time not shown";
static const char *const not_cpu = "not a CPU profile: values are in the type's unit";

static void periods_text(const struct store_windows *w, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < w->nperiods && n < len; i++) {
		if (w->periods[i])
			n += (size_t)snprintf(buf + n, len - n, "%s%.4g Hz", i ? ", " : "",
					      1e9 / (double)w->periods[i]);
		else
			n += (size_t)snprintf(buf + n, len - n, "%sunknown", i ? ", " : "");
	}
	if (w->more_periods && n < len)
		snprintf(buf + n, len - n, " and %zu more", w->more_periods);
}

/* Looks for value among a key's values (store__label_values), listing the first
 * few for the reason. */
struct value_search {
	const char *value;
	bool found;
	char list[160];
	size_t len, more;
};

static int search_value(void *ctx, const char *text)
{
	struct value_search *v = ctx;
	size_t n = strlen(text);

	if (strcmp(text, v->value) == 0) {
		v->found = true;
		return 1; /* stops the listing: the value is there */
	}
	if (v->len + n + 2 < sizeof(v->list) - 8) /* room for ", ..." */
		v->len += (size_t)snprintf(v->list + v->len, sizeof(v->list) - v->len, "%s%s",
					   v->len ? ", " : "", text);
	else
		v->more++;
	return 0;
}

/* An empty side with a selection: names the first where pair whose value no label
 * set in the side's range has, with the values that key does have. Read only
 * for an empty answer, so a query with samples never pays for it. */
static int explain_empty(struct store *st, struct query_side *s, const char *type)
{
	struct store_query any = { .from = s->from, .to = s->to, .type = type };
	size_t i;
	int err;

	for (i = 0; i < s->where->n; i++) {
		struct value_search v = { .value = s->where->values[i] };

		err = store__label_values(st, s->where->keys[i], &any, search_value, &v);
		if (err < 0)
			return err;
		if (v.found)
			continue;
		snprintf(s->empty_why, sizeof(s->empty_why),
			 "no %.64s=%.64s in range (%.64s: %.160s%s)", s->where->keys[i],
			 s->where->values[i], s->where->keys[i], v.len ? v.list : "none",
			 v.more ? ", ..." : "");
		return 0;
	}
	return 0; /* every pair matches something: only their combination is empty */
}

int query_context__load(struct store *st, const struct query *q, const uint64_t totals[2],
			const struct store_windows *known, struct query_context *c)
{
	struct store_windows all = { 0 };
	unsigned i, j;
	int err;

	memset(c, 0, sizeof(*c));
	c->q = q;
	c->type = q->ptype ? q->ptype : ptype__find(STORE_TYPE_CPU);
	if (q->kind == QUERY_DIFF) {
		c->nsides = 2;
		c->side[0] = (struct query_side){ q->before_from, q->before_to, &q->before_where };
		c->side[1] = (struct query_side){ q->after_from, q->after_to, &q->after_where };
	} else {
		c->nsides = 1;
		c->side[0] = (struct query_side){ q->from, q->to, &q->where };
	}
	for (i = 0; i < c->nsides; i++) {
		struct query_side *s = &c->side[i];

		s->total = totals[i];
		struct store_query sq = { .from = s->from,
					  .to = s->to,
					  .keys = s->where->keys,
					  .values = s->where->values,
					  .nlabels = s->where->n,
					  .type = q->type };

		if (i == 0 && known)
			s->w = *known, err = 0;
		else
			err = store__windows(st, &sq, &s->w);
		if (!err && !s->total && s->where->n)
			err = explain_empty(st, s, q->type);
		if (err)
			return err;
		/* the distinct periods of both sides, most batches first */
		for (j = 0; j < s->w.nperiods; j++) {
			size_t k;

			for (k = 0; k < all.nperiods && all.periods[k] != s->w.periods[j]; k++)
				;
			if (k == all.nperiods && k == STORE_WINDOWS_MAX_PERIODS) {
				all.more_periods++;
				continue;
			}
			all.periods[k] = s->w.periods[j];
			all.period_batches[k] += s->w.period_batches[j];
			all.nperiods += k == all.nperiods;
		}
		all.more_periods += s->w.more_periods;
	}
	periods_text(&all, c->periods, sizeof(c->periods));
	for (j = 0; j < all.nperiods; j++)
		if (all.period_batches[j] > all.period_batches[0]) {
			uint64_t p = all.periods[0], n = all.period_batches[0];

			all.periods[0] = all.periods[j];
			all.period_batches[0] = all.period_batches[j];
			all.periods[j] = p;
			all.period_batches[j] = n;
		}
	if (all.nperiods == 0) {
		/* samples without windows rows: stored before migration 004 */
		c->no_cpu = c->side[0].total || c->side[1].total ? unknown : no_data;
	} else if (all.nperiods > 1 || all.more_periods) {
		c->no_cpu = mixed;
	} else if (all.periods[0] == 0) {
		c->no_cpu = unknown;
	} else {
		c->period_ns = all.periods[0];
	}
	c->pprof_period_ns =
		all.nperiods && all.periods[0] ? all.periods[0] : PPROF_FALLBACK_PERIOD_NS;
	if (query_context__offcpu(c)) {
		/* values are nanoseconds off CPU: "x period" makes them a time */
		c->period_ns = c->pprof_period_ns = 1;
		c->no_cpu = c->side[0].total || c->side[1].total ? NULL : no_data;
		snprintf(c->periods, sizeof(c->periods), "waits in ns");
	} else if (!query_context__cpu(c)) {
		/* values are the type's unit (bytes, ns, objects): no period makes them
		 * CPU time; pprof's period is 1 of the unit */
		c->period_ns = 0;
		c->pprof_period_ns = 1;
		c->no_cpu = not_cpu;
		snprintf(c->periods, sizeof(c->periods), "%s", ptype__unit_name(c->type->unit));
	}
	return 0;
}

bool query_context__cpu(const struct query_context *c)
{
	return !c->type || !strcmp(c->type->name, STORE_TYPE_CPU);
}

bool query_context__offcpu(const struct query_context *c)
{
	return c->q && c->q->type && !strcmp(c->q->type, "offcpu");
}

double query_context__cpu_seconds(const struct query_context *c, uint64_t samples)
{
	return (double)samples * (double)c->period_ns / 1e9;
}

/* ---- text pieces ---------------------------------------------------------- */

void query_context__utc(int64_t t, bool date, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(buf, len, date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm))
		snprintf(buf, len, "@%" PRId64, t);
}

/* "2026-11-30 23:40:00–23:45:00 UTC" (the date once when both are on one day). */
static void fmt_range(int64_t from, int64_t to, char *buf, size_t len)
{
	char a[48], b[48];

	query_context__utc(from, true, a, sizeof(a));
	query_context__utc(to, true, b, sizeof(b));
	if (strncmp(a, b, 11) == 0 && strlen(a) == 19 && strlen(b) == 19)
		query_context__utc(to, false, b, sizeof(b));
	snprintf(buf, len, "%s\u2013%s UTC", a, b);
}

void query_context__count(uint64_t n, char *buf, size_t len)
{
	char digits[24];
	size_t nd, i, o = 0;

	nd = (size_t)snprintf(digits, sizeof(digits), "%" PRIu64, n);
	for (i = 0; i < nd && o + 2 < len; i++) {
		if (i && (nd - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
}

void query_context__seconds(double s, char *buf, size_t len)
{
	if (s >= 100)
		snprintf(buf, len, "%.0f s", s);
	else if (s >= 10)
		snprintf(buf, len, "%.1f s", s);
	else
		snprintf(buf, len, "%.2f s", s);
}

static void fmt_where(const struct query_where *w, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = '\0';
	if (!w->n) {
		snprintf(buf, len, "all");
		return;
	}
	for (i = 0; i < w->n && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s=%s", i ? " " : "", w->keys[i],
				      w->values[i]);
}

static const char *what(enum query_kind k, bool offcpu, const struct ptype *t, char *buf,
			size_t len)
{
	static const char *const suffix[] = { [QUERY_FLAMEGRAPH] = "flame graph",
					      [QUERY_DIFF] = "diff",
					      [QUERY_TOP] = "top functions",
					      [QUERY_SERIES] = "over time" };

	if (t && !offcpu && strcmp(t->name, STORE_TYPE_CPU) != 0 && k <= QUERY_SERIES) {
		snprintf(buf, len, "%s %s", t->title, suffix[k]);
		return buf;
	}
	switch (k) {
	case QUERY_FLAMEGRAPH:
		return offcpu ? "Off-CPU flame graph" : "CPU flame graph";
	case QUERY_DIFF:
		return offcpu ? "Off-CPU diff" : "CPU diff";
	case QUERY_TOP:
		return offcpu ? "Off-CPU top functions" : "CPU top functions";
	case QUERY_SERIES:
		return offcpu ? "Off-CPU time over time" : "CPU samples over time";
	default:
		return "smolder";
	}
}

/* "comm=api · 2026-11-30 23:40:00–23:45:00 UTC" */
static void fmt_side(const struct query_side *s, char *buf, size_t len)
{
	char where[512], range[128];

	fmt_where(s->where, where, sizeof(where));
	fmt_range(s->from, s->to, range, sizeof(range));
	snprintf(buf, len, "%s \u00b7 %s", where, range);
}

void query_context__title(const struct query_context *c, char *buf, size_t len)
{
	char a[512], b[512], t[96];
	const char *w = what(c->q->kind, query_context__offcpu(c), c->type, t, sizeof(t));

	fmt_side(&c->side[0], a, sizeof(a));
	if (c->nsides == 2) {
		fmt_side(&c->side[1], b, sizeof(b));
		snprintf(buf, len, "%s \u00b7 before: %s \u00b7 after: %s", w, a, b);
	} else {
		snprintf(buf, len, "%s \u00b7 %s", w, a);
	}
}

/* "12,345 samples · 124.7 s CPU (0.42 cores avg)" for one side. */
static void fmt_totals(const struct query_context *c, const struct query_side *s, char *buf,
		       size_t len)
{
	char n[32], cpu[32];
	int64_t span = s->w.last_end - s->w.first_start;
	double secs;
	size_t o;

	if (query_context__offcpu(c)) { /* "124.7 s off CPU (0.42 threads avg)" */
		secs = (double)s->total / 1e9;
		query_context__seconds(secs, n, sizeof(n));
		o = (size_t)snprintf(buf, len, "%s off CPU", n);
		if (span > 0 && o < len)
			snprintf(buf + o, len - o, " (%.2f threads waiting avg)",
				 secs / (double)span);
		return;
	}
	if (!query_context__cpu(c)) { /* "200 MiB (average of snapshots)" */
		ptype__format(c->type->unit, (double)s->total, PTYPE_TEXT, n, sizeof(n));
		snprintf(buf, len, "%s%s", n,
			 ptype__is_gauge(c->type) ? " (average of snapshots)" : "");
		return;
	}
	query_context__count(s->total, n, sizeof(n));
	o = (size_t)snprintf(buf, len, "%s samples", n);
	if (c->no_cpu || o >= len)
		return;
	secs = query_context__cpu_seconds(c, s->total);
	query_context__seconds(secs, cpu, sizeof(cpu));
	o += (size_t)snprintf(buf + o, len - o, " \u00b7 %s CPU", cpu);
	if (span > 0 && o < len)
		snprintf(buf + o, len - o, " (%.2f cores avg)", secs / (double)span);
}

/* "windows 23:40:00–23:45:10 (snapped to 10 s windows)", or "no windows". The
 * store keeps the windows of the CPU profile's batches (store__windows): another
 * type's windows are known only where an agent's CPU batches share them. */
static void fmt_windows(const struct query_context *c, const struct query_side *s, char *buf,
			size_t len)
{
	char range[128], lens[48];

	if (!s->w.nwindows) {
		snprintf(buf, len,
			 !s->total		 ? "no stored windows in range"
			 : query_context__cpu(c) ? "windows unknown (stored before they were kept)"
						 : "windows not kept for this type");
		return;
	}
	fmt_range(s->w.first_start, s->w.last_end, range, sizeof(range));
	if (s->w.min_seconds == s->w.max_seconds)
		snprintf(lens, sizeof(lens), "%" PRIu32 " s", s->w.min_seconds);
	else
		snprintf(lens, sizeof(lens), "%" PRIu32 "\u2013%" PRIu32 " s", s->w.min_seconds,
			 s->w.max_seconds);
	if (s->w.first_start != s->from || s->w.last_end != s->to)
		snprintf(buf, len, "windows %s (snapped to %s windows)", range, lens);
	else
		snprintf(buf, len, "windows %s (%s windows)", range, lens);
}

void query_context__subtitle(const struct query_context *c, char *buf, size_t len)
{
	char t[2][192], w[2][256], p[448];

	if (c->no_cpu == not_cpu)
		snprintf(p, sizeof(p), "%s", c->type->title);
	else if (c->no_cpu && c->no_cpu != no_data)
		snprintf(p, sizeof(p), "%s (%s)", c->no_cpu, c->periods);
	else if (c->no_cpu && c->side[0].empty_why[0])
		snprintf(p, sizeof(p), "%s", c->side[0].empty_why);
	else if (c->no_cpu && c->nsides == 2 && c->side[1].empty_why[0])
		snprintf(p, sizeof(p), "%s", c->side[1].empty_why);
	else if (c->no_cpu)
		snprintf(p, sizeof(p), "%s", c->no_cpu);
	else
		snprintf(p, sizeof(p), "%s", c->periods);
	fmt_totals(c, &c->side[0], t[0], sizeof(t[0]));
	fmt_windows(c, &c->side[0], w[0], sizeof(w[0]));
	if (c->nsides == 2) {
		fmt_totals(c, &c->side[1], t[1], sizeof(t[1]));
		fmt_windows(c, &c->side[1], w[1], sizeof(w[1]));
		snprintf(buf, len, "before: %s, %s \u00b7 after: %s, %s \u00b7 %s", t[0], w[0],
			 t[1], w[1], p);
	} else {
		snprintf(buf, len, "%s \u00b7 %s \u00b7 %s", t[0], p, w[0]);
	}
}

void query_context__header(const struct query_context *c, FILE *out)
{
	char buf[1536];

	query_context__title(c, buf, sizeof(buf));
	fprintf(out, "# %s\n", buf);
	query_context__subtitle(c, buf, sizeof(buf));
	fprintf(out, "# %s\n", buf);
}

/* ---- JSON ----------------------------------------------------------------- */

static void json_time_or_null(FILE *out, const char *name, bool have, int64_t t)
{
	if (have)
		fprintf(out, ",\"%s\":%" PRId64, name, t);
	else
		fprintf(out, ",\"%s\":null", name);
}

static int json_side(const struct query_context *c, const struct query_side *s, FILE *out)
{
	size_t i;

	fprintf(out, "\"from\":%" PRId64 ",\"to\":%" PRId64, s->from, s->to);
	json_time_or_null(out, "effective_from", s->w.nwindows, s->w.first_start);
	json_time_or_null(out, "effective_to", s->w.nwindows, s->w.last_end);
	fputs(",\"where\":[", out);
	for (i = 0; i < s->where->n; i++) {
		size_t kl = strlen(s->where->keys[i]), vl = strlen(s->where->values[i]);
		char *kv = malloc(kl + vl + 2);

		if (!kv)
			return -ENOMEM;
		memcpy(kv, s->where->keys[i], kl);
		kv[kl] = '=';
		memcpy(kv + kl + 1, s->where->values[i], vl + 1);
		if (i)
			fputc(',', out);
		render_json_string(out, kv);
		free(kv);
	}
	fprintf(out, "],\"total\":%" PRIu64, s->total);
	if (s->empty_why[0]) {
		fputs(",\"empty_reason\":", out);
		render_json_string(out, s->empty_why);
	}
	if (c->no_cpu || query_context__offcpu(c))
		fputs(",\"cpu_seconds\":null", out);
	else
		fprintf(out, ",\"cpu_seconds\":%.6f", query_context__cpu_seconds(c, s->total));
	if (query_context__offcpu(c))
		fprintf(out, ",\"offcpu_seconds\":%.6f", (double)s->total / 1e9);
	return 0;
}

int query_context__json(const struct query_context *c, char **out)
{
	size_t len = 0;
	FILE *f = open_memstream(out, &len);
	int err = 0;

	if (!f)
		return -ENOMEM;
	fprintf(f, "{\"type\":\"%s\",\"unit\":\"%s\",\"aggregation\":\"%s\"", c->type->name,
		ptype__unit_name(c->type->unit), ptype__agg_name(c->type->agg));
	if (c->period_ns)
		fprintf(f, ",\"period_ns\":%" PRIu64, c->period_ns);
	else
		fputs(",\"period_ns\":null", f);
	if (c->no_cpu && c->no_cpu != not_cpu) {
		fputs(",\"no_cpu_reason\":", f);
		render_json_string(f, c->no_cpu);
	}
	fputs(",\"periods\":", f);
	render_json_string(f, c->periods);
	if (c->q->kind != QUERY_SERIES)
		fprintf(f, ",\"granularity\":\"%s\"", c->q->lines ? "line" : "function");
	else
		fputs(",\"granularity\":null", f);
	if (c->nsides == 2) {
		fputs(",\"before\":{", f);
		err = json_side(c, &c->side[0], f);
		fputs("},\"after\":{", f);
		err = err ?: json_side(c, &c->side[1], f);
		fputc('}', f);
	} else {
		fputc(',', f);
		err = json_side(c, &c->side[0], f);
	}
	if (c->q->kind == QUERY_SERIES) {
		if (c->no_cpu)
			fputs(",\"cores_per_sample\":null", f);
		else
			fprintf(f, ",\"cores_per_sample\":%.9g",
				(double)c->period_ns / 1e9 / (double)c->q->step);
	}
	fputc('}', f);
	err = err ?: (ferror(f) ? -ENOMEM : 0);
	if (fclose(f) || err) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

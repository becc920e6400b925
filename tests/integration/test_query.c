/* End-to-end tests of the query API and CLI on real stored data: the sanitized
 * collector on loopback with a SQLite file, batches of known structure posted to
 * it, and every answer checked against expectations computed here from the same
 * generated samples (never against the code's own output).
 *
 * All data is posted by the group setup, each kind in a time range of its own: the
 * generated windows in [t0, t0 + 60), a batch of hostile names at t0 + HOSTILE_AT
 * and one with other labels at t0 + LATE_AT. A test queries the ranges whose
 * answer it computes, so the tests hold in any order and any subset. The group
 * teardown stops the collector and asserts its exit status and a clean log. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "collectortest.h"
#include "wire/batch.h"
#include "common/folded.h"
#include "common/ptype.h"
#include "testutil.h"

#define NWIN	   6	/* windows of 10 s from t0 */
#define HOSTILE_AT 600	/* the hostile names' window, t0 + this */
#define LATE_AT	   1200 /* the window labelled comm=cron, zone=eu */
#define GAUGE_AT   1800 /* two windows of memory profiles, service=heapy */

static struct coll srv; /* the collector of the whole group */
static char bin[256];
static int64_t t0;

/* The generated data: per window, per process, per stack: count = known formula. */
static const char *const procs[] = { "api", "worker" };
static const char *const stacks[] = {
	"main;handle;parse_json",
	"main;handle;render_page",
	"main;idle_[k]",
	"main;handle;Cache.get (/srv/cache.py:41)",
};
/* stacks[] as answers show them: Python frames by function (the default
 * granularity; the batches keep the line). */
static const char *const answers[] = {
	"main;handle;parse_json",
	"main;handle;render_page",
	"main;idle_[k]",
	"main;handle;Cache.get (/srv/cache.py)",
};
#define PERIOD_NS 10101010 /* 99 Hz: the period every batch here is posted at */
#define NPROCS	  2
#define NSTACKS	  4

static uint64_t count_of(int w, int p, int s)
{
	return (uint64_t)(1 + w * 3 + p * 7 + s * 11) % 23 + 1;
}

/* GET path from the group's collector; returns the body (caller frees) and the
 * status (0: no answer). */
static char *get(const char *path, long *status, size_t *len_out)
{
	struct reply r = http_get(srv.port, path, NULL);

	*status = r.status;
	if (len_out)
		*len_out = r.len;
	return r.body;
}

/* Names that must be escaped in every format; their own label and window. */
static const char *const hostile =
	"evil;<script>alert(1)</script>;\"quoted\" 'single' & amp;back\\slash;"
	"bad\xff\xfeutf8;leaf (</text><svg onload=alert(2)>.py:7)";
static const char *hostile_keys[] = { "comm" }, *hostile_values[] = { "evil" };
static const char *late_keys[] = { "comm", "zone" }, *late_values[] = { "cron", "eu" };

/* One batch of one stack in the window at `start`. */
static void ingest_one(uint64_t seq, int64_t start, const char **keys, const char **values,
		       size_t nlabels, const char *stack, uint64_t count)
{
	struct batch_builder *bb;
	struct batch *b;

	assert_int_equal(batch_builder__new("gen", "genhost", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, nlabels, stack, count), 0);
	assert_int_equal(batch_builder__finish(bb, seq, start, 10, PERIOD_NS, &b), 0);
	assert_int_equal(post_batch(srv.port, NULL, b, NULL), 200);
	batch__free(b);
	batch_builder__free(bb);
}

/* One batch of one stack of profile type type in the window at start. */
static void ingest_typed(const char *type, uint64_t seq, int64_t start, const char *stack,
			 uint64_t count)
{
	const char *keys[] = { "service" }, *values[] = { "heapy" };
	struct batch_builder *bb;
	struct batch *b;

	assert_int_equal(batch_builder__new("gen", "genhost", type, &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, stack, count), 0);
	assert_int_equal(batch_builder__finish(bb, seq, start, 10, 0, &b), 0);
	assert_int_equal(post_batch(srv.port, NULL, b, NULL), 200);
	batch__free(b);
	batch_builder__free(bb);
}

static void ingest_generated(void)
{
	const char *keys[] = { "comm", "service" };
	char stack[256];
	int w, p, s;

	for (w = 0; w < NWIN; w++) {
		struct batch_builder *bb;
		struct batch *b;

		assert_int_equal(batch_builder__new("gen", "genhost", "cpu", &bb), 0);
		for (p = 0; p < NPROCS; p++)
			for (s = 0; s < NSTACKS; s++) {
				const char *values[] = { procs[p], p ? "batch" : "web" };

				snprintf(stack, sizeof(stack), "%s;%s", procs[p], stacks[s]);
				assert_int_equal(batch_builder__add(bb, keys, values, 2, stack,
								    count_of(w, p, s)),
						 0);
			}
		assert_int_equal(batch_builder__finish(bb, 100 + w, t0 + 10 * w, 10, PERIOD_NS, &b),
				 0);
		assert_int_equal(post_batch(srv.port, NULL, b, NULL), 200);
		batch__free(b);
		batch_builder__free(bb);
	}
}

static int group_setup(void **state)
{
	(void)state;
	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	t0 = (int64_t)time(NULL) - 3600; /* recent: older data would fall to retention */
	t0 -= t0 % 10;
	test_build_path(bin, sizeof(bin), "asan/smolder");
	coll_start_for_group(&srv);
	ingest_generated();
	ingest_one(999, t0 + HOSTILE_AT, hostile_keys, hostile_values, 1, hostile, 5);
	ingest_one(998, t0 + LATE_AT, late_keys, late_values, 2, "cron;main;tick", 3);
	return 0;
}

/* Stops the collector: exit status 0 after SIGTERM and no ASan, LeakSanitizer or
 * UBSan report in its log, else the group fails (run.sh sees the exit status). */
static int group_teardown(void **state)
{
	coll_stop(&srv);
	coll_teardown(state);
	curl_global_cleanup();
	return 0;
}

static struct folded *parse_folded(const char *text)
{
	struct folded *f;
	size_t bad = 0, len = strlen(text);
	FILE *in;

	assert_int_equal(folded__new(&f), 0);
	if (len) {
		in = fmemopen((void *)text, len, "r");
		assert_int_equal(folded__read(f, in, &bad), 0);
		fclose(in);
	}
	return f;
}

/* Folded flame graph of a range and selection equals the generated counts summed
 * here, windows at the edges included or excluded by [from, to). */
static void test_flamegraph_ranges_and_labels(void **state)
{
	char path[256], stack[256];
	struct folded *f;
	long status;
	char *body;
	int w, p, s;

	(void)state;
	/* windows 1..3: from = t0+10 (included) to t0+40 (excluded) */
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?format=folded&from=%lld&to=%lld&where=comm=api",
		 (long long)(t0 + 10), (long long)(t0 + 40));
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	f = parse_folded(body);
	for (p = 0; p < NPROCS; p++)
		for (s = 0; s < NSTACKS; s++) {
			uint64_t want = 0;

			for (w = 1; w <= 3 && p == 0; w++)
				want += count_of(w, p, s);
			snprintf(stack, sizeof(stack), "%s;%s", procs[p], answers[s]);
			assert_int_equal(folded__count(f, stack), want);
		}
	folded__free(f);
	free(body);
}

/* One function's expected top row, computed from the generated data. */
struct top_row {
	char name[128];
	uint64_t self, total;
	bool seen;
};

/* The functions of stacks[] (every frame: the process frame is not in them), each
 * with its self (samples where it is the leaf) and total (samples of the stacks
 * holding it, once per stack) over windows [w0, w1); returns how many. */
static size_t expected_top(int w0, int w1, struct top_row *rows, size_t cap, uint64_t *all)
{
	size_t n = 0, i;
	int w, p, s;

	*all = 0;
	for (s = 0; s < NSTACKS; s++) {
		char copy[256], *tok, *save = NULL;
		uint64_t sum = 0;

		for (w = w0; w < w1; w++)
			for (p = 0; p < NPROCS; p++)
				sum += count_of(w, p, s);
		*all += sum;
		snprintf(copy, sizeof(copy), "%s", answers[s]);
		for (tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
			bool leaf = !save || !*save;

			for (i = 0; i < n && strcmp(rows[i].name, tok); i++)
				;
			if (i == n) {
				assert_true(n < cap);
				snprintf(rows[n].name, sizeof(rows[n].name), "%s", tok);
				rows[n].self = rows[n].total = 0;
				rows[n++].seen = false;
			}
			rows[i].total += sum;
			rows[i].self += leaf ? sum : 0;
		}
	}
	return n;
}

/* A CPU cell as the top table prints it ("1.45s", "12.3s", "123s") is samples at
 * PERIOD_NS, to the precision printed. */
static bool cpu_near(double printed, unsigned long long samples)
{
	double want = (double)samples * PERIOD_NS / 1e9;

	return fabs(printed - want) <= (want >= 99.5 ? 0.51 : want >= 9.95 ? 0.051 : 0.0051);
}

/* top table: "# " context lines, a header "SELF SELF_CPU SELF% TOTAL TOTAL_CPU TOTAL%
 * FUNCTION", then one row per function with exactly the self and total counts
 * computed here, their CPU seconds at the posted period, percentages of all
 * samples in range, every function once, ordered by self then total, descending. */
static void test_top(void **state)
{
	static const char *const header[] = { "SELF",	   "SELF_CPU", "SELF%",	  "TOTAL",
					      "TOTAL_CPU", "TOTAL%",   "FUNCTION" };
	struct top_row want[16];
	char path[256], *body, *line, *save = NULL, *name;
	unsigned long long self, total, prev_self = ~0ull, prev_total = ~0ull;
	double self_pct, total_pct, self_cpu, total_cpu;
	size_t nwant, nrows = 0, i;
	uint64_t all;
	long status;
	int end;

	(void)state;
	nwant = expected_top(0, NWIN, want, 16, &all);
	snprintf(path, sizeof(path), "/api/v1/top?format=table&from=%lld&to=%lld", (long long)t0,
		 (long long)(t0 + 10 * NWIN));
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	line = strtok_r(body, "\n", &save);
	while (line && strncmp(line, "# ", 2) == 0)
		line = strtok_r(NULL, "\n", &save);
	assert_non_null(line);
	{
		char h[7][16];

		assert_int_equal(sscanf(line, "%15s %15s %15s %15s %15s %15s %15s %n", h[0], h[1],
					h[2], h[3], h[4], h[5], h[6], &end),
				 7);
		for (i = 0; i < 7; i++)
			assert_string_equal(h[i], header[i]);
		assert_int_equal(line[end], '\0');
	}
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (sscanf(line, "%llu %lfs %lf%% %llu %lfs %lf%% %n", &self, &self_cpu, &self_pct,
			   &total, &total_cpu, &total_pct, &end) != 6)
			fail_msg("not a top row: '%s'", line);
		name = line + end;
		for (i = 0; i < nwant && strcmp(want[i].name, name); i++)
			;
		if (i == nwant)
			fail_msg("unexpected row '%s'", line);
		print_message("  %-32s self %llu (want %llu) total %llu (want %llu)\n", name, self,
			      (unsigned long long)want[i].self, total,
			      (unsigned long long)want[i].total);
		assert_false(want[i].seen);
		want[i].seen = true;
		assert_int_equal(self, want[i].self);
		assert_int_equal(total, want[i].total);
		/* CPU seconds at the posted period, as printed: 3 significant digits */
		assert_true(cpu_near(self_cpu, self));
		assert_true(cpu_near(total_cpu, total));
		/* printed with two decimals: within half a hundredth of a point */
		assert_true(fabs(self_pct - 100.0 * (double)want[i].self / (double)all) <= 0.0051);
		assert_true(fabs(total_pct - 100.0 * (double)want[i].total / (double)all) <=
			    0.0051);
		assert_true(self < prev_self || (self == prev_self && total <= prev_total));
		prev_self = self;
		prev_total = total;
		nrows++;
	}
	assert_int_equal(nrows, nwant); /* 6 functions: none missing, none extra */
	free(body);
}

/* series json: one point per 20 s step of [t0, t0 + 60), each the sum of its two
 * windows' generated counts. */
static void test_series(void **state)
{
	char path[256], *body;
	const char *p;
	long status;
	int w, pr, s, npoints = 0, n;
	long long at;
	unsigned long long got;
	uint64_t sum;

	(void)state;
	snprintf(path, sizeof(path), "/api/v1/series?format=json&step=20&from=%lld&to=%lld",
		 (long long)t0, (long long)(t0 + 10 * NWIN));
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	p = strstr(body, "\"points\":[");
	if (!p)
		fail_msg("no points in %s", body);
	p += strlen("\"points\":[");
	while (sscanf(p, "[%lld,%llu]%n", &at, &got, &n) == 2) {
		w = 2 * npoints;
		sum = 0;
		for (pr = 0; pr < NPROCS; pr++)
			for (s = 0; s < NSTACKS; s++)
				sum += count_of(w, pr, s) + count_of(w + 1, pr, s);
		assert_true(npoints < NWIN / 2);
		assert_int_equal(at, t0 + 10 * w);
		assert_int_equal(got, sum);
		npoints++;
		p += n;
		if (*p == ',')
			p++;
	}
	if (npoints != NWIN / 2 || strcmp(p, "]}\n") != 0)
		fail_msg("%d points, then '%s', in %s", npoints, p, body);
	free(body);
}

/* diff folded: "stack before after", both ranges summed independently. */
static void test_diff(void **state)
{
	char path[512], line[512];
	long status;
	char *body;
	int s;

	(void)state;
	snprintf(path, sizeof(path),
		 "/api/v1/"
		 "diff?format=folded&before_from=%lld&before_to=%lld&after_from=%lld&after_to=%lld"
		 "&where=comm=worker",
		 (long long)t0, (long long)(t0 + 10), (long long)(t0 + 50), (long long)(t0 + 60));
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	for (s = 0; s < NSTACKS; s++) {
		snprintf(line, sizeof(line), "worker;%s %llu %llu\n", answers[s],
			 (unsigned long long)count_of(0, 1, s),
			 (unsigned long long)count_of(5, 1, s));
		if (!strstr(body, line))
			fail_msg("'%s' not in:\n%s", line, body);
	}
	assert_null(strstr(body, "api;")); /* the selection applies to both sides */
	free(body);
}

/* GET path (a printf format), whose answer must be exactly the JSON want. */
static void assert_answer(const char *want, const char *fmt, ...)
{
	char path[512], *body;
	long status;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	body = get(path, &status, NULL);
	print_message("  %s -> %ld %s", path, status, body);
	if (status != 200 || strcmp(body, want) != 0)
		fail_msg("%s: want 200 %s", path, want);
	free(body);
}

/* labels and label values: exact sorted arrays for a range, windows counted by
 * their start in [from, to), and [] for a range without samples. */
static void test_labels(void **state)
{
	long long a = t0, z = t0 + 10 * NWIN, late = t0 + LATE_AT;

	(void)state;
	/* the generated windows: comm and service */
	assert_answer("[\"comm\",\"service\"]\n", "/api/v1/labels?from=%lld&to=%lld", a, z);
	assert_answer("[\"api\",\"worker\"]\n", "/api/v1/labels/comm/values?from=%lld&to=%lld", a,
		      z);
	assert_answer("[\"batch\",\"web\"]\n", "/api/v1/labels/service/values?from=%lld&to=%lld", a,
		      z);
	/* the last generated window alone */
	assert_answer("[\"comm\",\"service\"]\n", "/api/v1/labels?from=%lld&to=%lld", z - 10, z);
	/* the late window: other keys; its start is in [late, late + 1), not in
	 * [late - 10, late) nor [late + 1, late + 10) */
	assert_answer("[\"comm\",\"zone\"]\n", "/api/v1/labels?from=%lld&to=%lld", late, late + 1);
	assert_answer("[\"cron\"]\n", "/api/v1/labels/comm/values?from=%lld&to=%lld", late,
		      late + 10);
	assert_answer("[]\n", "/api/v1/labels?from=%lld&to=%lld", late - 10, late);
	assert_answer("[]\n", "/api/v1/labels?from=%lld&to=%lld", late + 1, late + 10);
	/* no samples at all between the generated windows and the hostile one */
	assert_answer("[]\n", "/api/v1/labels?from=%lld&to=%lld", z, t0 + HOSTILE_AT);
	assert_answer("[]\n", "/api/v1/labels/comm/values?from=%lld&to=%lld", z, t0 + HOSTILE_AT);
	/* a key nobody has in the range: refused like an unknown where key */
	{
		char path[256], *body;
		long status;

		snprintf(path, sizeof(path), "/api/v1/labels/nosuchkey/values?from=%lld&to=%lld", a,
			 z);
		body = get(path, &status, NULL);
		if (status != 400 || !strstr(body, "unknown label key 'nosuchkey' (keys in "
						   "range: comm, service)"))
			fail_msg("%s: want 400 unknown label key, got %ld %s", path, status, body);
		free(body);
	}
}

/* Bad parameters: 400 with exactly {"error":"<reason>"} naming what is wrong. */
static void test_bad_queries(void **state)
{
	static const struct {
		const char *path, *reason;
	} bad[] = {
		{ "/api/v1/flamegraph?from=20&to=10", "to must be after from" },
		{ "/api/v1/flamegraph?from=yesterday",
		  "from: 'yesterday' is not a time (forms: 2026-11-30T23:44:47Z, 2026-11-30 "
		  "23:44:47 (local), 2026-11-30, unix seconds, now, now-5m, -1h30m)" },
		{ "/api/v1/flamegraph?format=gif", "unknown format 'gif' for this query" },
		{ "/api/v1/top?format=svg", "unknown format 'svg' for this query" },
		{ "/api/v1/flamegraph?type=walltime",
		  "unknown profile type 'walltime' (types: cpu, offcpu, process_cpu, wall, "
		  "alloc_space, alloc_objects, inuse_space, inuse_objects, goroutines, "
		  "mutex_delay, mutex_count, block_delay, block_count)" },
		{ "/api/v1/flamegraph?where=novalue", "where wants KEY=VALUE, got 'novalue'" },
		{ "/api/v1/flamegraph?where==x", "where wants KEY=VALUE, got '=x'" },
		{ "/api/v1/series?step=0s",
		  "step wants a duration (90s, 15m, 1h30m, 2d12h, 1w), got '0s'" },
		{ "/api/v1/top?limit=0", "limit wants 1 to 100000" },
		{ "/api/v1/top?limit=12x", "limit wants 1 to 100000" },
		{ "/api/v1/flamegraph?max_nodes=15", "max_nodes wants 16 to 10000000, got '15'" },
		{ "/api/v1/flamegraph?max_nodes=-1", "max_nodes wants 16 to 10000000, got '-1'" },
		{ "/api/v1/diff?before_from=1&before_to=2&after_from=3&after_to=4&format=svg&"
		  "max_nodes=100",
		  "max_nodes applies to format=json, not svg" },
		{ "/api/v1/diff?before_from=10&before_to=5&after_from=1&after_to=2",
		  "before_to must be after before_from" },
		{ "/api/v1/diff?after_from=10&after_to=5&before_from=1&before_to=2",
		  "after_to must be after after_from" },
		{ "/api/v1/labels?from=20&to=10", "to must be after from" },
	};
	char want[512];
	long status;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *body = get(bad[i].path, &status, NULL);

		snprintf(want, sizeof(want), "{\"error\":\"%s\"}\n", bad[i].reason);
		if (status != 400 || strcmp(body, want) != 0)
			fail_msg("%s: want 400 %s got %ld %s", bad[i].path, want, status, body);
		free(body);
	}
}

/* Every type of the table is a type= the API takes (an empty answer for those
 * nobody pushed here), and its meta names the type and the table's unit and
 * aggregation. */
static void test_every_type_accepted(void **state)
{
	char path[160], want[160];
	long status;
	size_t i;

	(void)state;
	for (i = 0; i < ptype__count(); i++) {
		const struct ptype *t = ptype__at(i);
		char *body;

		snprintf(path, sizeof(path), "/api/v1/flamegraph?type=%s&from=%lld&to=%lld",
			 t->name, (long long)t0, (long long)t0 + 10 * NWIN);
		snprintf(want, sizeof(want),
			 "{\"meta\":{\"type\":\"%s\",\"unit\":\"%s\",\"aggregation\":\"%s\"",
			 t->name, ptype__unit_name(t->unit), ptype__agg_name(t->agg));
		body = get(path, &status, NULL);
		if (status != 200 || strncmp(body, want, strlen(want)) != 0)
			fail_msg("%s: want 200 %s... got %ld %.200s", path, want, status, body);
		free(body);
	}
}

/* The JSON number after "key": in body (0 when absent). */
static unsigned long long json_number(const char *body, const char *key)
{
	const char *p = strstr(body, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* A gauge over HTTP: two pushes of inuse_space, 100 MiB and 300 MiB on one
 * stack in two windows of one label set, answer their mean, 200 MiB, in the
 * flame graph's total, top's self and the series' one step over both windows;
 * the same pushes as alloc_space sum to 400 MiB. */
static void test_gauge_over_http(void **state)
{
	const unsigned long long mib = 1ull << 20;
	long long a = t0 + GAUGE_AT, z = a + 20;
	char path[256], *body;
	long status;

	(void)state;
	ingest_typed("inuse_space", 700, a, "heapy;main;grow", 100 * mib);
	ingest_typed("inuse_space", 701, a + 10, "heapy;main;grow", 300 * mib);
	ingest_typed("alloc_space", 702, a, "heapy;main;grow", 100 * mib);
	ingest_typed("alloc_space", 703, a + 10, "heapy;main;grow", 300 * mib);
	snprintf(path, sizeof(path), "/api/v1/flamegraph?type=inuse_space&from=%lld&to=%lld", a, z);
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	assert_non_null(strstr(body, "\"unit\":\"bytes\",\"aggregation\":\"average\""));
	assert_int_equal(json_number(body, "\"total\":"), 200 * mib);
	free(body);
	snprintf(path, sizeof(path), "/api/v1/top?type=inuse_space&from=%lld&to=%lld", a, z);
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	assert_int_equal(json_number(body, "\"name\":\"grow\",\"kind\":\"native\",\"self\":"),
			 200 * mib);
	free(body);
	snprintf(path, sizeof(path),
		 "/api/v1/series?type=inuse_space&from=%lld&to=%lld&step=20s&format=json", a, z);
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	snprintf(path, sizeof(path), "\"points\":[[%lld,%llu]]", a, 200 * mib);
	if (!strstr(body, path))
		fail_msg("series: want %s in %s", path, body);
	free(body);
	/* tables and the text tree: columns named by the unit, values in MiB */
	snprintf(path, sizeof(path), "/api/v1/top?type=inuse_space&from=%lld&to=%lld&format=table",
		 a, z);
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	if (!strstr(body, "# Memory in use top functions") ||
	    !strstr(body, "# 200 MiB (average of snapshots) \u00b7 Memory in use") ||
	    !strstr(body, "SELF_BYTES   SELF% TOTAL_BYTES  TOTAL%  FUNCTION\n") ||
	    !strstr(body, "     200MiB 100.00%      200MiB 100.00%  grow\n"))
		fail_msg("top table of inuse_space:\n%s", body);
	free(body);
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?type=inuse_space&from=%lld&to=%lld&format=text", a, z);
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	if (!strstr(body, "  TOTAL%    SELF%     BYTES  FRAME\n") ||
	    !strstr(body, "   0.0%    200MiB  all\n"))
		fail_msg("text tree of inuse_space:\n%s", body);
	free(body);
	snprintf(path, sizeof(path),
		 "/api/v1/series?type=inuse_space&from=%lld&to=%lld&step=10s&format=table", a, z);
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	if (!strstr(body, "TIME (UTC)               BYTES\n") || !strstr(body, "     100MiB\n") ||
	    !strstr(body, "     300MiB\n") || !strstr(body, "# 200 MiB (average of snapshots)"))
		fail_msg("series table of inuse_space:\n%s", body);
	free(body);
	/* the SVG's tooltips and the HTML page's values in MiB too */
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?type=inuse_space&from=%lld&to=%lld&format=svg", a, z);
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	if (!strstr(body, "200 MiB, 100.00%"))
		fail_msg("svg of inuse_space: no 200 MiB tooltip");
	assert_null(strstr(body, " samples, "));
	free(body);
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?type=inuse_space&from=%lld&to=%lld&format=html", a, z);
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	assert_non_null(strstr(body, "\"unit\":\"bytes\""));
	free(body);
	/* a diff of one type: each side its own range's mean */
	snprintf(path, sizeof(path),
		 "/api/v1/diff?type=inuse_space&before_from=%lld&before_to=%lld&after_from=%lld&"
		 "after_to=%lld",
		 a, a + 10, a, z);
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	assert_int_equal(json_number(body, "\"before\":{"), 0); /* sanity: a member */
	if (!strstr(body, "\"total\":104857600") || !strstr(body, "\"total\":209715200"))
		fail_msg("diff of inuse_space: want totals 100 MiB and 200 MiB in %.600s", body);
	free(body);
	snprintf(path, sizeof(path), "/api/v1/flamegraph?type=alloc_space&from=%lld&to=%lld", a, z);
	body = get(path, &status, NULL);
	assert_int_equal(status, 200);
	assert_int_equal(json_number(body, "\"total\":"), 400 * mib);
	free(body);
}

/* The types listing (GET /api/v1/types, `smolder types`): the types with data in
 * the range and selection, in the table's order, each with its unit, aggregation
 * and title; the CLI prints the same as a table, --db and --url alike. Runs
 * after test_gauge_over_http, whose pushes it lists. */
static void test_types_listing(void **state)
{
	static const char memory[] =
		"[{\"name\":\"alloc_space\",\"unit\":\"bytes\",\"aggregation\":\"sum\","
		"\"title\":\"Allocated bytes\"},{\"name\":\"inuse_space\",\"unit\":\"bytes\","
		"\"aggregation\":\"average\",\"title\":\"Memory in use\"}]\n";
	long long a = t0 + GAUGE_AT;
	char cmd[2048], x[256], y[256], *tx, *ty;

	(void)state;
	assert_answer(memory, "/api/v1/types?from=%lld&to=%lld", a, a + 20);
	assert_answer(memory, "/api/v1/types?from=0&to=4102444800&where=service=heapy");
	assert_answer("[{\"name\":\"cpu\",\"unit\":\"samples\",\"aggregation\":\"sum\","
		      "\"title\":\"CPU\"}]\n",
		      "/api/v1/types?from=%lld&to=%lld", (long long)t0, (long long)t0 + 10 * NWIN);
	assert_answer("[]\n", "/api/v1/types?from=%lld&to=%lld", a + 20, a + 30);
	snprintf(x, sizeof(x), "%s/types-db.txt", srv.dir);
	snprintf(y, sizeof(y), "%s/types-url.txt", srv.dir);
	snprintf(cmd, sizeof(cmd),
		 "'%s' types --db '%s' --from %lld --to %lld -o '%s' && '%s' types --url "
		 "http://127.0.0.1:%u --from %lld --to %lld -o '%s'",
		 bin, srv.db, a, a + 20, x, bin, srv.port, a, a + 20, y);
	assert_int_equal(system(cmd), 0);
	tx = test_read_file(x);
	ty = test_read_file(y);
	assert_string_equal(tx, "TYPE           UNIT         AGGREGATION  TITLE\n"
				"alloc_space    bytes        sum          Allocated bytes\n"
				"inuse_space    bytes        average      Memory in use\n");
	assert_string_equal(tx, ty);
	free(tx);
	free(ty);
}

/* Occurrences of needle in s. */
static size_t occurrences(const char *s, const char *needle)
{
	size_t n = 0;

	for (s = strstr(s, needle); s; s = strstr(s + 1, needle))
		n++;
	return n;
}

/* max_nodes over HTTP: a json flame graph of more nodes than asked comes with
 * exactly that many and says what it left out; the root's total is unchanged. */
static void test_max_nodes(void **state)
{
	const char *all = "/api/v1/flamegraph?from=0&to=4102444800";
	char path[256], *full, *pruned, *p, *q;
	size_t nodes;
	long status;

	(void)state;
	full = get(all, &status, NULL);
	assert_int_equal(status, 200);
	nodes = occurrences(full, "\"children\":[");
	print_message("  the full graph: %zu nodes\n", nodes);
	assert_true(nodes > 20); /* the minimum the comparison needs */
	snprintf(path, sizeof(path), "%s&max_nodes=16", all);
	pruned = get(path, &status, NULL);
	assert_int_equal(status, 200);
	assert_int_equal(occurrences(pruned, "\"children\":["), 16);
	assert_non_null(strstr(pruned, "\"max_nodes\":16}"));
	p = strstr(pruned, "\"pruned\":{\"nodes\":");
	assert_non_null(p);
	assert_int_equal(strtoull(p + strlen("\"pruned\":{\"nodes\":"), NULL, 10), nodes - 16);
	/* the root's total: the first "total" after the root's name */
	p = strstr(strstr(full, "\"name\":\"all\""), "\"total\":");
	q = strstr(strstr(pruned, "\"name\":\"all\""), "\"total\":");
	assert_int_equal(strtoull(p + 8, NULL, 10), strtoull(q + 8, NULL, 10));
	free(full);
	free(pruned);
}

/* Renders: SVG parses as XML, JSON parses, every format answers; hostile names
 * (the group setup's batch of their own) come out escaped. */
static void test_formats_and_hostile_names(void **state)
{
	static const char *const formats[] = { "json",	 "svg",	  "html",
					       "folded", "pprof", "speedscope" };
	char path[256], file[256], cmd[512];
	long status;
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		char *body;
		FILE *f;

		snprintf(path, sizeof(path), "/api/v1/flamegraph?format=%s&from=0&to=4102444800",
			 formats[i]);
		body = get(path, &status, &len);
		assert_int_equal(status, 200);
		assert_true(len > 0);
		snprintf(file, sizeof(file), "%s/out.%s", srv.dir, formats[i]);
		f = fopen(file, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(body, 1, len, f), len);
		fclose(f);
		if (!strcmp(formats[i], "svg")) {
			snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", file);
			assert_int_equal(system(cmd), 0);
			assert_null(strstr(body, "<script>alert"));
			assert_null(strstr(body, "<svg onload"));
		}
		if (!strcmp(formats[i], "json") || !strcmp(formats[i], "speedscope")) {
			snprintf(cmd, sizeof(cmd),
				 "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '%s'",
				 file);
			assert_int_equal(system(cmd), 0);
		}
		if (!strcmp(formats[i], "html"))
			assert_null(strstr(body, "<script>alert"));
		if (!strcmp(formats[i], "pprof")) /* gzip magic */
			assert_true((unsigned char)body[0] == 0x1f &&
				    (unsigned char)body[1] == 0x8b);
		else /* the hostile frames are there (escaped), so the checks above bite */
			assert_non_null(memmem(body, len, "alert(1)", 8));
		free(body);
	}
}

/* The CLI against --db and against --url prints the same bytes. */
static void test_cli_db_and_url_agree(void **state)
{
	char cmd[2048], a[256], b[256];
	char *x, *y;

	(void)state;
	snprintf(a, sizeof(a), "%s/cli-db.txt", srv.dir);
	snprintf(b, sizeof(b), "%s/cli-url.txt", srv.dir);
	snprintf(cmd, sizeof(cmd),
		 "ASAN_OPTIONS=detect_leaks=1 '%s' top --db '%s' --from 0 --to 4102444800 -o '%s' "
		 "&& "
		 "'%s' top --url http://127.0.0.1:%u --from 0 --to 4102444800 -o '%s'",
		 bin, srv.db, a, bin, srv.port, b);
	assert_int_equal(system(cmd), 0);
	x = test_read_file(a);
	y = test_read_file(b);
	assert_non_null(strstr(x, "parse_json"));
	assert_string_equal(x, y);
	free(x);
	free(y);
	snprintf(cmd, sizeof(cmd), "'%s' flame --db '%s' --from 20 --to 10 2>/dev/null", bin,
		 srv.db);
	assert_int_equal(WEXITSTATUS(system(cmd)), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_flamegraph_ranges_and_labels,
					  test_teardown_children),
		cmocka_unit_test_teardown(test_top, test_teardown_children),
		cmocka_unit_test_teardown(test_series, test_teardown_children),
		cmocka_unit_test_teardown(test_diff, test_teardown_children),
		cmocka_unit_test_teardown(test_labels, test_teardown_children),
		cmocka_unit_test_teardown(test_bad_queries, test_teardown_children),
		cmocka_unit_test_teardown(test_every_type_accepted, test_teardown_children),
		cmocka_unit_test_teardown(test_gauge_over_http, test_teardown_children),
		cmocka_unit_test_teardown(test_types_listing, test_teardown_children),
		cmocka_unit_test_teardown(test_max_nodes, test_teardown_children),
		cmocka_unit_test_teardown(test_formats_and_hostile_names, test_teardown_children),
		cmocka_unit_test_teardown(test_cli_db_and_url_agree, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* End-to-end tests of the context every answer carries: a real
 * collector, batches posted with known sampling periods and windows, and answers
 * whose figures are checked against what was posted: the JSON meta's totals and
 * CPU seconds (samples x period), the effective range (the stored windows', not
 * the request's), the SVG and HTML titles (range, selection, type), an answer over
 * two agents at 99 Hz and 49 Hz (no CPU time, and the reason), and the series
 * table's readable times and CPU cores (samples x period / step).
 *
 * Before the store kept periods (schema/sqlite/004_windows.sql) and query.c wrote the
 * context, every one of these failed: no meta, titles "smolder", epochs in the
 * series table, no CPU figures.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "collectortest.h"
#include "wire/batch.h"
#include "testutil.h"

#define HZ99 10101010ull /* 1e9 / 99 */
#define HZ49 20408163ull /* 1e9 / 49 */

static struct coll c;
static int64_t t0; /* the first window: recent, a multiple of 10 */

/* Agent "a" (comm=api, 99 Hz): windows t0, t0+10, t0+20; agent "b" (comm=db,
 * 49 Hz): windows t0+100, t0+110. Counts per window and stack: */
static uint64_t count_of(int agent, int w, int s)
{
	return (uint64_t)(5 + 3 * w + 11 * s + 7 * agent);
}

static void post(const char *agent, const char *comm, uint64_t period, int w, int64_t window)
{
	static const char *const stacks[] = { "main;handle;parse", "main;idle_[k]" };
	const char *keys[] = { "comm" }, *values[] = { comm };
	struct batch_builder *bb;
	char folded[128];
	struct batch *b;
	int s;

	assert_int_equal(batch_builder__new(agent, "ctxhost", "cpu", &bb), 0);
	for (s = 0; s < 2; s++) {
		snprintf(folded, sizeof(folded), "%s;%s", comm, stacks[s]);
		assert_int_equal(batch_builder__add(bb, keys, values, 1, folded,
						    count_of(agent[0] - 'a', w, s)),
				 0);
	}
	assert_int_equal(batch_builder__finish(bb, (uint64_t)w + 1, window, 10, period, &b), 0);
	assert_int_equal(post_batch(c.port, NULL, b, NULL), 200);
	batch__free(b);
	batch_builder__free(bb);
}

/* Samples agent posted in windows [w0, w1). */
static uint64_t posted(int agent, int w0, int w1)
{
	uint64_t sum = 0;
	int w;

	for (w = w0; w < w1; w++)
		sum += count_of(agent, w, 0) + count_of(agent, w, 1);
	return sum;
}

static int group_setup(void **state)
{
	int w;

	(void)state;
	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	coll_start_for_group(&c);
	t0 = (int64_t)time(NULL) - 3600;
	t0 -= t0 % 10;
	for (w = 0; w < 3; w++)
		post("a", "api", HZ99, w, t0 + 10 * w);
	for (w = 0; w < 2; w++)
		post("b", "db", HZ49, w, t0 + 100 + 10 * w);
	/* the minimum seen: every batch stored */
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"), 5);
	return 0;
}

static int group_teardown(void **state)
{
	coll_stop(&c);
	coll_teardown(state);
	curl_global_cleanup();
	return 0;
}

static char *get(const char *fmt, ...)
{
	char path[1024];
	struct reply r;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	r = http_get(c.port, path, NULL);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
	return r.body;
}

static void assert_has(const char *text, const char *want)
{
	if (!strstr(text, want))
		fail_msg("want '%s' in:\n%.3000s", want, text);
}

/* "2026-11-30 23:40:00" (date true) or "23:40:00", UTC. */
static void utc(int64_t t, bool date, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	assert_non_null(gmtime_r(&tt, &tm));
	strftime(buf, len, date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
}

/* The title's range text, as the answer writes it (the date once per day). */
static void range_text(int64_t from, int64_t to, char *buf, size_t len)
{
	char a[32], b[32];

	utc(from, true, a, sizeof(a));
	utc(to, true, b, sizeof(b));
	if (!strncmp(a, b, 10))
		utc(to, false, b, sizeof(b));
	snprintf(buf, len, "%s\u2013%s UTC", a, b);
}

/* The JSON meta's figures are what was posted: the total, samples x period, and
 * the windows' range rather than the request's. */
static void test_meta(void **state)
{
	uint64_t total = posted(0, 1, 3); /* windows t0+10 and t0+20 start in range */
	char want[512], *body;

	(void)state;
	body = get("/api/v1/flamegraph?format=json&from=%lld&to=%lld&where=comm=api",
		   (long long)t0 + 5, (long long)t0 + 25);
	snprintf(want, sizeof(want),
		 "\"meta\":{\"type\":\"cpu\",\"unit\":\"samples\",\"aggregation\":\"sum\","
		 "\"period_ns\":%llu,"
		 "\"periods\":\"99 Hz\",\"granularity\":\"function\",\"from\":%lld,\"to\":%lld,"
		 "\"effective_from\":%lld,\"effective_to\":%lld,\"where\":[\"comm=api\"],"
		 "\"total\":%llu,\"cpu_seconds\":%.6f}",
		 HZ99, (long long)t0 + 5, (long long)t0 + 25, (long long)t0 + 10,
		 (long long)t0 + 30, (unsigned long long)total, (double)total * HZ99 / 1e9);
	assert_has(body, want);
	free(body);

	/* top's JSON has the same meta */
	body = get("/api/v1/top?format=json&from=%lld&to=%lld&where=comm=api", (long long)t0 + 5,
		   (long long)t0 + 25);
	assert_has(body, want + strlen("\"meta\":{\"type\":\"cpu\""));
	free(body);
}

/* SVG and HTML titles name the type, the selection and the range asked for. */
static void test_titles(void **state)
{
	char range[128], want[256], *body;

	(void)state;
	range_text(t0, t0 + 30, range, sizeof(range));
	snprintf(want, sizeof(want), "CPU flame graph \u00b7 comm=api \u00b7 %s", range);
	body = get("/api/v1/flamegraph?format=svg&from=%lld&to=%lld&where=comm=api", (long long)t0,
		   (long long)t0 + 30);
	assert_has(body, want);
	free(body);
	body = get("/api/v1/flamegraph?format=html&from=%lld&to=%lld&where=comm=api", (long long)t0,
		   (long long)t0 + 30);
	snprintf(want + strlen(want), sizeof(want) - strlen(want), "</title>");
	assert_has(body, want);
	free(body);

	/* a diff names both sides */
	body = get("/api/v1/diff?format=svg&before_from=%lld&before_to=%lld&after_from=%lld"
		   "&after_to=%lld&before_where=comm=api&after_where=comm=db",
		   (long long)t0, (long long)t0 + 30, (long long)t0 + 100, (long long)t0 + 120);
	range_text(t0, t0 + 30, range, sizeof(range));
	snprintf(want, sizeof(want), "CPU diff \u00b7 before: comm=api \u00b7 %s", range);
	assert_has(body, want);
	range_text(t0 + 100, t0 + 120, range, sizeof(range));
	snprintf(want, sizeof(want), "after: comm=db \u00b7 %s", range);
	assert_has(body, want);
	free(body);
}

/* Two agents at 99 Hz and 49 Hz in one answer: samples, but no CPU time, and why. */
static void test_mixed_periods(void **state)
{
	uint64_t total = posted(0, 0, 3) + posted(1, 0, 2);
	char want[256], *body;

	(void)state;
	body = get("/api/v1/flamegraph?format=json&from=%lld&to=%lld", (long long)t0,
		   (long long)t0 + 200);
	assert_has(body, "\"period_ns\":null,\"no_cpu_reason\":\"mixed sampling periods: CPU "
			 "time not shown\",\"periods\":\"99 Hz, 49 Hz\"");
	snprintf(want, sizeof(want), "\"total\":%llu,\"cpu_seconds\":null}",
		 (unsigned long long)total);
	assert_has(body, want);
	free(body);

	/* the text tree's header says it too, and shows no CPU column figures */
	body = get("/api/v1/flamegraph?format=text&from=%lld&to=%lld", (long long)t0,
		   (long long)t0 + 200);
	assert_has(body, "mixed sampling periods: CPU time not shown (99 Hz, 49 Hz)");
	assert_has(body, "100.0%     0.0%         -  all\n");
	free(body);

	/* a selection of one agent's processes has its windows and its period */
	body = get("/api/v1/flamegraph?format=json&from=%lld&to=%lld&where=comm=db", (long long)t0,
		   (long long)t0 + 200);
	snprintf(want, sizeof(want),
		 "\"period_ns\":%llu,\"periods\":\"49 Hz\",\"granularity\":\"function\","
		 "\"from\":%lld,\"to\":%lld,\"effective_from\":%lld,\"effective_to\":%lld",
		 HZ49, (long long)t0, (long long)t0 + 200, (long long)t0 + 100,
		 (long long)t0 + 120);
	assert_has(body, want);
	free(body);

	/* each agent alone has its own period and CPU time */
	body = get("/api/v1/top?format=table&from=%lld&to=%lld", (long long)t0 + 100,
		   (long long)t0 + 200);
	assert_has(body, "49 Hz");
	snprintf(want, sizeof(want), "%.2f s CPU", (double)posted(1, 0, 2) * HZ49 / 1e9);
	assert_has(body, want);
	free(body);
}

/* The series table: readable UTC times, samples and cores = samples x period /
 * step; its JSON keeps epochs and gives the factor. */
static void test_series(void **state)
{
	uint64_t first = posted(0, 0, 2), second = posted(0, 2, 3);
	char when[32], want[128], *body;

	(void)state;
	body = get("/api/v1/series?format=table&from=%lld&to=%lld&step=20s&where=comm=api",
		   (long long)t0, (long long)t0 + 40);
	assert_has(body, "TIME (UTC)             SAMPLES    CORES\n");
	utc(t0, true, when, sizeof(when));
	snprintf(want, sizeof(want), "%-19s %10llu %8.3f\n", when, (unsigned long long)first,
		 (double)first * HZ99 / 1e9 / 20);
	assert_has(body, want);
	utc(t0 + 20, true, when, sizeof(when));
	snprintf(want, sizeof(want), "%-19s %10llu %8.3f\n", when, (unsigned long long)second,
		 (double)second * HZ99 / 1e9 / 20);
	assert_has(body, want);
	free(body);

	body = get("/api/v1/series?format=json&from=%lld&to=%lld&step=20s&where=comm=api",
		   (long long)t0, (long long)t0 + 40);
	snprintf(want, sizeof(want), "\"cores_per_sample\":%.9g}", (double)HZ99 / 1e9 / 20);
	assert_has(body, want);
	snprintf(want, sizeof(want), "[%lld,%llu]", (long long)t0, (unsigned long long)first);
	assert_has(body, want);
	free(body);

	/* a step shorter than the windows is raised to their length, and says so:
	 * 1 s steps put each 10 s window's samples into one step in ten, ten times
	 * the CPU it used */
	body = get("/api/v1/series?format=json&from=%lld&to=%lld&step=1s&where=comm=api",
		   (long long)t0, (long long)t0 + 30);
	assert_has(body, "\"step\":10,\"requested_step\":1,");
	for (int w = 0; w < 3; w++) {
		snprintf(want, sizeof(want), "[%lld,%llu]", (long long)t0 + 10 * w,
			 (unsigned long long)posted(0, w, w + 1));
		assert_has(body, want);
	}
	free(body);
	body = get("/api/v1/series?format=table&from=%lld&to=%lld&step=1s&where=comm=api",
		   (long long)t0, (long long)t0 + 30);
	assert_has(body, "# step 10 s (raised from 1 s: no step is shorter than the windows, 10 s "
			 "here); CORES");
	utc(t0, true, when, sizeof(when));
	snprintf(want, sizeof(want), "%-19s %10llu %8.3f\n", when,
		 (unsigned long long)posted(0, 0, 1), (double)posted(0, 0, 1) * HZ99 / 1e9 / 10);
	assert_has(body, want);
	free(body);
}

/* Samples whose windows have no row (stored before migration 004 kept periods):
 * the answer has its samples, says the period is unknown and shows no CPU time. */
static void test_unknown_period(void **state)
{
	char sql[128], want[128], *body;
	sqlite3 *db;

	(void)state;
	post("c", "old", HZ99, 0, t0 + 300);
	assert_int_equal(sqlite3_open(c.db, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	snprintf(sql, sizeof(sql), "DELETE FROM windows WHERE window_start = %lld",
		 (long long)t0 + 300);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_changes(db), 1);
	sqlite3_close(db);

	body = get("/api/v1/flamegraph?format=json&from=%lld&to=%lld", (long long)t0 + 300,
		   (long long)t0 + 310);
	assert_has(body, "\"period_ns\":null,\"no_cpu_reason\":\"sampling period unknown");
	assert_has(body, "\"effective_from\":null,\"effective_to\":null");
	snprintf(want, sizeof(want), "\"total\":%llu,\"cpu_seconds\":null",
		 (unsigned long long)(count_of(2, 0, 0) + count_of(2, 0, 1)));
	assert_has(body, want);
	free(body);
	body = get("/api/v1/flamegraph?format=text&from=%lld&to=%lld", (long long)t0 + 300,
		   (long long)t0 + 310);
	assert_has(body, "windows unknown (stored before they were kept)");
	free(body);
}

/* An empty answer to a selection says which value no label set in the range has,
 * with the values the key does have there, instead of a bare "no samples". */
static void test_empty_selection(void **state)
{
	char *body;

	(void)state;
	body = get("/api/v1/flamegraph?format=json&from=%lld&to=%lld&where=comm=apx", (long long)t0,
		   (long long)t0 + 200);
	assert_has(body, "\"total\":0,\"empty_reason\":\"no comm=apx in range (comm: api, db)\"");
	free(body);
	/* comm=api wrote nothing in db's windows: the listing is the range's own */
	body = get("/api/v1/top?format=table&from=%lld&to=%lld&where=comm=api", (long long)t0 + 100,
		   (long long)t0 + 120);
	assert_has(body, "# 0 samples \u00b7 no comm=api in range (comm: db)");
	free(body);
	/* an answer with samples carries no such reason */
	body = get("/api/v1/flamegraph?format=json&from=%lld&to=%lld&where=comm=api", (long long)t0,
		   (long long)t0 + 200);
	if (strstr(body, "empty_reason"))
		fail_msg("an answer with samples has an empty_reason: %.500s", body);
	free(body);
}

/* Off-CPU values are nanoseconds: the top and series tables name their columns
 * by that unit and print times ("1.23s", "45.0ms"), never raw nanoseconds that
 * break the columns, nor "samples" or "CPU". */
static void test_offcpu_units(void **state)
{
	static const uint64_t waits[] = { 1234567890, 45000000 }; /* ns: 1.23 s, 45 ms */
	static const char *const stacks[] = { "api;main;wait_io", "api;main;wait_lock" };
	const char *keys[] = { "comm" }, *values[] = { "api" };
	const int64_t w = t0 + 300;
	struct batch_builder *bb;
	char want[128], *body, *line;
	struct batch *b;
	int s;

	(void)state;
	assert_int_equal(batch_builder__new("off", "ctxhost", "offcpu", &bb), 0);
	for (s = 0; s < 2; s++)
		assert_int_equal(batch_builder__add(bb, keys, values, 1, stacks[s], waits[s]), 0);
	assert_int_equal(batch_builder__finish(bb, 1, w, 10, 1, &b), 0);
	assert_int_equal(post_batch(c.port, NULL, b, NULL), 200);
	batch__free(b);
	batch_builder__free(bb);

	body = get("/api/v1/top?type=offcpu&format=table&from=%lld&to=%lld", (long long)w,
		   (long long)w + 10);
	assert_has(body, " SELF_TIME   SELF% TOTAL_TIME  TOTAL%  FUNCTION\n");
	/* the minimum seen: both functions' rows, with their times */
	snprintf(want, sizeof(want), "%10.2fs %6.2f%%", (double)waits[0] / 1e9,
		 100.0 * (double)waits[0] / (double)(waits[0] + waits[1]));
	assert_has(body, want);
	snprintf(want, sizeof(want), "%9.1fms %6.2f%%", (double)waits[1] / 1e6,
		 100.0 * (double)waits[1] / (double)(waits[0] + waits[1]));
	assert_has(body, want);
	if (strstr(body, "1234567890") || strstr(body, "SELF_CPU") || strstr(body, "SAMPLES"))
		fail_msg("off-CPU top shows samples or raw nanoseconds:\n%s", body);
	/* every row's function starts in one column */
	for (line = strstr(body, "\n SELF_TIME"); line && line[1]; line = strchr(line + 1, '\n'))
		if (line[1] != '#' && strlen(line + 1) > 44 && line[1 + 38] != ' ')
			fail_msg("a row out of line: %.80s", line + 1);
	free(body);

	body = get("/api/v1/series?type=offcpu&format=table&from=%lld&to=%lld&step=10s",
		   (long long)w, (long long)w + 10);
	assert_has(body, "TIME (UTC)             OFF_CPU  WAITING\n");
	snprintf(want, sizeof(want), "%9.2fs %8.3f\n", (double)(waits[0] + waits[1]) / 1e9,
		 (double)(waits[0] + waits[1]) / 1e9 / 10);
	assert_has(body, want);
	free(body);
}

/* A spike that changes what the CPU does, not how much: six windows of 100
 * samples each, validate's part 10, 10, 90, 90, 10, 10. The plain series is flat;
 * function=^validate$ gives each step's matching samples, in steps of the posted
 * windows, and a pattern matches anywhere in a name. */
static void test_function_series(void **state)
{
	static const struct {
		const char *path, *reason;
	} refused[] = {
		{ "/api/v1/series?breakdown=21", "breakdown wants a number of functions, 1 to 20" },
		{ "/api/v1/series?breakdown=2&function=a", "two views" },
		{ "/api/v1/series?function=%28", "is not a regular expression" },
		{ "/api/v1/series?function=%28a%29%5C1", "back-references" },
		{ "/api/v1/series?from=-1d&step=10s&function=a", "more than 2000 points" },
		{ "/api/v1/top?function=a", "unknown parameter 'function'" },
	};
	static const uint64_t validate[] = { 10, 10, 90, 90, 10, 10 };
	/* validate is Python, on two lines: a breakdown merges them */
	static const char *const stacks[] = { "api;main;validate (app.py:12)",
					      "api;main;validate (app.py:13)", "api;main;serve" };
	const char *keys[] = { "comm" }, *values[] = { "fnapi" };
	const int64_t w0 = t0 + 600;
	char want[128], *body;
	struct reply r;
	int w;

	(void)state;
	for (w = 0; w < 6; w++) {
		struct batch_builder *bb;
		struct batch *b;

		assert_int_equal(batch_builder__new("fn", "ctxhost", "cpu", &bb), 0);
		assert_int_equal(
			batch_builder__add(bb, keys, values, 1, stacks[w % 2], validate[w]), 0);
		assert_int_equal(
			batch_builder__add(bb, keys, values, 1, stacks[2], 100 - validate[w]), 0);
		assert_int_equal(
			batch_builder__finish(bb, (uint64_t)w + 1, w0 + 10 * w, 10, HZ99, &b), 0);
		assert_int_equal(post_batch(c.port, NULL, b, NULL), 200);
		batch__free(b);
		batch_builder__free(bb);
	}
	body = get("/api/v1/series?format=json&from=%lld&to=%lld&step=10s&where=comm=fnapi",
		   (long long)w0, (long long)w0 + 60);
	for (w = 0; w < 6; w++) { /* flat: the spike is not in the total */
		snprintf(want, sizeof(want), "[%lld,100]", (long long)(w0 + 10 * w));
		assert_has(body, want);
	}
	free(body);
	body = get("/api/v1/series?format=json&from=%lld&to=%lld&step=10s&where=comm=fnapi"
		   "&function=%%5Evalidate%%24",
		   (long long)w0, (long long)w0 + 60);
	assert_has(body, "\"function\":\"^validate$\"");
	for (w = 0; w < 6; w++) {
		snprintf(want, sizeof(want), "[%lld,100,%llu]", (long long)(w0 + 10 * w),
			 (unsigned long long)validate[w]);
		assert_has(body, want);
	}
	free(body);
	/* anywhere in the name; the process frame (fnapi) is not a function */
	body = get("/api/v1/series?format=table&from=%lld&to=%lld&step=20s&where=comm=fnapi"
		   "&function=lid",
		   (long long)w0, (long long)w0 + 60);
	assert_has(body, "TIME (UTC)             SAMPLES    MATCHED   SHARE\n");
	assert_has(body, "        200        180  90.00%\n");
	free(body);
	body = get("/api/v1/series?format=json&from=%lld&to=%lld&step=10s&function=fnapi",
		   (long long)w0, (long long)w0 + 20);
	snprintf(want, sizeof(want), "[%lld,100,0]", (long long)w0);
	assert_has(body, want);
	free(body);

	/* the breakdown names the heaviest functions by self samples (serve 380,
	 * validate 220) and gives each one's samples per step: the swap shows */
	body = get("/api/v1/series?format=json&from=%lld&to=%lld&step=10s&where=comm=fnapi"
		   "&breakdown=2",
		   (long long)w0, (long long)w0 + 60);
	assert_has(body, "\"breakdown\":[{\"name\":\"serve\",\"kind\":\"native\",\"text\":"
			 "\"serve\"},{\"name\":\"validate\",\"kind\":\"python\",\"text\":"
			 "\"validate (app.py)\"}]");
	for (w = 0; w < 6; w++) {
		snprintf(want, sizeof(want), "[%lld,100,%llu,%llu]", (long long)(w0 + 10 * w),
			 (unsigned long long)(100 - validate[w]), (unsigned long long)validate[w]);
		assert_has(body, want);
	}
	free(body);
	body = get("/api/v1/series?format=table&from=%lld&to=%lld&step=20s&where=comm=fnapi"
		   "&breakdown=5",
		   (long long)w0, (long long)w0 + 60);
	assert_has(body, "# F1 = serve\n# F2 = validate (app.py)\n");
	assert_has(body, "TIME (UTC)             SAMPLES      F1      F2\n");
	assert_has(body, "        200   10.0%   90.0%\n");
	free(body);

	/* refusals, each with its reason */
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		r = http_get(c.port, refused[i].path, NULL);
		if (r.status != 400 || !r.body || !strstr(r.body, refused[i].reason))
			fail_msg("%s: want 400 '%s', got %ld %s", refused[i].path,
				 refused[i].reason, r.status, r.body ? r.body : "");
		free(r.body);
	}
}

/* A C++ name's template arguments are collapsed where a person reads (the top
 * table, the text tree), kept whole in JSON. */
static void test_template_names(void **state)
{
	static const char full[] = "std::__introsort_loop<__gnu_cxx::__normal_iterator<int*, "
				   "std::vector<int, std::allocator<int> > >, long>";
	const char *keys[] = { "comm" }, *values[] = { "cxx" };
	const int64_t w = t0 + 900;
	struct batch_builder *bb;
	char stack[256], *body;
	struct batch *b;

	(void)state;
	snprintf(stack, sizeof(stack), "cxx;main;%s", full);
	assert_int_equal(batch_builder__new("cxx", "ctxhost", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, stack, 40), 0);
	assert_int_equal(batch_builder__finish(bb, 1, w, 10, HZ99, &b), 0);
	assert_int_equal(post_batch(c.port, NULL, b, NULL), 200);
	batch__free(b);
	batch_builder__free(bb);

	body = get("/api/v1/top?format=table&from=%lld&to=%lld&where=comm=cxx", (long long)w,
		   (long long)w + 10);
	assert_has(body, "  std::__introsort_loop<\u2026>\n");
	if (strstr(body, "normal_iterator"))
		fail_msg("the table shows template arguments:\n%s", body);
	free(body);
	body = get("/api/v1/flamegraph?format=text&from=%lld&to=%lld&where=comm=cxx", (long long)w,
		   (long long)w + 10);
	assert_has(body, "std::__introsort_loop<\u2026>");
	free(body);
	body = get("/api/v1/top?format=json&from=%lld&to=%lld&where=comm=cxx", (long long)w,
		   (long long)w + 10);
	/* whole ('<' and '>' escaped as JSON may, for HTML's sake) */
	assert_has(body, "std::__introsort_loop\\u003c__gnu_cxx::__normal_iterator\\u003cint*, "
			 "std::vector\\u003cint, std::allocator\\u003cint\\u003e \\u003e \\u003e, "
			 "long\\u003e\"");
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meta),	       cmocka_unit_test(test_titles),
		cmocka_unit_test(test_mixed_periods),  cmocka_unit_test(test_series),
		cmocka_unit_test(test_unknown_period), cmocka_unit_test(test_empty_selection),
		cmocka_unit_test(test_offcpu_units),   cmocka_unit_test(test_function_series),
		cmocka_unit_test(test_template_names),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

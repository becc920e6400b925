/* The ClickHouse store's timeline totals (schema/clickhouse/008_totals.sql)
 * against a private clickhouse-server (clickhousetest.h): a timeline's buckets
 * equal the test's own sums of what it ingested, whether the tiers' totals
 * answer (shown by planting a larger total, which the answer then carries) or
 * the tiers' rows do (totals that disagree with `counts`, or a range reaching
 * below where schema 8 found buckets already built, in a database upgraded
 * from before schema 5); a late batch's rebuilt bucket totalled again;
 * retention dropping the totals' days.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>

#include <cmocka.h>

#include "wire/batch.h"
#include "store/store.h"
#include "testutil.h"
#include "integration/clickhousetest.h"
#include "store/clickhouse/tables.h"
#include "store/clickhouse/tiers.h"

static struct chsrv srv;

/* The data: two hours and a bit from a day boundary, a window every 5 minutes
 * and 40 s (so buckets hold zero, one or two), three rows each. */
#define DAY0	    INT64_C(1699920000) /* 19675 * 86400 */
#define NWINDOWS    24
#define WINDOW_STEP 340
#define MAX_POINTS  64

static int64_t window_at(int k)
{
	return DAY0 + 30 + (int64_t)k * WINDOW_STEP;
}

/* Window k's counts: pod=web's two stacks and pod=db's one. */
static uint64_t count_web(int k, int stack)
{
	return (uint64_t)(k % 7 + 1) * (stack ? 3 : 1);
}

static uint64_t count_db(int k)
{
	return (uint64_t)(k % 5) * 11 + 2;
}

static struct batch *window_batch(const char *agent, uint64_t seq, int64_t ws, const char *pod,
				  const char *const *stacks, const uint64_t *counts, size_t n)
{
	const char *key = "pod", *value = pod;
	struct batch_builder *bb;
	struct batch *b;
	size_t i;

	assert_int_equal(batch_builder__new(agent, "host1", "cpu", &bb), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(batch_builder__add(bb, &key, &value, 1, stacks[i], counts[i]), 0);
	assert_int_equal(batch_builder__finish(bb, seq, ws, 10, 1000000, &b), 0);
	batch_builder__free(bb);
	return b;
}

static void ingest(struct store *s, struct batch *b)
{
	bool dup = true;

	assert_int_equal(store__ingest(s, b, &dup), 0);
	assert_false(dup);
	batch__free(b);
}

static void ingest_window(struct store *s, int k)
{
	static const char *const web[] = { "app;main;work", "app;main;idle" }, *const db[] = {
		"db;main;query"
	};
	const uint64_t cw[] = { count_web(k, 0), count_web(k, 1) }, cd[] = { count_db(k) };

	ingest(s, window_batch("agent1", (uint64_t)k + 1, window_at(k), "web", web, cw, 2));
	ingest(s, window_batch("agent2", (uint64_t)k + 1, window_at(k), "db", db, cd, 1));
}

static void maintain_all(struct store *s, int64_t now)
{
	bool more = true;
	int steps;

	for (steps = 0; more; steps++) {
		assert_int_equal(store__maintain(s, now, 0, &more), 0);
		assert_true(steps < 1000);
	}
}

struct series {
	int64_t start[MAX_POINTS];
	uint64_t count[MAX_POINTS];
	size_t n;
};

static int series_cb(void *ctx, int64_t start, uint64_t count)
{
	struct series *sr = ctx;

	assert_true(sr->n < MAX_POINTS);
	sr->start[sr->n] = start;
	sr->count[sr->n++] = count;
	return 0;
}

/* The timeline of [from, DAY0 + 3 h) at step, of pod=pod or of all. */
static void series_from(struct store *s, int64_t from, int64_t step, const char *pod,
			struct series *out)
{
	const char *key = "pod";
	struct store_query q = { .from = from, .to = DAY0 + 3 * 3600 };

	if (pod) {
		q.keys = &key;
		q.values = &pod;
		q.nlabels = 1;
	}
	memset(out, 0, sizeof(*out));
	assert_int_equal(store__query_series(s, &q, step, series_cb, out), 0);
}

static void series_of(struct store *s, int64_t step, const char *pod, struct series *out)
{
	series_from(s, DAY0, step, pod, out);
}

/* The same from the test's own counts (windows [0, nwin), plus extra at
 * extra_at when extra), bucket b's count raised by bump. */
static void series_want(int64_t step, const char *pod, int nwin, int64_t extra_at, uint64_t extra,
			int64_t bump_at, uint64_t bump, struct series *out)
{
	uint64_t sum[MAX_POINTS] = { 0 };
	size_t nb = (size_t)(3 * 3600 / step), i;
	int k;

	assert_true(nb <= MAX_POINTS);
	for (k = 0; k < nwin; k++) {
		uint64_t c = 0;

		if (!pod || !strcmp(pod, "web"))
			c += count_web(k, 0) + count_web(k, 1);
		if (!pod || !strcmp(pod, "db"))
			c += count_db(k);
		sum[(window_at(k) - DAY0) / step] += c;
	}
	if (extra)
		sum[(extra_at - DAY0) / step] += extra;
	if (bump)
		sum[(bump_at - DAY0) / step] += bump;
	memset(out, 0, sizeof(*out));
	for (i = 0; i < nb; i++)
		if (sum[i]) {
			out->start[out->n] = DAY0 + (int64_t)i * step;
			out->count[out->n++] = sum[i];
		}
}

static void assert_series_equal(const struct series *got, const struct series *want)
{
	size_t i;

	assert_int_equal(got->n, want->n);
	for (i = 0; i < want->n; i++) {
		assert_int_equal(got->start[i], want->start[i]);
		assert_int_equal(got->count[i], want->count[i]);
	}
}

/* Compares the store's timeline of [DAY0, DAY0 + 3 h) at step with the test's
 * own (series_want() of every window, with its extra and bump), once the
 * test's has at least min points. */
static void check_series(struct store *s, int64_t step, const char *pod, size_t min,
			 int64_t extra_at, uint64_t extra, int64_t bump_at, uint64_t bump)
{
	struct series got, want;

	series_want(step, pod, NWINDOWS, extra_at, extra, bump_at, bump, &want);
	assert_true(want.n >= min);
	series_of(s, step, pod, &got);
	assert_series_equal(&got, &want);
}

/* Whether the database's totals of tier (its table) agree with `counts`: the
 * condition under which a timeline reads them (store/clickhouse/read.c). */
static bool totals_agree(const char *db, const char *table, int tier)
{
	char a[256], b[256];

	snprintf(a, sizeof(a), "SELECT uniqExact(start, type, labelset) FROM %s.%s", db, table);
	snprintf(b, sizeof(b),
		 "SELECT sum(r) FROM (SELECT max(blocks) AS r FROM %s.counts WHERE tier = %d "
		 "GROUP BY bucket)",
		 db, tier);
	return ch_query_number(&srv, a) == ch_query_number(&srv, b) && ch_query_number(&srv, b) > 0;
}

static int group_setup(void **state)
{
	(void)state;
	return ch_group_start(&srv);
}

static int group_teardown(void **state)
{
	(void)state;
	ch_stop(&srv);
	return 0;
}

static struct store *open_db(const char *db, const struct store_options *o)
{
	struct store *s = NULL;
	char loc[128];

	ch_location(&srv, db, loc, sizeof(loc));
	assert_int_equal(store__open(loc, o, &s), 0);
	return s;
}

/* Timelines at 5 minutes (minute tier) and an hour (hour tier) equal the test's
 * sums; the totals answer them (a planted larger total shows in the answer),
 * until a tier's totals disagree with `counts`, when its rows answer again. */
static void test_totals_answer(void **state)
{
	const int64_t m = window_at(3) - (window_at(3) % 60), h = DAY0 + 3600;
	struct store *s;
	char sql[512];

	(void)state;
	ch_skip_unless_available();
	s = open_db("tot", NULL);
	for (int k = 0; k < NWINDOWS; k++)
		ingest_window(s, k);
	maintain_all(s, DAY0 + 4 * 3600);
	/* the minimum before comparing: every bucket totalled, in agreement */
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM tot.totals_minute FINAL"),
			 2 * NWINDOWS);
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM tot.totals_hour FINAL"), 2 * 3);
	assert_true(totals_agree("tot", "totals_minute", 1));
	assert_true(totals_agree("tot", "totals_hour", 2));

	check_series(s, 300, NULL, 20, 0, 0, 0, 0);
	check_series(s, 300, "web", 1, 0, 0, 0, 0);
	check_series(s, 3600, "db", 3, 0, 0, 0, 0);

	/* a larger copy of one minute's and one hour's total: reads keep the
	 * largest, so an answer from the totals carries it */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO tot.totals_minute SELECT start, type, labelset, value + 1000 "
		 "FROM tot.totals_minute FINAL WHERE start = %" PRId64
		 " AND labelset IN (SELECT id "
		 "FROM tot.labelsets WHERE has(lvalues, 'web'))",
		 m);
	ch_exec(&srv, sql);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO tot.totals_hour SELECT start, type, labelset, value + 50 FROM "
		 "tot.totals_hour FINAL WHERE start = %" PRId64 " AND labelset IN (SELECT id FROM "
		 "tot.labelsets WHERE has(lvalues, 'db'))",
		 h);
	ch_exec(&srv, sql);
	check_series(s, 300, NULL, 1, 0, 0, m, 1000);
	check_series(s, 3600, NULL, 1, 0, 0, h, 50);

	/* a minute total of a label set no bucket has: the minute tier's totals
	 * disagree with counts, so its rows answer (the planted 1000 is gone);
	 * the hour tier's totals still answer */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO tot.totals_minute VALUES (%" PRId64 ", 'cpu', 12345, 7)", m);
	ch_exec(&srv, sql);
	check_series(s, 300, NULL, 1, 0, 0, 0, 0);
	check_series(s, 3600, NULL, 1, 0, 0, h, 50);
	store__close(s);
}

/* A late batch (its minute and hour already built) builds them again, and their
 * totals with them: a new label set's row is added, the bucket's sum grows,
 * and the totals still agree with counts and answer; then a late batch of a
 * label set its bucket already has, which only grows that total. */
static void test_totals_late(void **state)
{
	static const char *const st[] = { "late;main;work" };
	static const uint64_t c[] = { 40 }, c2[] = { 25 };
	const int64_t at = window_at(5) + 10, at2 = window_at(9) + 10;
	struct store *s;

	(void)state;
	ch_skip_unless_available();
	s = open_db("late", NULL);
	for (int k = 0; k < NWINDOWS; k++)
		ingest_window(s, k);
	maintain_all(s, DAY0 + 4 * 3600);
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM late.totals_minute FINAL"),
			 2 * NWINDOWS);

	ingest(s, window_batch("agent3", 1, at, "late", st, c, 1));
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM late.totals_minute FINAL"),
			 2 * NWINDOWS + 1);
	assert_true(totals_agree("late", "totals_minute", 1));
	assert_true(totals_agree("late", "totals_hour", 2));
	check_series(s, 300, NULL, 1, at, 40, 0, 0);
	check_series(s, 3600, NULL, 1, at, 40, 0, 0);

	/* a late batch of a label set the bucket has: no new row, the total grows */
	ingest(s, window_batch("agent4", 1, at2, "web", st, c2, 1));
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM late.totals_minute FINAL"),
			 2 * NWINDOWS + 1);
	check_series(s, 300, NULL, 1, at, 40, at2, 25);
	check_series(s, 3600, NULL, 1, at, 40, at2, 25);
	store__close(s);
}

/* Retention drops the totals' days with their tiers: windows on days 0 to 3,
 * all built and totalled (retention 100 days), then retention 2 days at day 4
 * noon: the days wholly below the cut (day 2 noon) go, day 2 and 3 stay. */
static void test_totals_retention(void **state)
{
	static const char *const st[] = { "app;main;work" };
	static const uint64_t c[] = { 5 };
	struct store_options keep = { .retention_seconds = 100 * 86400 },
			     cut = { .retention_seconds = 2 * 86400 };
	struct store *s;

	(void)state;
	ch_skip_unless_available();
	s = open_db("ret", &keep);
	for (int d = 0; d < 4; d++)
		ingest(s, window_batch("agent1", (uint64_t)d + 1, DAY0 + d * 86400 + 600, "web", st,
				       c, 1));
	maintain_all(s, DAY0 + 4 * 86400 + 43200);
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM ret.totals_minute FINAL"), 4);
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM ret.totals_hour FINAL"), 4);
	store__close(s);

	s = open_db("ret", &cut);
	maintain_all(s, DAY0 + 4 * 86400 + 43200);
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM ret.totals_minute FINAL"), 2);
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM ret.totals_hour FINAL"), 2);
	assert_int_equal(ch_query_number(&srv, "SELECT min(start) FROM ret.totals_hour"),
			 DAY0 + 2 * 86400);
	store__close(s);
}

/* ---- a database upgraded from before schema 8 ----------------------------- */

/* Makes database db what a collector of version 7, first installed before
 * schema 5, left with ref's data: schema files 001-007 applied as written,
 * their versions recorded, every table's rows from ref but `counts` and the
 * totals (005 copied nothing into `counts`: older buckets have no row there),
 * the raw rows in 006's samples_raw. */
static void make_v7(const char *db, const char *ref)
{
	static const char *const same[] = { "hour",	"tiers",  "seen",	  "labelsets",
					    "ingested", "frames", "stack_frames", CH_MINUTE_TABLE };
	char sql[512];
	size_t i;

	ch_make_at_version(&srv, db, CH_TOTALS_VERSION - 1);
	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		snprintf(sql, sizeof(sql), "INSERT INTO %s.%s SELECT * FROM %s.%s", db, same[i],
			 ref, same[i]);
		ch_exec(&srv, sql);
	}
	snprintf(sql, sizeof(sql),
		 "INSERT INTO %s.samples_raw (window_start, type, labelset, stack, agent, seq, "
		 "value) SELECT window_start, type, labelset, stack, agent, seq, value FROM "
		 "%s." CH_RAW_TABLE,
		 db, ref);
	ch_exec(&srv, sql);
}

/* A database upgraded from there: its old buckets have tier rows but neither
 * totals nor `counts` rows, so totals and `counts` agree over the new buckets
 * alone. A timeline that reaches below where schema 8 marked the totals'
 * start (totals_T) reads the tiers' rows and counts every window; one above
 * it reads the totals (a planted larger total shows). */
static void test_totals_upgrade(void **state)
{
	const int half = NWINDOWS / 2;
	const int64_t m = window_at(NWINDOWS - 2) - window_at(NWINDOWS - 2) % 60,
		      from = DAY0 + 2 * 3600;
	struct series got, want;
	struct store *s;
	char sql[512];
	size_t i, n;

	(void)state;
	ch_skip_unless_available();
	s = open_db("uref", NULL);
	for (int k = 0; k < half; k++)
		ingest_window(s, k);
	maintain_all(s, window_at(half));
	store__close(s);
	make_v7("up7", "uref");
	assert_true(ch_query_number(&srv, "SELECT count() FROM up7.samples_minute") > 0);
	assert_int_equal(ch_query_number(&srv, "SELECT count() FROM up7.counts"), 0);

	s = open_db("up7", NULL);
	for (int k = half; k < NWINDOWS; k++)
		ingest_window(s, k);
	maintain_all(s, DAY0 + 4 * 3600);
	/* the minimum before comparing: the new buckets totalled, in agreement
	 * with `counts`, the old ones not */
	n = ch_query_number(&srv, "SELECT count() FROM up7.totals_minute FINAL");
	assert_true(n >= 2 * (size_t)(NWINDOWS - half) - 2 && n < 2 * NWINDOWS);
	assert_true(totals_agree("up7", "totals_minute", 1));
	assert_true(totals_agree("up7", "totals_hour", 2));

	check_series(s, 300, NULL, 20, 0, 0, 0, 0);
	check_series(s, 3600, NULL, 3, 0, 0, 0, 0);

	/* above the mark the totals answer: a planted larger total shows there,
	 * and not in the timeline that reaches below it */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO up7.totals_minute SELECT start, type, labelset, value + 1000 "
		 "FROM up7.totals_minute FINAL WHERE start = %" PRId64,
		 m);
	ch_exec(&srv, sql);
	series_from(s, from, 300, NULL, &got);
	series_want(300, NULL, NWINDOWS, 0, 0, m, 1000 * 2, &want);
	for (i = n = 0; i < want.n; i++)
		if (want.start[i] >= from) {
			want.start[n] = want.start[i];
			want.count[n++] = want.count[i];
		}
	want.n = n;
	assert_true(want.n >= 2);
	assert_series_equal(&got, &want);
	check_series(s, 300, NULL, 1, 0, 0, 0, 0);
	store__close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_totals_answer),
		cmocka_unit_test(test_totals_late),
		cmocka_unit_test(test_totals_retention),
		cmocka_unit_test(test_totals_upgrade),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

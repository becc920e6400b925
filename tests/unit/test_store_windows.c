/* Unit tests of the store's windows table (schema/sqlite/004_windows.sql) and of
 * store__windows(): what ingest records per window (length, sampling period), what
 * the minute rollups make of a bucket's windows once its raw windows are gone, that
 * retention drops them with the blocks, what a range with mixed periods answers,
 * and what a label selection keeps (windows with a selected label set's block at
 * their start). Batches are built with batch_builder (wire/batch.h) on an
 * in-memory store, and on a file for a reader.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "testutil.h"
#include "store/plan.h"
#include "store/sqlite/db.h"
#include "store/sqlite/tiers.h"

#define HZ99 10101010ull /* 1e9 / 99 */

#define HZ49 20408163ull /* 1e9 / 49 */

static void ingest_one(struct store *s, const char *agent, uint64_t seq, int64_t window,
		       uint32_t seconds, uint64_t period, uint64_t count)
{
	const char *keys[] = { "comm" }, *values[] = { "api" };
	struct batch_builder *bb = NULL;
	struct batch *b = NULL;
	bool dup = true;

	assert_int_equal(batch_builder__new(agent, "h1", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 1, "api;main;work", count), 0);
	/* a second label set: the table still gets one row per batch */
	values[0] = "db";
	assert_int_equal(batch_builder__add(bb, keys, values, 1, "db;main;query", count), 0);
	assert_int_equal(batch_builder__finish(bb, seq, window, seconds, period, &b), 0);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	assert_false(dup);
	batch__free(b);
	batch_builder__free(bb);
}

/* One batch of one process comm=comm, pid=pid. */
static void ingest_comm(struct store *s, const char *agent, uint64_t seq, int64_t window,
			uint64_t period, const char *comm, const char *pid)
{
	const char *keys[] = { "comm", "pid" }, *values[] = { comm, pid };
	struct batch_builder *bb = NULL;
	struct batch *b = NULL;
	char stack[64];

	snprintf(stack, sizeof(stack), "%s;main", comm);
	assert_int_equal(batch_builder__new(agent, "h1", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, keys, values, 2, stack, 4), 0);
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, period, &b), 0);
	assert_int_equal(store__ingest(s, b, NULL), 0);
	batch__free(b);
	batch_builder__free(bb);
}

static struct store *open_mem(const struct store_options *o)
{
	struct store *s = NULL;

	assert_int_equal(store__open(":memory:", o, &s), 0);
	return s;
}

static struct store_windows selected(struct store *s, int64_t from, int64_t to, const char *k1,
				     const char *v1, const char *k2, const char *v2);

static struct store_windows windows(struct store *s, int64_t from, int64_t to)
{
	struct store_query q = { .from = from, .to = to };
	struct store_windows w;

	assert_int_equal(store__windows(s, &q, &w), 0);
	return w;
}

/* Ingest: one row per window and period; the range's first start and last end are
 * the windows', not the request's. */
static void test_ingest(void **state)
{
	struct store_windows w;
	struct store *s = open_mem(NULL);

	(void)state;
	ingest_one(s, "a", 1, 1000, 10, HZ99, 5);
	ingest_one(s, "a", 2, 1010, 10, HZ99, 7);
	ingest_one(s, "b", 1, 1010, 10, HZ99, 3); /* same window, same period: one row */
	ingest_one(s, "a", 3, 1020, 10, HZ99, 1);

	w = windows(s, 995, 1025);
	assert_int_equal(w.nwindows, 3);
	assert_int_equal(w.first_start, 1000);
	assert_int_equal(w.last_end, 1030);
	assert_int_equal(w.min_seconds, 10);
	assert_int_equal(w.max_seconds, 10);
	assert_int_equal(w.nperiods, 1);
	assert_int_equal(w.periods[0], HZ99);
	assert_int_equal(w.period_batches[0], 4);
	assert_int_equal(w.more_periods, 0);

	/* a window counts when its start is in [from, to) */
	w = windows(s, 1001, 1020);
	assert_int_equal(w.nwindows, 1);
	assert_int_equal(w.first_start, 1010);
	assert_int_equal(w.last_end, 1020);
	assert_int_equal(w.period_batches[0], 2);

	/* nothing stored there, an empty or reversed range */
	w = windows(s, 2000, 3000);
	assert_int_equal(w.nwindows, 0);
	assert_int_equal(w.nperiods, 0);
	w = windows(s, 1000, 1000);
	assert_int_equal(w.nwindows, 0);
	store__close(s);
}

/* Two agents at 99 Hz and 49 Hz: both periods, the more common first. */
static void test_mixed_periods(void **state)
{
	struct store_windows w;
	struct store *s = open_mem(NULL);

	(void)state;
	ingest_one(s, "a", 1, 1000, 10, HZ99, 5);
	ingest_one(s, "a", 2, 1010, 10, HZ99, 5);
	ingest_one(s, "b", 1, 1010, 10, HZ49, 5);
	w = windows(s, 0, 5000);
	assert_int_equal(w.nwindows, 2);
	assert_int_equal(w.nperiods, 2);
	assert_int_equal(w.periods[0], HZ99);
	assert_int_equal(w.period_batches[0], 2);
	assert_int_equal(w.periods[1], HZ49);
	assert_int_equal(w.period_batches[1], 1);
	/* the window at 1000 had only the 99 Hz agent */
	w = windows(s, 1000, 1010);
	assert_int_equal(w.nperiods, 1);
	assert_int_equal(w.periods[0], HZ99);
	store__close(s);
}

/* More distinct periods than reported: the rest are counted; a hostile period
 * past INT64_MAX is stored saturated, 0 (unknown) as 0. */
static void test_many_periods(void **state)
{
	struct store_windows w;
	struct store *s = open_mem(NULL);
	uint64_t i;

	(void)state;
	for (i = 0; i < STORE_WINDOWS_MAX_PERIODS + 3; i++)
		ingest_one(s, "a", i + 1, 1000, 10, 1000000 + i, 1);
	ingest_one(s, "b", 1, 2000, 10, UINT64_MAX, 1);
	ingest_one(s, "c", 1, 3000, 10, 0, 1);
	w = windows(s, 0, 5000);
	assert_int_equal(w.nperiods, STORE_WINDOWS_MAX_PERIODS);
	assert_int_equal(w.more_periods, 5);
	w = windows(s, 2000, 2001);
	assert_int_equal(w.periods[0], (uint64_t)INT64_MAX);
	w = windows(s, 3000, 3001);
	assert_int_equal(w.nperiods, 1);
	assert_int_equal(w.periods[0], 0);
	store__close(s);
}

/* Whether store__maintain() built minute rollups: the tests below fail when it
 * builds none (a rollup never built is a bug, not a reason to skip). */
static bool rollups_built(struct store *s)
{
	struct store_tiers t;

	assert_int_equal(store_read_tiers(sqlite_store_of(s), &t), 0);
	return t.built_before[TIER_MINUTE] != INT64_MIN;
}

static int add_count(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	(void)frames;
	(void)nframes;
	*(uint64_t *)ctx += count;
	return 0;
}

/* The samples of [from, to), of comm when not NULL. */
static uint64_t total(struct store *s, int64_t from, int64_t to, const char *comm)
{
	const char *keys[] = { "comm" }, *values[] = { comm };
	struct store_query q = {
		.from = from, .to = to, .keys = keys, .values = values, .nlabels = comm ? 1 : 0
	};
	uint64_t n = 0;

	assert_int_equal(store__query_stacks(s, &q, add_count, &n), 0);
	return n;
}

/* Rollups: once the raw windows of a minute bucket are gone (raw retention), its
 * windows are one row per period with the bucket's length; a late batch below the
 * watermark is counted in its bucket. */
static void test_rollup(void **state)
{
	const struct store_options o = { .retention_seconds = 100000,
					 .minute_retention_seconds = 50000,
					 .raw_retention_seconds = 100 };
	struct store_windows w;
	struct store *s = open_mem(&o);
	bool more = true;
	int64_t t;
	int steps = 0;

	(void)state;
	for (t = 1200; t < 1320; t += 10)
		ingest_one(s, "a", (uint64_t)t, t, 10, HZ99, 2);
	ingest_one(s, "b", 1, 1210, 10, HZ49, 2);
	ingest_one(s, "b", 2, 1300, 10, HZ49, 2);
	w = windows(s, 1200, 1320);
	assert_int_equal(w.nwindows, 12);
	assert_int_equal(w.max_seconds, 10);
	/* the raw sums: a's 12 batches of 2 + 2, b's 2 batches of 2 + 2 */
	assert_int_equal(total(s, 1200, 1320, NULL), 12 * 4 + 2 * 4);
	assert_int_equal(total(s, 1200, 1320, "db"), 12 * 2 + 2 * 2);

	/* at now = 1500 the minute buckets before 1380 are built (they ended
	 * STORE_ROLLUP_DELAY_SECONDS ago) and the raw windows before 1380 are older than
	 * the raw retention */
	while (more) {
		assert_int_equal(store__maintain(s, 1500, 3, &more), 0);
		assert_true(++steps < 1000);
	}
	assert_true(rollups_built(s));
	/* the raw windows are gone (kept_from past 1320): the minutes answer alone,
	 * with the raw sums */
	{
		struct store_tiers tiers;

		assert_int_equal(store_read_tiers(sqlite_store_of(s), &tiers), 0);
		assert_true(tiers.kept_from[TIER_RAW] >= 1320);
	}
	assert_int_equal(total(s, 1200, 1320, NULL), 12 * 4 + 2 * 4);
	assert_int_equal(total(s, 1200, 1320, "db"), 12 * 2 + 2 * 2);
	assert_int_equal(total(s, 1260, 1320, "api"), 7 * 2); /* b at 1300 too */
	/* [1200, 1260) and [1260, 1320) merged: one row per period, 60 s long */
	w = windows(s, 1200, 1320);
	assert_int_equal(w.nwindows, 2);
	assert_int_equal(w.first_start, 1200);
	assert_int_equal(w.last_end, 1320);
	assert_int_equal(w.min_seconds, 60);
	assert_int_equal(w.max_seconds, 60);
	assert_int_equal(w.nperiods, 2);
	assert_int_equal(w.periods[0], HZ99);
	assert_int_equal(w.period_batches[0], 12);
	assert_int_equal(w.periods[1], HZ49);
	assert_int_equal(w.period_batches[1], 2);
	w = windows(s, 1200, 1201);
	assert_int_equal(w.nperiods, 2); /* the 49 Hz batch at 1210 is in 1200's bucket */
	/* a selection finds the minute blocks at the buckets' starts */
	w = selected(s, 1200, 1320, "comm", "db", NULL, NULL);
	assert_int_equal(w.nwindows, 2);

	/* a late 10 s batch at 1230 lands in the bucket, with the bucket's length */
	ingest_one(s, "c", 1, 1230, 10, HZ99, 2);
	w = windows(s, 1200, 1260);
	assert_int_equal(w.nwindows, 1);
	assert_int_equal(w.min_seconds, 60);
	assert_int_equal(w.period_batches[0], 7);
	store__close(s);
}

/* Retention drops the windows with their blocks, and leaves the younger ones: the
 * windows are placed so that the cut (10800) is an hour boundary of every tier. */
static void test_retention(void **state)
{
	const struct store_options o = { .retention_seconds = 1000,
					 .minute_retention_seconds = 1000,
					 .raw_retention_seconds = 1000 };
	struct store_windows w;
	struct store *s = open_mem(&o);
	bool more = true;
	int64_t t;
	int steps = 0;

	(void)state;
	for (t = 0; t < 600; t += 10) {
		ingest_one(s, "a", (uint64_t)t + 1, 7200 + t, 10, HZ99, 1);
		ingest_one(s, "a", (uint64_t)t + 1000, 10800 + t, 10, HZ99, 1);
	}
	while (more) {
		assert_int_equal(store__maintain(s, 11800, 4, &more), 0);
		assert_true(++steps < 1000);
	}
	/* the last step may have built a bucket that is older than retention */
	assert_int_equal(store__maintain(s, 11800, 0, &more), 0);
	assert_true(rollups_built(s));
	/* retention cut at 10800: windows before it are gone */
	w = windows(s, 0, 10800);
	assert_int_equal(w.nwindows, 0);
	assert_int_equal(w.nperiods, 0);
	w = windows(s, 10800, 20000);
	assert_int_equal(w.nwindows, 60);
	assert_int_equal(w.first_start, 10800);
	assert_int_equal(w.last_end, 11400);
	w = selected(s, 0, 20000, "comm", "api", NULL, NULL);
	assert_int_equal(w.nwindows, 60);
	store__close(s);
}

static struct store_windows selected(struct store *s, int64_t from, int64_t to, const char *k1,
				     const char *v1, const char *k2, const char *v2)
{
	const char *keys[] = { k1, k2 }, *values[] = { v1, v2 };
	struct store_query q = {
		.from = from, .to = to, .keys = keys, .values = values, .nlabels = k2 ? 2 : 1
	};
	struct store_windows w;

	assert_int_equal(store__windows(s, &q, &w), 0);
	return w;
}

/* A selection keeps the windows where it has samples, and their periods; a window
 * two agents share reports both periods (the table is not per label set). */
static void test_selection(void **state)
{
	struct store_windows w;
	struct store *s = open_mem(NULL);

	(void)state;
	ingest_comm(s, "a", 1, 1000, HZ99, "api", "1");
	ingest_comm(s, "a", 2, 1010, HZ99, "api", "1");
	ingest_comm(s, "b", 1, 1020, HZ49, "db", "2");
	ingest_comm(s, "b", 2, 1030, HZ49, "db", "3");

	w = selected(s, 0, 5000, "comm", "db", NULL, NULL);
	assert_int_equal(w.nwindows, 2);
	assert_int_equal(w.first_start, 1020);
	assert_int_equal(w.last_end, 1040);
	assert_int_equal(w.nperiods, 1);
	assert_int_equal(w.periods[0], HZ49);
	w = selected(s, 0, 5000, "comm", "api", NULL, NULL);
	assert_int_equal(w.nwindows, 2);
	assert_int_equal(w.first_start, 1000);
	assert_int_equal(w.last_end, 1020);
	assert_int_equal(w.periods[0], HZ99);
	assert_int_equal(w.nperiods, 1);
	/* two labels: the label sets holding both */
	w = selected(s, 0, 5000, "comm", "db", "pid", "3");
	assert_int_equal(w.nwindows, 1);
	assert_int_equal(w.first_start, 1030);
	w = selected(s, 0, 5000, "comm", "api", "pid", "3");
	assert_int_equal(w.nwindows, 0);
	assert_int_equal(w.nperiods, 0);
	w = selected(s, 0, 5000, "nokey", "x", NULL, NULL);
	assert_int_equal(w.nwindows, 0);

	/* the limit: b samples the window at 1000 too */
	ingest_comm(s, "b", 3, 1000, HZ49, "db", "2");
	w = selected(s, 1000, 1010, "comm", "api", NULL, NULL);
	assert_int_equal(w.nwindows, 1);
	assert_int_equal(w.nperiods, 2);
	store__close(s);
}

/* On a file: a reader (as the collector's queries use) reads the windows the
 * writer stored; the table survives a reopen. */
static void test_file_reader(void **state)
{
	const struct store_options ro = { .read_only = true };
	struct store_query q = { .from = 0, .to = 5000 };
	struct store *s = NULL, *r = NULL;
	struct store_windows w;
	char dir[64], path[128];

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/w.db", dir);
	assert_int_equal(store__open(path, NULL, &s), 0);
	ingest_comm(s, "a", 1, 1000, HZ99, "api", "1");
	assert_int_equal(store__open(path, &ro, &r), 0);
	ingest_comm(s, "b", 1, 1010, HZ49, "db", "2");
	assert_int_equal(store__windows(r, &q, &w), 0);
	assert_int_equal(w.nwindows, 2);
	assert_int_equal(w.nperiods, 2);
	w = selected(r, 0, 5000, "comm", "db", NULL, NULL);
	assert_int_equal(w.nperiods, 1);
	assert_int_equal(w.periods[0], HZ49);
	store__close(r);
	store__close(s);
	assert_int_equal(store__open(path, NULL, &s), 0);
	assert_int_equal(store__windows(s, &q, &w), 0);
	assert_int_equal(w.nwindows, 2);
	store__close(s);
	test_rm_rf(dir);
}

/* Bad arguments. */
static void test_arguments(void **state)
{
	const char *keys[] = { "comm" }, *values[] = { "nothing-like-it" };
	struct store_query q = {
		.from = 0, .to = 5000, .keys = keys, .values = values, .nlabels = 1
	};
	struct store_windows w;
	struct store *s = open_mem(NULL);

	(void)state;
	ingest_one(s, "a", 1, 1000, 10, HZ99, 5);
	assert_int_equal(store__windows(s, &q, &w), 0);
	assert_int_equal(w.nwindows, 0);
	values[0] = "api";
	assert_int_equal(store__windows(s, &q, &w), 0);
	assert_int_equal(w.nwindows, 1);
	assert_int_equal(store__windows(NULL, &q, &w), -EINVAL);
	assert_int_equal(store__windows(s, NULL, &w), -EINVAL);
	assert_int_equal(store__windows(s, &q, NULL), -EINVAL);
	q.keys = NULL;
	assert_int_equal(store__windows(s, &q, &w), -EINVAL);
	q.keys = keys;
	q.nlabels = 65;
	assert_int_equal(store__windows(s, &q, &w), -EINVAL);
	store__close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ingest),	     cmocka_unit_test(test_mixed_periods),
		cmocka_unit_test(test_many_periods), cmocka_unit_test(test_rollup),
		cmocka_unit_test(test_retention),    cmocka_unit_test(test_selection),
		cmocka_unit_test(test_file_reader),  cmocka_unit_test(test_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

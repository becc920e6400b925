/* The ClickHouse store's saturating sums (ch_r_sum() in store/clickhouse/rowbin.c, the
 * totals of store/clickhouse/tiers.c) against a private clickhouse-server
 * (clickhousetest.h): raw rows whose sum passes 2^64, so that a UInt64 sum wraps
 * to a small number, answer INT64_MAX (not the wrapped sum) in the stacks and
 * the timeline of the raw windows, of the minute and hour rollups that
 * store__maintain() builds from them, and of their totals; a late batch added to
 * a saturated bucket keeps it saturated. The values near INT64_MAX are planted
 * over HTTP beside real batches (ingest caps a count at BATCH_MAX_COUNT, so no
 * batch can carry them): SQLite's test_count_overflow (tests/unit/test_store.c)
 * plants through a sqlite3 connection and is skipped on ClickHouse.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "wire/batch.h"
#include "common/frame.h"
#include "store/store.h"
#include "testutil.h"
#include "integration/clickhousetest.h"
#include "store/clickhouse/tables.h"

static struct chsrv srv;

#define DAY0 INT64_C(1699920000) /* 19675 * 86400: an hour and a day boundary */
#define W0   (DAY0 + 120)	 /* the windows: W0, W0 + 10, W0 + 20 (minute DAY0 + 120) */

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

static struct store *open_db(const char *db)
{
	struct store *s = NULL;
	char loc[128];

	ch_location(&srv, db, loc, sizeof(loc));
	assert_int_equal(store__open(loc, NULL, &s), 0);
	return s;
}

static void ingest(struct store *s, const char *agent, uint64_t seq, int64_t ws, uint64_t count)
{
	const char *key = "pod", *value = "web";
	struct batch_builder *bb = NULL;
	struct batch *b = NULL;
	bool dup = true;

	assert_int_equal(batch_builder__new(agent, "host1", "cpu", &bb), 0);
	assert_int_equal(batch_builder__add(bb, &key, &value, 1, "app;main;hot", count), 0);
	assert_int_equal(batch_builder__finish(bb, seq, ws, 10, 1000000, &b), 0);
	assert_int_equal(store__ingest(s, b, &dup), 0);
	assert_false(dup);
	batch__free(b);
	batch_builder__free(bb);
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

struct sum {
	uint64_t total;
	int stacks;
};

static int add_stack(void *ctx, const struct frame *frames, size_t nframes, uint64_t count)
{
	struct sum *sm = ctx;

	(void)frames;
	(void)nframes;
	(void)nframes;
	sm->total = count;
	sm->stacks++;
	return 0;
}

/* The one stack's count over [from, to). */
static uint64_t stack_count(struct store *s, int64_t from, int64_t to)
{
	struct store_query q = { .from = from, .to = to };
	struct sum sm = { 0 };

	assert_int_equal(store__query_stacks(s, &q, add_stack, &sm), 0);
	assert_int_equal(sm.stacks, 1);
	return sm.total;
}

static int add_point(void *ctx, int64_t start, uint64_t count)
{
	struct sum *sm = ctx;

	(void)start;
	sm->total = count;
	sm->stacks++;
	return 0;
}

/* The one point of the timeline of [from, from + step) at step. */
static uint64_t point(struct store *s, int64_t from, int64_t step)
{
	struct store_query q = { .from = from, .to = from + step };
	struct sum sm = { 0 };

	assert_int_equal(store__query_series(s, &q, step, add_point, &sm), 0);
	assert_int_equal(sm.stacks, 1);
	return sm.total;
}

/* Raw rows summing past 2^64 answer INT64_MAX from every tier and its totals. */
static void test_sums_saturate(void **state)
{
	/* two planted rows of INT64_MAX and three batches of 2^40: a UInt64 sum
	 * wraps to 3 * 2^40 - 2 */
	const uint64_t wrapped = 3 * BATCH_MAX_COUNT - 2;
	struct store *s;
	char sql[512];

	(void)state;
	ch_skip_unless_available();
	s = open_db("sat");
	ingest(s, "a", 1, W0, BATCH_MAX_COUNT);
	ingest(s, "a", 2, W0 + 10, BATCH_MAX_COUNT);
	ingest(s, "a", 3, W0 + 20, BATCH_MAX_COUNT);
	/* the minimum before comparing: the three batches, unsaturated */
	assert_int_equal(stack_count(s, W0, W0 + 30), 3 * BATCH_MAX_COUNT);
	assert_int_equal(ch_query_number_db(&srv, "sat", "SELECT count() FROM " CH_RAW_TABLE), 3);

	snprintf(sql, sizeof(sql),
		 "INSERT INTO sat." CH_RAW_TABLE " SELECT window_start, type, labelset, stack, "
		 "'planted', seq, toUInt64(%" PRId64 ") FROM sat." CH_RAW_TABLE
		 " WHERE agent = 'a' AND seq <= 2",
		 INT64_MAX);
	ch_exec(&srv, sql);
	/* what a wrapping sum would answer */
	assert_int_equal(
		ch_query_number_db(&srv, "sat", "SELECT sum(value) FROM " CH_RAW_TABLE " FINAL"),
		wrapped);

	/* the raw windows: stacks and timeline saturated */
	assert_int_equal(stack_count(s, W0, W0 + 30), INT64_MAX);
	assert_int_equal(stack_count(s, W0, W0 + 10), INT64_MAX); /* one row of each */
	assert_int_equal(point(s, W0, 30), INT64_MAX);

	/* the rollups: every minute and hour bucket due, the raw windows kept */
	maintain_all(s, DAY0 + 3 * 3600);
	assert_true(ch_query_number_db(&srv, "sat", "SELECT count() FROM " CH_MINUTE_TABLE) > 0);
	assert_true(ch_query_number_db(&srv, "sat", "SELECT count() FROM hour") > 0);
	assert_int_equal(
		ch_query_number_db(&srv, "sat", "SELECT max(value) FROM totals_minute FINAL"),
		INT64_MAX);
	assert_int_equal(
		ch_query_number_db(&srv, "sat", "SELECT max(value) FROM totals_hour FINAL"),
		INT64_MAX);
	assert_int_equal(stack_count(s, DAY0 + 120, DAY0 + 180), INT64_MAX); /* the minute */
	assert_int_equal(stack_count(s, DAY0, DAY0 + 3600), INT64_MAX);	     /* the hour */
	assert_int_equal(point(s, DAY0 + 120, 60), INT64_MAX);
	assert_int_equal(point(s, DAY0, 3600), INT64_MAX);

	/* a late batch into the saturated buckets: still saturated */
	ingest(s, "b", 1, W0 + 30, 7);
	assert_int_equal(stack_count(s, DAY0 + 120, DAY0 + 180), INT64_MAX);
	assert_int_equal(stack_count(s, DAY0, DAY0 + 3600), INT64_MAX);
	assert_int_equal(point(s, DAY0, 3600), INT64_MAX);
	assert_int_equal(stack_count(s, W0 + 30, W0 + 40), 7);
	store__close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sums_saturate),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

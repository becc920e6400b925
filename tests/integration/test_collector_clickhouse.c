/* End to end on ClickHouse: `smolder collector --db clickhouse://127.0.0.1:PORT/DB`
 * (a private server, clickhousetest.h) ingests batches posted over HTTP and
 * answers /api/v1/flamegraph?format=folded with the same text as a collector on
 * the SQLite store given the same batches; a batch re-sent to a second collector
 * on the same database is a duplicate, and both collectors answer the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/batch.h"
#include "common/wire.h"
#include "testutil.h"
#include "integration/collectortest.h"
#include "integration/clickhousetest.h"

static struct batch *make_batch(const char *agent, uint64_t seq, int64_t window, int variant)
{
	static const char *const stacks[] = { "app;main;work;inner", "app;main;idle",
					      "db;main;query;scan", "app;main;gc" };
	const char *key = "pod", *value;
	struct batch_builder *bb;
	struct batch *b;
	size_t i;

	assert_int_equal(batch_builder__new(agent, "host1", "cpu", &bb), 0);
	for (i = 0; i < 4; i++) {
		value = i % 2 ? "db" : "web";
		assert_int_equal(batch_builder__add(bb, &key, &value, 1, stacks[i],
						    (uint64_t)(i + 1) * 10 + (uint64_t)variant),
				 0);
	}
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, 10000000, &b), 0);
	batch_builder__free(bb);
	return b;
}

static char *flame(unsigned port, const char *query)
{
	char path[256];
	struct reply r;

	snprintf(path, sizeof(path), "/api/v1/flamegraph?format=folded&from=0&to=4102444800%s",
		 query);
	r = http_get(port, path, NULL);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
	return r.body;
}

static void test_collector_on_clickhouse(void **state)
{
	struct coll sq, ch1, ch2;
	struct chsrv srv;
	char loc[128];
	const char *extra[] = { "--db", loc, NULL };
	int64_t window = (int64_t)time(NULL) / 10 * 10 - 60;
	char *a, *b, *c;
	bool dup = true;
	int k;

	(void)state;
	ch_skip_unless_available();
	ch_start(&srv);
	ch_location(&srv, "smolder", loc, sizeof(loc));
	if (coll_start(&ch1, "127.0.0.1:0", extra)) {
		test_print_log("collector", ch1.err);
		fail_msg("the collector on ClickHouse did not start");
	}
	if (coll_start(&ch2, "127.0.0.1:0", extra)) {
		test_print_log("collector", ch2.err);
		fail_msg("the second collector on ClickHouse did not start");
	}
	if (coll_start(&sq, "127.0.0.1:0", NULL)) {
		test_print_log("collector", sq.err);
		fail_msg("the collector on SQLite did not start");
	}
	for (k = 0; k < 3; k++) {
		struct batch *bt = make_batch(k == 2 ? "agent2" : "agent1", (uint64_t)k + 1,
					      window + 10 * (k % 2), k);

		assert_int_equal(post_batch(ch1.port, NULL, bt, &dup), 200);
		assert_false(dup);
		assert_int_equal(post_batch(sq.port, NULL, bt, &dup), 200);
		/* retried through the other collector: stored once */
		assert_int_equal(post_batch(ch2.port, NULL, bt, &dup), 200);
		assert_true(dup);
		batch__free(bt);
	}
	a = flame(sq.port, "");
	b = flame(ch1.port, "");
	c = flame(ch2.port, "");
	assert_true(strlen(a) > 0);
	assert_string_equal(b, a);
	assert_string_equal(c, a);
	free(a);
	free(b);
	free(c);
	a = flame(sq.port, "&where=pod=web");
	b = flame(ch2.port, "&where=pod=web");
	assert_true(strlen(a) > 0);
	assert_string_equal(b, a);
	free(a);
	free(b);
	coll_stop(&ch1);
	coll_stop(&ch2);
	coll_stop(&sq);
	ch_stop(&srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_collector_on_clickhouse, coll_teardown),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

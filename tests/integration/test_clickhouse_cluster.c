/* The ClickHouse store on a cluster: Debian's ZooKeeper and two clickhouse-server
 * processes on loopback, one cluster of two shards (clickhousetest.h
 * ch_start_cluster()), and `smolder collector --db
 * clickhouse://HOST:PORT/DB?cluster=smolder` on each server. The schema applies
 * ON CLUSTER (T_local Replicated on both servers, T Distributed over them), the
 * batches posted to one collector land on both shards, and a collector on either
 * server answers with the same bytes as a collector on SQLite given the same
 * batches, every sample once; a batch re-sent through the other server's
 * collector is a duplicate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "wire/batch.h"
#include "wire/wire.h"
#include "testutil.h"
#include "integration/collectortest.h"
#include "integration/clickhousetest.h"

#define NBATCHES 8 /* 4 label sets x 6 stacks each: rows enough for both shards */

/* Batch k: stacks and label values that vary with k, counts from k. */
static struct batch *make_batch(int k, int64_t window, uint64_t *total)
{
	static const char *const fns[] = { "parse", "render", "query", "scan", "gc", "idle" };
	const char *keys[] = { "pod", "zone" }, *values[2];
	char stack[128], zone[16];
	struct batch_builder *bb;
	struct batch *b;
	size_t i;

	assert_int_equal(batch_builder__new(k % 2 ? "agent-b" : "agent-a", "host1", "cpu", &bb), 0);
	snprintf(zone, sizeof(zone), "z%d", k % 4);
	values[0] = k % 3 ? "web" : "db";
	values[1] = zone;
	for (i = 0; i < 6; i++) {
		uint64_t count = (uint64_t)(k + 1) * 7 + i;

		snprintf(stack, sizeof(stack), "app;main;%s;step%d", fns[i], k % 5);
		assert_int_equal(batch_builder__add(bb, keys, values, 2, stack, count), 0);
		*total += count;
	}
	assert_int_equal(batch_builder__finish(bb, (uint64_t)k + 1, window, 10, 10000000, &b), 0);
	batch_builder__free(bb);
	return b;
}

static char *flame(unsigned port)
{
	struct reply r =
		http_get(port, "/api/v1/flamegraph?format=folded&from=0&to=4102444800", NULL);

	if (r.status != 200)
		fail_msg("flame graph from %u: %ld %s", port, r.status, r.body ? r.body : "");
	return r.body;
}

static uint64_t folded_total(const char *folded)
{
	const char *p = folded, *sp;
	uint64_t total = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		for (sp = p + n; sp > p && sp[-1] != ' '; sp--)
			;
		assert_true(sp > p);
		total += strtoull(sp, NULL, 10);
		p += n + (nl ? 1 : 0);
	}
	return total;
}

static void start_or_fail(struct coll *c, const char *const *extra, const char *what)
{
	if (coll_start(c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c->err);
		fail_msg("the collector on %s did not start", what);
	}
}

static void test_cluster_two_shards(void **state)
{
	struct chsrv srv[2];
	struct zksrv zk;
	struct coll cc[2], sq;
	char loc[2][160], *a, *b, *c, *engine;
	const char *extra0[] = { "--db", loc[0], NULL }, *extra1[] = { "--db", loc[1], NULL };
	int64_t window = (int64_t)time(NULL) / 10 * 10 - 120;
	unsigned long long rows[2], all;
	uint64_t want = 0;
	bool dup = true;
	int k, i;

	(void)state;
	ch_skip_unless_available();
	zk_skip_unless_available();
	zk_start(&zk);
	ch_start_cluster(srv, 2, &zk);
	for (i = 0; i < 2; i++)
		snprintf(loc[i], sizeof(loc[i]),
			 "clickhouse://127.0.0.1:%u/smolder?cluster=" CH_CLUSTER, srv[i].http_port);
	start_or_fail(&cc[0], extra0, "the cluster's first server");
	start_or_fail(&cc[1], extra1, "the cluster's second server");
	start_or_fail(&sq, NULL, "SQLite");

	/* the schema on both servers, in the cluster's form */
	for (i = 0; i < 2; i++) {
		engine = ch_query(&srv[i], "SELECT engine FROM system.tables WHERE database = "
					   "'smolder' AND name IN ('samples', 'samples_local', "
					   "'schema_migrations_local') ORDER BY name");
		assert_string_equal(engine,
				    "Distributed\nReplicatedMergeTree\nReplicatedMergeTree\n");
		free(engine);
	}

	/* every batch through the first server's collector */
	for (k = 0; k < NBATCHES; k++) {
		struct batch *bt = make_batch(k, window + 10 * (k % 4), &want);

		assert_int_equal(post_batch(cc[0].port, NULL, bt, &dup), 200);
		assert_false(dup);
		assert_int_equal(post_batch(sq.port, NULL, bt, &dup), 200);
		if (k == 5) { /* a retry through the other server's collector */
			assert_int_equal(post_batch(cc[1].port, NULL, bt, &dup), 200);
			assert_true(dup);
		}
		batch__free(bt);
	}

	/* on both shards, and all of them through either server */
	for (i = 0; i < 2; i++)
		rows[i] = ch_query_number(&srv[i], "SELECT count() FROM smolder.raw_batches_local");
	all = ch_query_number(&srv[1], "SELECT count() FROM smolder.raw_batches");
	print_message("sample rows: %llu on shard 1, %llu on shard 2, %llu through the "
		      "Distributed table\n",
		      rows[0], rows[1], all);
	assert_true(rows[0] > 0);
	assert_true(rows[1] > 0);
	assert_int_equal(rows[0] + rows[1], all);
	assert_int_equal(ch_query_number(&srv[0], "SELECT count() FROM smolder.raw_batches"), all);
	assert_int_equal(ch_query_number(&srv[0], "SELECT sum(value) FROM smolder.raw_batches"),
			 want);

	a = flame(sq.port);
	b = flame(cc[0].port);
	c = flame(cc[1].port);
	assert_int_equal(folded_total(a), want);
	assert_string_equal(b, a);
	assert_string_equal(c, a);
	free(a);
	free(b);
	free(c);

	coll_stop(&cc[0]);
	coll_stop(&cc[1]);
	coll_stop(&sq);
	ch_stop(&srv[0]);
	ch_stop(&srv[1]);
	zk_stop(&zk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_cluster_two_shards, coll_teardown),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Budgets against a cardinality flood: an ingest-token holder sends batches of
 * thousands of distinct label sets and stacks, then four browsers ask for flame
 * graphs of the whole range at once.
 *
 * - test_cardinality_refused: with lowered per-agent budgets
 *   (--agent-labelsets-per-min, --agent-stacks-per-min) the batch that would pass
 *   one is refused whole with 429 and its reason, counted as
 *   smolder_batches_rejected_total{reason="cardinality"}, nothing of it stored;
 *   another agent id still gets in, and a batch of label sets and stacks already
 *   seen this minute does too.
 * - test_flood_queries_peak_rss: the release collector (ASan inflates RSS) takes a
 *   flood under raised cardinality budgets, then answers four concurrent
 *   UI-style flame graph queries (format=json, max_nodes) each 200 or 422 naming
 *   the query memory budget (counted in smolder_query_over_memory_total), its
 *   peak RSS (VmHWM) stays under RSS_BOUND_KIB, and a query of one service still
 *   answers 200. The flood puts 40 k label sets in each minute bucket: the former
 *   rollup (a hash table per label set) took the collector to 627 MB here.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "wire/batch.h"
#include "wire/wire.h"
#include "testutil.h"
#include "collectortest.h"

#define PERIOD_NS 10101010
#define NQUERIES  4 /* the collector's query workers */
/* The flood: FLOOD_BATCHES batches of FLOOD_DISTINCT samples, each of its own label
 * set and its own stack. */
#define FLOOD_BATCHES  6
#define FLOOD_DISTINCT 20000
/* The query memory budget of the test, lowered so that the flood's flame graph
 * passes it. */
#define QUERY_MEMORY_MB "32"
/* What the release collector may reach: 4 queries at their budget, the 4 readers'
 * frame caches (64 MiB each, store/sqlite/read.c) and 128 MiB for the rest (40 MB at
 * rest, the flood's ingest caches). */
#define RSS_BOUND_KIB ((4u * 32 + 4 * 64 + 128) << 10)

static unsigned long vm_hwm_kib(pid_t pid)
{
	char path[64], *text, *p;
	unsigned long kib = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = test_read_file(path);
	assert_non_null(text);
	p = strstr(text, "VmHWM:");
	assert_non_null(p);
	kib = strtoul(p + 6, NULL, 10);
	free(text);
	return kib;
}

/* A batch of agent `agent` of n samples, sample i under label set and stack
 * number first + i (distinct for distinct numbers). */
static struct batch *flood_batch(const char *agent, uint64_t seq, int64_t window, unsigned first,
				 unsigned n)
{
	const char *keys[] = { "service", "pod_uid" };
	const char *values[2];
	char service[32], pod[48], stack[256];
	struct batch_builder *bb;
	struct batch *b;
	unsigned i, k;

	assert_int_equal(batch_builder__new(agent, "flood", "cpu", &bb), 0);
	for (i = 0; i < n; i++) {
		k = first + i;
		snprintf(service, sizeof(service), "svc%u", k % 97);
		snprintf(pod, sizeof(pod), "pod-%08u-0000-0000-0000-%012u", k, k * 7u);
		values[0] = service;
		values[1] = pod;
		snprintf(stack, sizeof(stack),
			 "app%u;_start;__libc_start_main;main;ns%u::Server::run;"
			 "ns%u::Handler%u::serve;ns%u::work_%u;leaf_%u",
			 k % 13, k % 5, k % 7, k % 31, k % 11, k % 1009, k);
		assert_int_equal(batch_builder__add(bb, keys, values, 2, stack, 1 + k % 5), 0);
	}
	assert_int_equal(batch_builder__finish(bb, seq, window, 10, PERIOD_NS, &b), 0);
	batch_builder__free(bb);
	return b;
}

static long post_flood(unsigned port, const char *agent, uint64_t seq, int64_t window,
		       unsigned first, unsigned n, char **reason)
{
	struct batch *b = flood_batch(agent, seq, window, first, n);
	struct reply r;
	void *body;
	size_t len;

	assert_int_equal(wire_encode(b, 3, &body, &len), 0);
	batch__free(b);
	r = http_request(port, "/api/v1/ingest", NULL, NULL, body, len);
	free(body);
	if (reason)
		*reason = r.body;
	else
		free(r.body);
	return r.status;
}

static void test_cardinality_refused(void **state)
{
	const char *extra[] = { "--agent-labelsets-per-min", "1000", "--agent-stacks-per-min",
				"1500", NULL };
	int64_t now = (int64_t)time(NULL);
	struct coll c;
	char *reason;
	long status;

	(void)state;
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the collector did not start");
	}
	/* 800 new label sets and stacks: in */
	assert_int_equal(post_flood(c.port, "a1", 1, now - 60, 0, 800, NULL), 200);
	/* 400 more: over the 1000 label sets of the minute, refused whole */
	status = post_flood(c.port, "a1", 2, now - 50, 800, 400, &reason);
	assert_int_equal(status, 429);
	print_message("    429: %s\n", reason);
	assert_non_null(strstr(reason, "label sets"));
	assert_non_null(strstr(reason, "--agent-labelsets-per-min"));
	free(reason);
	assert_int_equal(
		metric_value(c.port, "smolder_batches_rejected_total{reason=\"cardinality\"}"), 1);
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"), 1);
	/* nothing of the refused batch is stored: its label sets are not queryable */
	{
		struct reply r =
			http_get(c.port, "/api/v1/labels/pod_uid/values?from=-10m&to=now", NULL);

		assert_int_equal(r.status, 200);
		assert_non_null(strstr(r.body, "pod-00000799-"));
		assert_null(strstr(r.body, "pod-00000800-"));
		free(r.body);
	}
	/* the same label sets and stacks again (a new window): nothing new, in */
	assert_int_equal(post_flood(c.port, "a1", 3, now - 40, 0, 800, NULL), 200);
	/* another agent has its own budget */
	assert_int_equal(post_flood(c.port, "a2", 1, now - 60, 800, 400, NULL), 200);
	assert_int_equal(metric_value(c.port, "smolder_batches_ingested_total"), 3);
	coll_stop(&c);
}

struct flame_get {
	unsigned port;
	long status;
	size_t len;
	char why[256];
	uint64_t ms;
};

static void *flame_thread(void *arg)
{
	struct flame_get *g = arg;
	uint64_t t0 = test_now_ms();
	struct reply r = http_get(g->port,
				  "/api/v1/flamegraph?format=json&from=-1h&to=now&type=cpu"
				  "&max_nodes=4000",
				  NULL);

	g->ms = test_now_ms() - t0;
	g->status = r.status;
	g->len = r.len;
	if (r.status != 200 && r.body)
		snprintf(g->why, sizeof(g->why), "%s", r.body);
	free(r.body);
	return NULL;
}

static void test_flood_queries_peak_rss(void **state)
{
	const char *extra[] = { "--agent-labelsets-per-min",
				"1000000",
				"--agent-stacks-per-min",
				"1000000",
				"--query-memory-mb",
				QUERY_MEMORY_MB,
				NULL };
	int64_t now = (int64_t)time(NULL);
	struct flame_get g[NQUERIES];
	pthread_t t[NQUERIES];
	unsigned long base, flooded, peak;
	uint64_t t0;
	struct coll c;
	int i, ok = 0;

	(void)state;
	if (coll_start_bin(&c, "smolder", "127.0.0.1:0", getenv("OLD") ? NULL : extra)) {
		test_print_log("collector", c.err);
		fail_msg("the release collector did not start");
	}
	base = vm_hwm_kib(c.pid);
	t0 = test_now_ms();
	for (i = 0; i < FLOOD_BATCHES; i++) {
		char *why = NULL;
		/* two a minute: a minute bucket's block holds at most
		 * BLOCK_MAX_SECTIONS (65,536) label sets */
		long status = post_flood(c.port, "flood", (uint64_t)i + 1, now - 900 + 30 * i,
					 (unsigned)i * FLOOD_DISTINCT, FLOOD_DISTINCT, &why);

		if (status != 200)
			print_error("flood batch %d: %ld %s\n", i, status, why ? why : "");
		free(why);
		assert_int_equal(status, 200);
	}
	flooded = vm_hwm_kib(c.pid);
	print_message("    flood: %d batches of %d label sets and stacks in %llu ms; "
		      "VmHWM %lu KiB at start, %lu KiB after\n",
		      FLOOD_BATCHES, FLOOD_DISTINCT, (unsigned long long)(test_now_ms() - t0), base,
		      flooded);
	for (i = 0; i < NQUERIES; i++) {
		g[i] = (struct flame_get){ .port = c.port };
		assert_int_equal(pthread_create(&t[i], NULL, flame_thread, &g[i]), 0);
	}
	for (i = 0; i < NQUERIES; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	peak = vm_hwm_kib(c.pid);
	for (i = 0; i < NQUERIES; i++) {
		print_message("    query %d: %ld, %zu bytes in %llu ms %s\n", i, g[i].status,
			      g[i].len, (unsigned long long)g[i].ms, g[i].why);
		if (g[i].status == 200) {
			ok++;
			continue;
		}
		assert_int_equal(g[i].status, 422);
		assert_non_null(strstr(g[i].why, "--query-memory-mb"));
	}
	print_message("    collector VmHWM after %d queries: %lu KiB (bound %u KiB); %d answered\n",
		      NQUERIES, peak, RSS_BOUND_KIB, ok);
	if (peak > RSS_BOUND_KIB)
		fail_msg("peak RSS %lu KiB over the bound of %u KiB", peak, RSS_BOUND_KIB);
	/* a narrower query (one service of 97) still answers within the budget */
	{
		struct reply r = http_get(c.port,
					  "/api/v1/flamegraph?format=json&from=-1h&to=now&type=cpu"
					  "&max_nodes=4000&where=service=svc1",
					  NULL);

		if (r.status != 200)
			print_error("narrow query: %ld %s\n", r.status, r.body ? r.body : "");
		assert_int_equal(r.status, 200);
		assert_non_null(strstr(r.body, "leaf_"));
		free(r.body);
	}
	assert_int_equal(metric_value(c.port, "smolder_query_over_memory_total"), NQUERIES - ok);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_cardinality_refused, coll_teardown),
		cmocka_unit_test_teardown(test_flood_queries_peak_rss, coll_teardown),
	};

	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

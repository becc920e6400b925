/* End to end on ClickHouse: `smolder collector --db clickhouse://127.0.0.1:PORT/DB`
 * (a private server, clickhousetest.h) ingests batches posted over HTTP.
 * - Two collectors on one database, the batches split between them, one re-sent
 *   to the other collector after the first stored it (an agent's timeout): both
 *   answer /api/v1/flamegraph?format=folded with the same bytes as a collector on
 *   the SQLite store given every batch once, and the total is every sample once.
 * - The server stopped and started again on its data while batches arrive:
 *   /healthz says degraded (503) while it is down, ingest answers 503 (the agent
 *   keeps the batch), and once it is back every batch acknowledged before, and
 *   every batch refused then re-sent, is stored once.
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

/* The sum of a folded answer's counts. */
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

/* The samples of make_batch(..., variant). */
static uint64_t batch_total(int variant)
{
	return 10 + 20 + 30 + 40 + 4 * (uint64_t)variant;
}

static void start_or_fail(struct coll *c, const char *const *extra, const char *what)
{
	if (coll_start(c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c->err);
		fail_msg("the collector on %s did not start", what);
	}
}

#define NBATCHES 6 /* split between two collectors, windows a minute apart at most */

static void test_collector_on_clickhouse(void **state)
{
	struct coll sq, ch[2];
	struct chsrv srv;
	char loc[128];
	const char *extra[] = { "--db", loc, NULL };
	int64_t window = (int64_t)time(NULL) / 10 * 10 - 60;
	uint64_t want = 0;
	char *a, *b, *c;
	bool dup = true;
	int k;

	(void)state;
	ch_skip_unless_available();
	ch_start(&srv);
	ch_location(&srv, "smolder", loc, sizeof(loc));
	start_or_fail(&ch[0], extra, "ClickHouse");
	start_or_fail(&ch[1], extra, "ClickHouse (the second)");
	start_or_fail(&sq, NULL, "SQLite");
	for (k = 0; k < NBATCHES; k++) {
		struct batch *bt = make_batch(k % 3 ? "agent1" : "agent2", (uint64_t)k + 1,
					      window + 10 * (k % 4), k);

		/* agents split between the collectors */
		assert_int_equal(post_batch(ch[k % 2].port, NULL, bt, &dup), 200);
		assert_false(dup);
		assert_int_equal(post_batch(sq.port, NULL, bt, &dup), 200);
		want += batch_total(k);
		if (k == 3) { /* acknowledged too late: retried through the other */
			assert_int_equal(post_batch(ch[(k + 1) % 2].port, NULL, bt, &dup), 200);
			assert_true(dup);
		}
		batch__free(bt);
	}
	a = flame(sq.port, "");
	b = flame(ch[0].port, "");
	c = flame(ch[1].port, "");
	assert_true(strlen(a) > 0);
	assert_int_equal(folded_total(a), want);
	assert_string_equal(b, a);
	assert_string_equal(c, a);
	free(a);
	free(b);
	free(c);
	a = flame(sq.port, "&where=pod=web");
	b = flame(ch[1].port, "&where=pod=web");
	c = flame(ch[0].port, "&where=pod=web");
	assert_true(strlen(a) > 0);
	assert_string_equal(b, a);
	assert_string_equal(c, a);
	free(a);
	free(b);
	free(c);
	coll_stop(&ch[0]);
	coll_stop(&ch[1]);
	coll_stop(&sq);
	ch_stop(&srv);
}

#define HEALTH_MS 30000 /* the collector notices within a maintenance round (10 s) */

/* Polls /healthz until its status is want, for up to HEALTH_MS; returns the last
 * body (free it). */
static char *health_wait(unsigned port, long want)
{
	uint64_t deadline = test_now_ms() + HEALTH_MS;
	struct reply r;

	for (;;) {
		r = http_get(port, "/healthz", NULL);
		if (r.status == want || test_now_ms() >= deadline)
			break;
		free(r.body);
		usleep(100000); /* polling interval of a bounded wait */
	}
	if (r.status != want)
		fail_msg("/healthz: %ld '%s', waited %d ms for %ld", r.status, r.body ? r.body : "",
			 HEALTH_MS, want);
	return r.body;
}

#define DOWN_BATCHES 4 /* sent before, during and after the server's absence */

static void test_clickhouse_down_and_back(void **state)
{
	struct batch *bt[3 * DOWN_BATCHES];
	struct coll cc, sq;
	struct chsrv srv;
	char loc[128], *body, *a, *b;
	const char *extra[] = { "--db", loc, NULL };
	int64_t window = (int64_t)time(NULL) / 10 * 10 - 120;
	uint64_t want = 0;
	bool dup = true;
	int k;

	(void)state;
	ch_skip_unless_available();
	ch_start(&srv);
	ch_location(&srv, "smolder", loc, sizeof(loc));
	start_or_fail(&cc, extra, "ClickHouse");
	start_or_fail(&sq, NULL, "SQLite");
	for (k = 0; k < 3 * DOWN_BATCHES; k++) {
		bt[k] = make_batch("agent1", (uint64_t)k + 1, window + 10 * (k % 8), k);
		want += batch_total(k);
		assert_int_equal(post_batch(sq.port, NULL, bt[k], &dup), 200);
	}
	for (k = 0; k < DOWN_BATCHES; k++) {
		assert_int_equal(post_batch(cc.port, NULL, bt[k], &dup), 200);
		assert_false(dup);
	}
	body = health_wait(cc.port, 200);
	assert_string_equal(body, "ok\n");
	free(body);

	ch_halt(&srv);
	/* noticed without an ingest (the maintenance round) */
	body = health_wait(cc.port, 503);
	if (strncmp(body, "degraded: the store is unreachable: ", 36))
		fail_msg("/healthz while ClickHouse is down: '%s'", body);
	print_message("/healthz while ClickHouse is down: %s", body);
	free(body);
	/* refused with 503: the agent keeps them for later */
	for (k = DOWN_BATCHES; k < 2 * DOWN_BATCHES; k++)
		assert_int_equal(post_batch(cc.port, NULL, bt[k], &dup), 503);
	body = health_wait(cc.port, 503);
	free(body);

	ch_restart(&srv);
	/* the agent's retries, and the batches after them */
	for (k = DOWN_BATCHES; k < 3 * DOWN_BATCHES; k++) {
		assert_int_equal(post_batch(cc.port, NULL, bt[k], &dup), 200);
		assert_false(dup);
	}
	body = health_wait(cc.port, 200);
	assert_string_equal(body, "ok\n");
	free(body);
	/* acknowledged before the server went away: still there, not stored again */
	for (k = 0; k < DOWN_BATCHES; k++) {
		assert_int_equal(post_batch(cc.port, NULL, bt[k], &dup), 200);
		assert_true(dup);
	}
	/* the transitions logged once each, for the operator */
	body = test_read_file(cc.err);
	assert_non_null(body);
	assert_non_null(strstr(body, "collector: the store is unreachable: "));
	assert_non_null(strstr(body, "collector: the store answers again"));
	free(body);
	a = flame(sq.port, "");
	b = flame(cc.port, "");
	assert_int_equal(folded_total(a), want);
	assert_string_equal(b, a);
	free(a);
	free(b);
	for (k = 0; k < 3 * DOWN_BATCHES; k++)
		batch__free(bt[k]);
	coll_stop(&cc);
	coll_stop(&sq);
	ch_stop(&srv);
}

/* `smolder collector --help` names both stores and the location's options; a
 * ClickHouse location the store cannot parse is refused at start with a message
 * that names --db and the forms it takes (it used to name tokens, limits,
 * --listen and TLS files only); one that would send credentials in clear to a
 * host that is not loopback is refused naming the two ways out (https, or
 * plaintext=1). No server needed: these checks come first. */
static void test_cli_speaks_of_clickhouse(void **state)
{
	static const char *const bad[] = { "clickhouse://127.0.0.1:8123/db?bogus=1",
					   "clickhouse://127.0.0.1:8123/db?cluster=a;b",
					   "clickhouse://127.0.0.1:8123/db?cluster=a&cluster=b" };
	char bin[256], dir[256], *out;
	struct coll c;
	size_t i;
	int status;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	out = test_shell(dir, &status, "'%s' collector --help",
			 test_build_path(bin, sizeof(bin), "asan/smolder"));
	assert_int_equal(status, 0);
	assert_non_null(out);
	assert_non_null(
		strstr(out, "stores them in SQLite (one file, the\ndefault) or ClickHouse"));
	assert_non_null(strstr(out, "clickhouse[+https]://HOST:PORT/DATABASE[?OPTS]"));
	assert_non_null(strstr(out, "cluster=NAME"));
	assert_non_null(strstr(out, "credentials=FILE"));
	assert_non_null(strstr(out, "ca=FILE"));
	assert_non_null(strstr(out, "plaintext=1"));
	free(out);
	test_rm_rf(dir);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *extra[] = { "--db", bad[i], NULL };

		assert_int_not_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
		assert_true(WIFEXITED(c.status) && WEXITSTATUS(c.status) != 0);
		out = test_read_file(c.err);
		assert_non_null(out);
		if (!strstr(out, "refusing to start the collector with --db ") ||
		    !strstr(out, "clickhouse[+https]://HOST:PORT/DATABASE") || !strstr(out, bad[i]))
			fail_msg("refusal of --db %s: %s", bad[i], out);
		free(out);
	}
	{
		const char *extra[] = { "--db",
					"clickhouse://ch.invalid:8123/db?credentials=/nonexistent",
					NULL };

		assert_int_not_equal(coll_start(&c, "127.0.0.1:0", extra), 0);
		assert_true(WIFEXITED(c.status) && WEXITSTATUS(c.status) != 0);
		out = test_read_file(c.err);
		assert_non_null(out);
		if (!strstr(out, "in clear") || !strstr(out, "plaintext=1") ||
		    !strstr(out, "clickhouse+https://ch.invalid"))
			fail_msg("refusal of credentials over http: %s", out);
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_collector_on_clickhouse, coll_teardown),
		cmocka_unit_test_teardown(test_clickhouse_down_and_back, coll_teardown),
		cmocka_unit_test_teardown(test_cli_speaks_of_clickhouse, coll_teardown),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* A real agent, its spool, a collector on ClickHouse, and ClickHouse going away
 * and coming back: the agent profiles a known workload
 * (tests/workloads/shapes) and ships every second; the ClickHouse server is
 * stopped (SIGTERM, exit status 0) and started again on its data. While it is
 * down the collector's /healthz says degraded (503) and its ingest answers 503,
 * so the agent keeps its batches in its spool and retries; once it is back the
 * spool drains, /healthz is ok again, and the samples in ClickHouse are exactly
 * the samples the agent recorded: nothing acknowledged lost, nothing stored
 * twice.
 *
 * The server is stopped between batches: the agent is paused (SIGSTOP) until
 * ClickHouse holds exactly what the collector acknowledged, then resumed once
 * the server is down. A server failing between the inserts of one batch is the
 * store's exactly-once question (docs/store.md "ClickHouse"), not this
 * test's. Needs root (BPF); skipped with a reason otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "collectortest.h"
#include "agenttest.h"
#include "integration/clickhousetest.h"

#define WAIT_MS 60000 /* bound on each awaited condition (ASan, a loaded machine) */

static char dir[64], shapes[256];

static int group_setup(void **state)
{
	(void)state;
	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!agent_group_setup(dir, sizeof(dir)))
		return 0;
	test_build_path(shapes, sizeof(shapes), "workloads/shapes");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	agent_group_teardown(dir[0] ? dir : NULL);
	curl_global_cleanup();
	return 0;
}

/* The samples stored in ClickHouse (all agents: the test has one). */
static long long stored_samples(const struct chsrv *srv)
{
	/* each batch's row once however often it was inserted, as the store reads */
	char *a =
		ch_query(srv, "SELECT sum(v) FROM (SELECT any(value) AS v FROM smolder.raw_batches "
			      "GROUP BY type, window_start, labelset, stack, agent, seq)");
	long long v = strtoll(a, NULL, 10);

	free(a);
	return v;
}

/* Polls until ClickHouse holds exactly want samples; returns the last sum. */
static long long wait_stored(const struct chsrv *srv, long long want)
{
	uint64_t deadline = test_now_ms() + WAIT_MS;
	long long v;

	do {
		v = stored_samples(srv);
		if (v == want)
			return v;
		usleep(100000); /* polling interval of a bounded wait */
	} while (test_now_ms() < deadline);
	return v;
}

/* Polls /healthz until its status is want; fails the test past WAIT_MS. */
static void health_wait(unsigned port, long want)
{
	uint64_t deadline = test_now_ms() + WAIT_MS;
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
			 WAIT_MS, want);
	free(r.body);
}

static void test_agent_spools_while_clickhouse_is_down(void **state)
{
	char url[64], err_path[128], out_path[128], spool[128], work_pid[16], loc[128];
	const char *extra[] = { "--db", loc, NULL };
	long long retries, pending, spooled, recorded, stored, acked, windows;
	struct chsrv srv;
	struct coll c;
	unsigned aport;
	pid_t work, agent;

	(void)state;
	need_root();
	ch_skip_unless_available();
	ch_start(&srv);
	ch_location(&srv, "smolder", loc, sizeof(loc));
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the collector on ClickHouse did not start");
	}
	work = test_spawn((char *[]){ shapes, "1", NULL }, "/dev/null", NULL);
	snprintf(work_pid, sizeof(work_pid), "%d", (int)work);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", c.port);
	snprintf(err_path, sizeof(err_path), "%s/agent.err", dir);
	snprintf(out_path, sizeof(out_path), "%s/agent.folded", dir);
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	agent = start_agent(out_path, err_path, "--pid", work_pid, "--window", "1", "--collector",
			    url, "--spool-dir", spool, "--retry-base-ms", "50", "--metrics", "0",
			    NULL);
	aport = agent_metrics_port(agent, err_path, WAIT_MS);
	metric_wait_at_least(aport, "smolder_agent_batches_sent_total", 3, WAIT_MS);

	/* between two batches: paused until ClickHouse holds what was acknowledged */
	test_kill(agent, SIGSTOP);
	acked = metric_value(c.port, "smolder_samples_ingested_total");
	stored = wait_stored(&srv, acked);
	assert_int_equal(stored, acked);
	assert_true(acked > 0);
	ch_halt(&srv);
	test_kill(agent, SIGCONT);

	health_wait(c.port, 503);
	retries = metric_wait_at_least(aport, "smolder_agent_send_retries_total", 3, WAIT_MS);
	pending = metric_wait_at_least(aport, "smolder_agent_spool_batches", 2, WAIT_MS);
	print_message("  ClickHouse down: %lld samples stored before, %lld retries, %lld "
		      "batches spooled, /healthz 503\n",
		      acked, retries, pending);
	assert_true(metric_value(c.port, "smolder_batches_rejected_total{reason=\"store\"}") > 0);

	ch_restart(&srv);
	test_kill(work, SIGTERM);
	test_wait(work, WAIT_MS);
	/* two more windows drained: every sample of the workload is recorded */
	windows = metric_value(aport, "smolder_agent_windows_total");
	metric_wait_at_least(aport, "smolder_agent_windows_total", windows + 2, WAIT_MS);
	spooled = metric_value(aport, "smolder_agent_batches_spooled_total");
	metric_wait_at_least(aport, "smolder_agent_batches_sent_total", spooled, WAIT_MS);
	health_wait(c.port, 200);
	recorded = metric_value(aport, "smolder_agent_samples_recorded_total");
	stored = wait_stored(&srv, recorded);
	print_message("  ClickHouse back: the agent recorded %lld samples in %lld batches, "
		      "ClickHouse holds %lld\n",
		      recorded, spooled, stored);
	assert_true(recorded > acked);
	assert_int_equal(stored, recorded);
	assert_int_equal(metric_value(aport, "smolder_agent_spool_batches"), 0);
	assert_int_equal(metric_value(aport, "smolder_agent_batches_rejected_total"), 0);

	test_kill(agent, SIGTERM);
	agent_exited_cleanly(agent, err_path, WAIT_MS);
	coll_stop(&c);
	ch_stop(&srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_agent_spools_while_clickhouse_is_down,
					  coll_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

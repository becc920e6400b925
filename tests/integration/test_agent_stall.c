/* An agent stopped and resumed (SIGSTOP, SIGCONT) while a collector watches it:
 * the collector's /healthz reports the stall while it lasts and is ok again
 * after, and the window the agent drains on resuming, which holds the whole
 * stop's samples, is stored with its real time, so no step of the timeline
 * shows more than the host's cores.
 *
 * The stop lasts STALL_WINDOWS_STOPPED windows of 1 s: a drain that holds 6
 * windows' time, as a 60 s stop does of the default 10 s windows (the window
 * length only scales both), in a 1 s timeline. The collector reports a stall
 * after STALL_WINDOWS_TEST windows, so it is seen halfway through the stop.
 *
 * Needs root (the agent loads BPF); skipped with a reason otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "collectortest.h"
#include "agenttest.h"

#define STALL_WINDOWS_STOPPED 6 /* windows of 1 s the agent is stopped for */
#define STALL_WINDOWS_TEST    3 /* --stall-windows: a stall is reported after 3 s */
#define FREQUENCY	      99
/* A 1 s step may hold more than 1 s of samples: a drain late by less than half
 * a window (the host busy, the drain thread not yet scheduled) ships as one
 * window, window starts are whole seconds, and perf's frequency mode keeps 99 Hz
 * only on average. A step that holds the stop's window whole holds about
 * STALL_WINDOWS_STOPPED times the host's cores. */
#define CORES_SLACK 1.5

static int teardown(void **state)
{
	return coll_teardown(state);
}

/* Whether pid runs `smolder agent` (its command line's second word). */
static bool is_agent(pid_t pid)
{
	char path[64], buf[256];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n > strlen(buf) + 1 && strcmp(buf + strlen(buf) + 1, "agent") == 0;
}

/* Polls /healthz every 50 ms until its status is want, for at most timeout_ms;
 * returns the last body (free it) and the status in *status. */
static char *health_until(unsigned port, long want, unsigned timeout_ms, long *status)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	struct reply r;

	for (;;) {
		r = http_get(port, "/healthz", NULL);
		*status = r.status;
		if (r.status == want || test_now_ms() >= deadline)
			return r.body;
		free(r.body);
		usleep(50000); /* polling interval of a bounded wait */
	}
}

/* The collector started with `extra` (--agent-window 1 ...), a workload busy on
 * every CPU and an agent of 1 s windows shipping to it. */
static void test_stall_reported_and_spread(void **state)
{
	const char *extra[] = { "--agent-window", "1", "--stall-windows", "3", NULL };
	char url[64], spool[128], agent_err[160], burn_bin[256], threads[16], path[160];
	char *burn_argv[] = { NULL, threads, NULL }, *body, *p;
	long nproc = sysconf(_SC_NPROCESSORS_ONLN), status;
	unsigned long long total = 0, stall_samples = 0, most = 0;
	long long t, most_t = 0, from, stop_at, cont_at, before;
	unsigned long long v;
	uint64_t resume_at;
	struct coll c;
	pid_t agent, burn;
	int used, points = 0;

	(void)state;
	need_root();
	_Static_assert(STALL_WINDOWS_TEST < STALL_WINDOWS_STOPPED,
		       "the stall is seen while it lasts");
	if (coll_start(&c, "127.0.0.1:0", extra)) {
		test_print_log("collector", c.err);
		fail_msg("the collector did not start");
	}
	snprintf(threads, sizeof(threads), "%ld", nproc);
	burn_argv[0] = test_build_path(burn_bin, sizeof(burn_bin), "workloads/shapes");
	burn = test_spawn(burn_argv, "/dev/null", NULL);
	assert_true(burn > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", c.port);
	snprintf(spool, sizeof(spool), "%s/spool", c.dir);
	snprintf(agent_err, sizeof(agent_err), "%s/agent.err", c.dir);
	from = (long long)time(NULL);
	agent = start_agent("/dev/null", agent_err, "--window", "1", "--frequency", "99",
			    "--collector", url, "--spool-dir", spool, NULL);
	agent_wait_sampling(agent, agent_err, 60000);
	/* two windows stored: the agent ships, and /healthz is ok */
	metric_wait_at_least(c.port, "smolder_batches_ingested_total", 2, 30000);
	body = health_until(c.port, 200, 10000, &status);
	if (status != 200)
		fail_msg("/healthz before the stop: %ld %s", status, body);
	free(body);

	/* the pid is our child, running, and the agent (test_kill checks the first two) */
	assert_true(is_agent(agent));
	before = metric_value(c.port, "smolder_batches_ingested_total");
	stop_at = (long long)time(NULL);
	resume_at = test_now_ms() + STALL_WINDOWS_STOPPED * 1000;
	test_kill(agent, SIGSTOP);
	body = health_until(c.port, 503, STALL_WINDOWS_STOPPED * 1000, &status);
	print_message("  /healthz while stopped: %ld %s", status, body);
	if (status != 503 || !strstr(body, "sent nothing for"))
		fail_msg("/healthz did not report the stopped agent: %ld %s", status, body);
	assert_true(test_now_ms() < resume_at); /* seen while it lasted */
	free(body);
	while (test_now_ms() < resume_at) /* the stop's length: a duration, not a wait */
		usleep(20000);
	test_kill(agent, SIGCONT);
	cont_at = (long long)time(NULL);
	body = health_until(c.port, 200, 10000, &status);
	if (status != 200)
		fail_msg("/healthz after the agent resumed: %ld %s", status, body);
	free(body);

	/* the stop's window stored (as STALL_WINDOWS_STOPPED pieces or more, or as
	 * one), and two windows after it */
	metric_wait_at_least(c.port, "smolder_batches_ingested_total",
			     before + STALL_WINDOWS_STOPPED + 2, 30000);
	snprintf(path, sizeof(path), "/api/v1/series?format=json&step=1&from=%lld&to=%lld", from,
		 (long long)time(NULL) + 1);
	body = http_get(c.port, path, NULL).body;
	assert_non_null(body);
	if (!strstr(body, "\"step\":1,"))
		fail_msg("the series is not of 1 s steps: %.300s", body);
	p = strstr(body, "\"points\":[");
	assert_non_null(p);
	for (p += strlen("\"points\":["); *p == '['; points++) {
		assert_int_equal(sscanf(p, "[%lld,%llu]%n", &t, &v, &used), 2);
		p += used + (p[used] == ',');
		total += v;
		if (t >= stop_at && t <= cont_at)
			stall_samples += v;
		if (v > most)
			most = v, most_t = t;
	}
	free(body);
	print_message("  %d steps, %llu samples, %llu in the stop's %lld s; most in a step: %llu "
		      "at %lld (%.2f cores of %ld)\n",
		      points, total, stall_samples, cont_at - stop_at, most, most_t,
		      (double)most / FREQUENCY, nproc);
	/* Minimum: the host busy at least a quarter of the stop, so a step holding
	 * the stop whole would be over the cores. */
	assert_true(stall_samples >=
		    (unsigned long long)(nproc * FREQUENCY * STALL_WINDOWS_STOPPED / 4));
	if ((double)most / FREQUENCY > (double)nproc * CORES_SLACK)
		fail_msg("a 1 s step at %lld holds %llu samples: %.2f cores on a %ld-core host",
			 most_t, most, (double)most / FREQUENCY, nproc);

	test_kill(agent, SIGTERM);
	agent_exited_cleanly(agent, agent_err, 30000);
	test_kill(burn, SIGTERM);
	test_wait(burn, 10000);
	coll_stop(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_stall_reported_and_spread, teardown),
	};

	if (getenv("SMOLDER_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SMOLDER_TEST_FILTER"));
	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

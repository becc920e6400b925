/* End-to-end test that a frame keeps the kind it was sampled with on its way from
 * the agent to the store (agent/framestack.h): the sanitized agent samples a
 * workload whose native functions are named like other kinds' folded text
 * (tests/workloads/oddnames.c: "handler (app.py:12)", "view (app.py)",
 * "poll_[k]", "stub_[j]") and ships to a real collector on SQLite; the
 * collector's flame graph (JSON, line granularity) must hold each of the four
 * under its exact name, as a native frame only, with at least MIN_SAMPLES
 * samples. The agent's own folded output (-o, function granularity) must print
 * each name as it is: a native name is not a Python frame whose line is left out.
 *
 * Needs root (BPF); skipped with a reason otherwise.
 */
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

#include "agenttest.h"
#include "collectortest.h"

#define QUERY_WAIT_MS 20000
#define MIN_SAMPLES   30 /* per function: a quarter of 2 s of CPU at 499 Hz is ~250 */
#define CPU_SECONDS   2	 /* the workload burns at least this much while sampled */

static char tmpdir[64];
static struct coll coll;

/* The workload's functions: each a native symbol that reads as another kind. */
static const char *const odd_names[] = {
	"handler (app.py:12)", /* a Python frame with a line */
	"view (app.py)",       /* a Python frame at function granularity */
	"poll_[k]",	       /* a kernel frame */
	"stub_[j]",	       /* a JIT frame */
};
#define NODD (sizeof(odd_names) / sizeof(odd_names[0]))

static int setup(void **state)
{
	if (!agent_group_setup(tmpdir, sizeof(tmpdir)))
		return 0;
	coll_env();
	coll_start_for_group(&coll);
	*state = &coll;
	return 0;
}

static int teardown(void **state)
{
	if (*state)
		coll_stop(&coll);
	agent_group_teardown(tmpdir[0] ? tmpdir : NULL);
	coll_teardown(state);
	return 0;
}

/* The samples of the JSON tree's nodes named name with kind "native" (summed
 * over every path), and in *other those of nodes of that name and another kind. */
static uint64_t native_total(const char *json, const char *name, uint64_t *other)
{
	char key[128], kind[16];
	unsigned long long self, total;
	uint64_t sum = 0;
	const char *p;

	*other = 0;
	snprintf(key, sizeof(key), "{\"name\":\"%s\",\"kind\":\"", name);
	for (p = json; (p = strstr(p, key)); p++) {
		if (sscanf(p + strlen(key), "%15[a-z]\",\"self\":%llu,\"total\":%llu", kind, &self,
			   &total) != 3)
			fail_msg("a node of %s does not read: %.200s", name, p);
		if (strcmp(kind, "native") == 0)
			sum += total;
		else
			*other += total;
	}
	return sum;
}

static void test_native_names_keep_their_kind(void **state)
{
	char bin[256], out[128], err[128], url[64], pid[16], path[256], *argv[2];
	uint64_t deadline, seen[NODD], other[NODD], least;
	struct reply r = { 0 };
	struct folded *f;
	pid_t work, agent;
	long long ticks;
	size_t i;

	NEED_ROOT(*state);
	argv[0] = test_build_path(bin, sizeof(bin), "workloads/oddnames");
	argv[1] = NULL;
	work = test_spawn(argv, NULL, NULL);
	snprintf(pid, sizeof(pid), "%d", (int)work);
	snprintf(out, sizeof(out), "%s/odd.folded", tmpdir);
	snprintf(err, sizeof(err), "%s/odd.err", tmpdir);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", coll.port);
	agent = start_agent(out, err, "--pid", pid, "--collector", url, "--spool-dir", tmpdir,
			    "--frequency", "499", "--window", "1", NULL);
	agent_wait_sampling(agent, err, 60000);
	ticks = test_proc_cpu_ticks(work);
	wait_cpu_seconds(work, ticks, CPU_SECONDS);
	test_kill(agent, SIGINT); /* the last window is shipped */
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);

	/* The collector's tree: every name native, each with enough samples (a
	 * bounded wait for the last batches to be stored). */
	snprintf(path, sizeof(path),
		 "/api/v1/flamegraph?format=json&granularity=line&from=-1h&to=%lld&where=pid=%s",
		 (long long)time(NULL) + 60, pid);
	deadline = test_now_ms() + QUERY_WAIT_MS;
	for (;;) {
		free(r.body);
		r = http_get(coll.port, path, NULL);
		if (r.status != 200)
			fail_msg("GET %s: status %ld: %s", path, r.status, r.body ? r.body : "");
		least = UINT64_MAX;
		for (i = 0; i < NODD; i++) {
			seen[i] = native_total(r.body, odd_names[i], &other[i]);
			if (seen[i] < least)
				least = seen[i];
		}
		if (least >= MIN_SAMPLES || test_now_ms() > deadline)
			break;
		usleep(200000); /* polling interval of a bounded wait */
	}
	free(r.body);
	for (i = 0; i < NODD; i++)
		print_message("  %s: %llu samples as native, %llu as another kind\n", odd_names[i],
			      (unsigned long long)seen[i], (unsigned long long)other[i]);
	for (i = 0; i < NODD; i++) {
		if (seen[i] < MIN_SAMPLES || other[i])
			fail_msg("the collector holds %s as native in %llu samples (at least %d "
				 "wanted) and as another kind in %llu",
				 odd_names[i], (unsigned long long)seen[i], MIN_SAMPLES,
				 (unsigned long long)other[i]);
	}

	/* The agent's folded output prints each name as it is. */
	f = load_folded(out);
	for (i = 0; i < NODD; i++) {
		uint64_t n = count_frames(f, "oddnames", odd_names[i]);

		print_message("  -o: %s in %llu samples\n", odd_names[i], (unsigned long long)n);
		assert_true(n >= MIN_SAMPLES);
	}
	assert_int_equal(count_frames(f, "oddnames", "handler (app.py)"), 0);
	folded__free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_native_names_keep_their_kind),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

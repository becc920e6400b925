/* Helpers for the tests that run the real agent: starting the sanitized binary
 * (a registered child, see testutil.h), checking it exited cleanly, and reading
 * folded output by frame. Included by one test file each (after <cmocka.h>), so
 * everything is static. */
#ifndef SMOLDER_AGENTTEST_H
#define SMOLDER_AGENTTEST_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/folded.h"
#include "testutil.h"

struct frame_count {
	const char *comm;  /* first frame to match, NULL: any */
	const char *frame; /* frame that must appear, NULL: any */
	uint64_t count;
};

/* True when stack (frames separated by ';') has a frame equal to name. */
static bool has_frame(const char *stack, const char *name)
{
	size_t n = strlen(name);
	const char *p = stack;

	while (p) {
		if (strncmp(p, name, n) == 0 && (p[n] == ';' || p[n] == '\0'))
			return true;
		p = strchr(p, ';');
		if (p)
			p++;
	}
	return false;
}

static bool first_frame_is(const char *stack, const char *comm)
{
	size_t n = strlen(comm);

	return strncmp(stack, comm, n) == 0 && (stack[n] == ';' || stack[n] == '\0');
}

static int count_cb(void *ctx, const char *stack, uint64_t count)
{
	struct frame_count *fc = ctx;

	if ((!fc->comm || first_frame_is(stack, fc->comm)) &&
	    (!fc->frame || has_frame(stack, fc->frame)))
		fc->count += count;
	return 0;
}

static __attribute__((unused)) uint64_t count_frames(const struct folded *f, const char *comm,
						     const char *frame)
{
	struct frame_count fc = { comm, frame, 0 };

	folded__foreach(f, count_cb, &fc);
	return fc.count;
}

static __attribute__((unused)) struct folded *load_folded(const char *path)
{
	struct folded *f = NULL;
	FILE *in = fopen(path, "r");
	size_t bad = 0;

	assert_non_null(in);
	assert_int_equal(folded__new(&f), 0);
	assert_int_equal(folded__read(f, in, &bad), 0);
	fclose(in);
	return f;
}

/* A group's setup for tests that need root (CAP_BPF, CAP_PERFMON): false, with the
 * reason printed, when not root (the group's state is then NULL and NEED_ROOT
 * skips each test); else a fresh temporary directory in dir. */
static __attribute__((unused)) bool agent_group_setup(char *dir, size_t len)
{
	if (!test_is_root()) {
		fprintf(stderr, "skipping: needs root for BPF\n");
		return false;
	}
	assert_non_null(test_mkdtemp(dir, len));
	return true;
}

/* The matching teardown: every child killed, dir removed unless SMOLDER_KEEP. */
static __attribute__((unused)) void agent_group_teardown(const char *dir)
{
	test_kill_children();
	if (dir && !getenv("SMOLDER_KEEP"))
		test_rm_rf(dir);
}

/* Skips the calling test, with the reason printed, when not root. */
static __attribute__((unused)) void need_root(void)
{
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
}

/* Waits until pid has used `seconds` more seconds of CPU than `from` (clock ticks),
 * for at most two minutes. Tests that sample for a span of the target's CPU time,
 * not of the clock's, get slower on a loaded machine (8 runnable tasks on 2 cores
 * gave a target a tenth of a CPU), not poorer in samples. */
static __attribute__((unused)) void wait_cpu_seconds(pid_t pid, long long from, int seconds)
{
	long long ticks = (long long)seconds * sysconf(_SC_CLK_TCK);

	if (!test_wait_cpu(pid, from, ticks, 120000))
		print_message("  (pid %d used less than %d s of CPU in 2 minutes)\n", (int)pid,
			      seconds);
}

#define NEED_ROOT(fx)                                                                              \
	do {                                                                                       \
		if (!(fx))                                                                         \
			skip();                                                                    \
	} while (0)

/* The number after "name " in a workload's output (its own truth: "slept 6000",
 * "burn_a 1234", "addr 0x7f..."; decimal or 0x hex); fails the test, showing the
 * output, when the name is not there. */
static __attribute__((unused)) uint64_t truth_value(const char *text, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "%s ", name);
	p = strstr(text, key);
	if (!p)
		fail_msg("'%s' not in the workload's output:\n%s", name, text);
	return strtoull(p + strlen(key), NULL, 0);
}

/* Starts the sanitized agent with the given extra arguments (NULL-terminated);
 * returns its pid, or fails the test (test_spawn). */
static pid_t start_agent(const char *out, const char *err_path, ...)
{
	char bin[256], *argv[64];
	const char *arg;
	va_list ap;
	int n = 0;

	argv[n++] = test_build_path(bin, sizeof(bin), "asan/smolder");
	argv[n++] = "agent";
	argv[n++] = "--output";
	argv[n++] = (char *)out;
	va_start(ap, err_path);
	while ((arg = va_arg(ap, const char *)) && n < 62)
		argv[n++] = (char *)arg;
	va_end(ap);
	argv[n] = NULL;
	return test_spawn(argv, NULL, err_path);
}

/* Waits up to timeout_ms for the agent to say it samples ("smolder: sampling ...");
 * fails the test with its log if it does not. */
static __attribute__((unused)) void agent_wait_sampling(pid_t agent, const char *err_path,
							unsigned timeout_ms)
{
	if (!test_wait_for_child_text(agent, err_path, "smolder: sampling", timeout_ms)) {
		test_print_log("agent", err_path);
		fail_msg("the agent did not start sampling");
	}
}

/* Waits for the agent to end by itself (--duration) and asserts exit status 0 and
 * a log free of sanitizer reports. An agent still running at the deadline has
 * its threads' stacks printed (eu-stack, elfutils, when installed) before it is
 * killed: a hang after the summary was seen twice in CI and not reproduced. */
static void agent_exited_cleanly(pid_t agent, const char *err_path, unsigned timeout_ms)
{
	int status = test_wait_keep(agent, timeout_ms);
	char cmd[64];

	if (status == -1)
		fail_msg("waiting for the agent (pid %d): %s", (int)agent, strerror(errno));
	if (status == -2) { /* still running: where its threads wait, then kill it */
		test_print_log("agent", err_path);
		snprintf(cmd, sizeof(cmd), "eu-stack -p %d 1>&2", (int)agent);
		if (system(cmd) != 0)
			print_message("(eu-stack could not show the agent's threads)\n");
		test_child_kill_reap(agent);
		fail_msg("the agent was still running %u ms after it should have ended",
			 timeout_ms);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		test_print_log("agent", err_path);
		fail_msg("agent failed (wait status %d)", status);
	}
	test_assert_no_sanitizer_report("agent", err_path);
}

/* A sampled share must match the measured one within 3 points, or within four
 * standard errors of a binomial sample when a loaded machine left the workload
 * too few samples for 3 points to be a fair bound. Shares in percent. */
static __attribute__((unused)) void assert_share(const char *name, double seen, double real,
						 uint64_t samples)
{
	double p = real / 100.0, se = 100.0 * sqrt(p * (1.0 - p) / (double)samples);
	double tol = 4.0 * se > 3.0 ? 4.0 * se : 3.0;

	print_message("  %s: agent %.1f%%, measured %.1f%% (bound %.1f points, %llu samples)\n",
		      name, seen, real, tol, (unsigned long long)samples);
	assert_true(seen > real - tol && seen < real + tol);
}

/* The port an agent started with --metrics 0 logged ("metrics on port N"), once
 * it did within timeout_ms; fails the test otherwise. */
static inline unsigned agent_metrics_port(pid_t agent, const char *err_path, unsigned timeout_ms)
{
	char *text, *p;
	unsigned port;

	if (!test_wait_for_child_text(agent, err_path, "metrics on port ", timeout_ms)) {
		test_print_log("agent", err_path);
		fail_msg("the agent did not start its metrics endpoint");
	}
	text = test_read_file(err_path);
	p = strstr(text, "metrics on port ");
	port = (unsigned)strtoul(p + 16, NULL, 10);
	free(text);
	assert_true(port > 0);
	return port;
}

#endif

/* End-to-end tests of `smolder agent` on the real kernel: the sanitized binary
 * samples workloads of known shape (tests/workloads/shapes.c) and the tests check
 * the folded output against what the workload measured of itself.
 *
 * Needs root (CAP_BPF, CAP_PERFMON); skipped with a reason otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/folded.h"
#include "agenttest.h"
#include "testutil.h"

static pid_t start_shapes(const char *bin, const char *threads, const char *truth_path)
{
	char *argv[] = { (char *)bin, (char *)threads, NULL };

	return test_spawn(argv, truth_path, NULL);
}

struct fixture {
	char dir[64];
	char shapes[256];
};

static int setup(void **state)
{
	static struct fixture fx;

	if (!agent_group_setup(fx.dir, sizeof(fx.dir))) {
		*state = NULL;
		return 0;
	}
	test_build_path(fx.shapes, sizeof(fx.shapes), "workloads/shapes");
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	agent_group_teardown(fx ? fx->dir : NULL);
	return 0;
}

/* Shares of burn_a/b/c seen by the agent match the CPU time the workload measured
 * in them within 3 points; stacks are root first with main below the workers. */
static void test_known_shares(void **state)
{
	struct fixture *fx = *state;
	char out[128], err[128], truth_path[128], pidbuf[16];
	const char *fn[] = { "burn_a", "burn_b", "burn_c" };
	pid_t work, agent;
	struct folded *f;
	uint64_t total, ttotal, i;
	char *truth;

	NEED_ROOT(fx);
	snprintf(out, sizeof(out), "%s/shares.folded", fx->dir);
	snprintf(err, sizeof(err), "%s/shares.err", fx->dir);
	snprintf(truth_path, sizeof(truth_path), "%s/shares.truth", fx->dir);
	work = start_shapes(fx->shapes, "1", truth_path);
	assert_true(work > 0);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)work);
	agent = start_agent(out, err, "--pid", pidbuf, "--frequency", "999", "--window", "2",
			    "--duration", "6", NULL);
	assert_true(agent > 0);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGTERM);
	assert_true(test_wait(work, 10000) == 0);

	truth = test_read_file(truth_path);
	f = load_folded(out);
	total = count_frames(f, "shapes", NULL);
	ttotal = truth_value(truth, "total");
	/* 6 s at 999 Hz of one busy thread is ~6000 samples, fewer on a loaded machine */
	assert_true(total > 1000);
	assert_int_equal(total, folded__total(f)); /* --pid: nothing else sampled */
	for (i = 0; i < 3; i++) {
		double seen = 100.0 * (double)count_frames(f, "shapes", fn[i]) / (double)total;
		double real = 100.0 * (double)truth_value(truth, fn[i]) / (double)ttotal;

		assert_share(fn[i], seen, real, total);
	}
	/* Nearly every sample is under main (the rest: startup, signal delivery). */
	assert_true(count_frames(f, "shapes", "main") >= total * 95 / 100);
	free(truth);
	folded__free(f);
}

struct order_check {
	uint64_t good, bad;
};

static int order_cb(void *ctx, const char *stack, uint64_t count)
{
	struct order_check *oc = ctx;
	const char *m = strstr(stack, ";main;"), *r = strstr(stack, ";run_loop;"),
		   *b = strstr(stack, ";burn_");

	if (!b)
		return 0;
	if (m && r && m < r && r < b)
		oc->good += count;
	else
		oc->bad += count;
	return 0;
}

static void test_stack_order(void **state)
{
	struct fixture *fx = *state;
	char out[128], err[128], pidbuf[16];
	struct order_check oc = { 0 };
	pid_t work, agent;
	struct folded *f;

	NEED_ROOT(fx);
	snprintf(out, sizeof(out), "%s/order.folded", fx->dir);
	snprintf(err, sizeof(err), "%s/order.err", fx->dir);
	work = start_shapes(fx->shapes, "1", "/dev/null");
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)work);
	agent = start_agent(out, err, "--pid", pidbuf, "--frequency", "499", "--duration", "4",
			    NULL);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);
	test_wait(work, 10000);

	f = load_folded(out);
	folded__foreach(f, order_cb, &oc);
	print_message("stacks in order: %llu, out of order: %llu\n", (unsigned long long)oc.good,
		      (unsigned long long)oc.bad);
	assert_true(oc.good > 500);
	assert_true(oc.bad <= oc.good / 100);
	folded__free(f);
}

static int unresolved_only_at_leaf(void *ctx, const char *stack, uint64_t count)
{
	const char *p = strstr(stack, ";victim+0x");

	(void)ctx;
	(void)count;
	if (p && strchr(p + 1, ';'))
		fail_msg("unnamed victim frame below the leaf: %s", stack);
	return 0;
}

/* Prints a victim stack that misses run_loop, for a failure's diagnosis. */
static int print_without_run_loop(void *ctx, const char *stack, uint64_t count)
{
	(void)ctx;
	if (first_frame_is(stack, "victim") && !has_frame(stack, "run_loop"))
		print_message("  without run_loop (%llu): %.300s\n", (unsigned long long)count,
			      stack);
	return 0;
}

/* The target is killed and its binary deleted mid-window: the agent keeps
 * sampling the other target, and the dead process's last samples still resolve. */
static void test_target_dies(void **state)
{
	struct fixture *fx = *state;
	char out[128], err[128], victim_bin[128], cmd[512], vpid[16], kpid[16];
	pid_t victim, keeper, agent;
	uint64_t v_before, k_before, v_after, k_after;
	struct folded *f;
	long long ticks;
	char *text;

	NEED_ROOT(fx);
	snprintf(out, sizeof(out), "%s/dies.folded", fx->dir);
	snprintf(err, sizeof(err), "%s/dies.err", fx->dir);
	snprintf(victim_bin, sizeof(victim_bin), "%s/victim", fx->dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", fx->shapes, victim_bin);
	assert_int_equal(system(cmd), 0);

	victim = start_shapes(victim_bin, "1", "/dev/null");
	keeper = start_shapes(fx->shapes, "1", "/dev/null");
	snprintf(vpid, sizeof(vpid), "%d", (int)victim);
	snprintf(kpid, sizeof(kpid), "%d", (int)keeper);
	agent = start_agent(out, err, "--pid", vpid, "--pid", kpid, "--frequency", "499",
			    "--window", "1", "--duration", "6", NULL);

	/* Wait until a window with the victim's frames has been written, then let the
	 * victim run a while longer so the window in flight holds its samples. */
	assert_true(test_wait_for_child_text(agent, out, "victim;", 15000));
	ticks = test_proc_cpu_ticks(victim);
	assert_true(test_wait_cpu(victim, ticks, 30, 10000));
	f = load_folded(out);
	v_before = count_frames(f, "victim", NULL);
	k_before = count_frames(f, "shapes", NULL);
	folded__free(f);
	test_kill(victim, SIGKILL);
	assert_int_equal(unlink(victim_bin), 0);
	test_wait(victim, 10000);

	agent_exited_cleanly(agent, err, 60000);
	test_kill(keeper, SIGKILL);
	test_wait(keeper, 10000);

	f = load_folded(out);
	v_after = count_frames(f, "victim", NULL);
	k_after = count_frames(f, "shapes", NULL);
	print_message("victim %llu -> %llu samples, keeper %llu -> %llu\n",
		      (unsigned long long)v_before, (unsigned long long)v_after,
		      (unsigned long long)k_before, (unsigned long long)k_after);
	assert_true(v_after > v_before);       /* the last window was resolved */
	assert_true(k_after > k_before + 499); /* and sampling went on for seconds */
	/* The victim's functions are named from its snapshot after death. A frame of
	 * the victim's own module left as "victim+0x..." may only be a leaf: a sample
	 * in code no symbol covers; were the snapshot missing, main and run_loop
	 * would be unnamed too. */
	folded__foreach(f, print_without_run_loop, NULL);
	/* the minimum before the ratio: 30 ticks of the victim's CPU at 499 Hz after
	 * its first window alone are ~150 samples */
	assert_true(v_after >= 100);
	assert_true(count_frames(f, "victim", "run_loop") >= v_after * 99 / 100);
	folded__foreach(f, unresolved_only_at_leaf, NULL);
	text = test_read_file(out);
	assert_non_null(strstr(text, "victim;"));
	free(text);
	folded__free(f);
}

/* The whole host: several processes, kernel and user frames, no losses. */
static void test_whole_host(void **state)
{
	struct fixture *fx = *state;
	char out[128], err[128];
	char *dd_argv[] = { "/bin/dd", "if=/dev/zero",	  "of=/dev/null",
			    "bs=4k",   "count=100000000", NULL };
	pid_t work, dd, agent;
	struct folded *f;
	char *text;

	NEED_ROOT(fx);
	snprintf(out, sizeof(out), "%s/host.folded", fx->dir);
	snprintf(err, sizeof(err), "%s/host.err", fx->dir);
	work = start_shapes(fx->shapes, "1", "/dev/null");
	dd = test_spawn(dd_argv, "/dev/null", "/dev/null");
	agent = start_agent(out, err, "--frequency", "199", "--window", "1", "--duration", "3",
			    NULL);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);
	test_kill(dd, SIGKILL);
	test_wait(work, 10000);
	test_wait(dd, 10000);

	f = load_folded(out);
	assert_true(count_frames(f, "shapes", "burn_a") > 50);
	/* dd spends its time in read/write syscalls: kernel frames under its stacks */
	assert_true(count_frames(f, "dd", "do_syscall_64_[k]") > 50);
	text = test_read_file(err);
	/* more than one process was seen: the distinct stacks span several comms */
	assert_true(folded__size(f) > 10);
	assert_non_null(strstr(text,
			       "losses: kernel stack unreadable 0, user stack unreadable 0, "
			       "stack map full 0, counts map full 0, process events dropped 0"));
	free(text);
	folded__free(f);
}

/* Every sample the program counted is drained exactly once across many swaps. */
static void test_swap_loses_nothing(void **state)
{
	struct fixture *fx = *state;
	char out[128], err[128];
	pid_t work, agent;
	char *text, *p;
	unsigned long long samples = 0, recorded = 0;
	struct folded *f;

	NEED_ROOT(fx);
	snprintf(out, sizeof(out), "%s/swap.folded", fx->dir);
	snprintf(err, sizeof(err), "%s/swap.err", fx->dir);
	work = start_shapes(fx->shapes, "2", "/dev/null");
	agent = start_agent(out, err, "--frequency", "999", "--window", "1", "--duration", "5",
			    "--include-idle", "-v", NULL);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);
	test_wait(work, 10000);

	text = test_read_file(err);
	p = strstr(text, "total: ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "total: %*f s, %llu samples (%*f/s) on %*u CPUs, %llu recorded",
				&samples, &recorded),
			 2);
	print_message("counted %llu, drained %llu\n", samples, recorded);
	assert_true(samples > 5000); /* 2 CPUs x 999 Hz x 5 s, idle included */
	if (samples != recorded)     /* the agent's own account: which loss, which window */
		print_message("%s", text);
	assert_int_equal(samples, recorded);
	f = load_folded(out);
	assert_int_equal(folded__total(f), recorded);
	assert_true(strstr(text, "window: ") != NULL); /* -v: per-window statistics */
	folded__free(f);
	free(text);
}

static void test_bad_option_exit_code(void **state)
{
	char bin[256], err[128];
	char *argv[] = { test_build_path(bin, sizeof(bin), "asan/smolder"), "agent", "--frequency",
			 "0", NULL };
	struct fixture *fx = *state;
	char *text;
	int status;
	pid_t pid;

	NEED_ROOT(fx);
	snprintf(err, sizeof(err), "%s/bad.err", fx->dir);
	pid = test_spawn(argv, "/dev/null", err);
	status = test_wait(pid, 30000);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 2);
	text = test_read_file(err);
	assert_non_null(strstr(text, "--frequency wants 1 to 10000 Hz, got '0'"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_bad_option_exit_code, test_teardown_children),
		cmocka_unit_test_teardown(test_known_shares, test_teardown_children),
		cmocka_unit_test_teardown(test_stack_order, test_teardown_children),
		cmocka_unit_test_teardown(test_target_dies, test_teardown_children),
		cmocka_unit_test_teardown(test_whole_host, test_teardown_children),
		cmocka_unit_test_teardown(test_swap_loses_nothing, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

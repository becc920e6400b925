/* End-to-end test of `smolder agent` under process churn: the sanitized
 * agent samples every process while tests/workloads/churn.c starts 100 short-lived
 * processes per second, every 5th of which names itself "churnkid" and burns
 * 30 ms in churn_burn() before it exits, long before the agent drains the window.
 * The agent reads a process's maps at its first sample and loads symbols only at
 * the drain; the names of the sampled children must survive their exit.
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

#define MIN_KID_SAMPLES 40 /* 80 children x 30 ms at 99 Hz is ~240 expected */

struct churn_counts {
	uint64_t kid;	   /* samples of churnkid */
	uint64_t named;	   /* ... whose stack names churn_burn */
	uint64_t complete; /* ... and main, burn_child, and no [unknown] frame */
};

static int churn_cb(void *ctx, const char *stack, uint64_t count)
{
	struct churn_counts *c = ctx;

	if (!first_frame_is(stack, "churnkid"))
		return 0;
	c->kid += count;
	if (!has_frame(stack, "churn_burn"))
		return 0;
	c->named += count;
	if (has_frame(stack, "main") && has_frame(stack, "burn_child") &&
	    !strstr(stack, "[unknown]"))
		c->complete += count;
	return 0;
}

/* Every stack of a sampled child names its function with the child's comm, and
 * the frames below it (main, burn_child, libc's start code) resolve although the
 * child had exited before the drain: its maps were read at its first sample, after
 * ld.so had mapped libc (an exec-time read, before the libraries, left the libc
 * frames "[unknown]"). Minimum: 40 churnkid samples; at least 80 % of them name
 * churn_burn (the rest are exec and exit, in the kernel), and 90 % of those are
 * complete. */
static void test_short_lived_names_kept(void **state)
{
	char dir[64], out[128], err[128], churn[256];
	char *argv[] = { churn, "100", "4", "5", "30", NULL };
	struct churn_counts c = { 0 };
	struct folded *f;
	pid_t agent, work;

	(void)state;
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	test_build_path(churn, sizeof(churn), "workloads/churn");
	snprintf(out, sizeof(out), "%s/churn.folded", dir);
	snprintf(err, sizeof(err), "%s/agent.err", dir);

	agent = start_agent(out, err, "--duration", "9", "--window", "2", NULL);
	assert_true(test_wait_for_child_text(agent, err, "smolder: sampling", 60000));
	work = test_spawn(argv, "/dev/null", NULL);
	assert_true(work > 0);
	assert_int_equal(test_wait(work, 30000), 0);
	agent_exited_cleanly(agent, err, 60000);

	f = load_folded(out);
	folded__foreach(f, churn_cb, &c);
	print_message("churnkid: %llu samples, %llu naming churn_burn, %llu complete\n",
		      (unsigned long long)c.kid, (unsigned long long)c.named,
		      (unsigned long long)c.complete);
	if (c.kid < MIN_KID_SAMPLES)
		test_print_log("agent", err);
	assert_true(c.kid >= MIN_KID_SAMPLES);
	assert_true(c.named * 100 >= c.kid * 80);
	assert_true(c.complete * 100 >= c.named * 90);
	folded__free(f);
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_short_lived_names_kept, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

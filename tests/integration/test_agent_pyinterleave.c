/* End-to-end tests of Python frames interleaved with native ones on interpreters
 * without frame pointers: the pyenv builds 3.9 to 3.13 and Debian's
 * python3, none built with frame pointers. tests/workloads/pyinterleave.py has a
 * Python function call C (libc's qsort through ctypes; sorted() with a key) that
 * calls back into Python; in the agent's folded output the C frames must stand
 * between the two Python frames, in order: py_outer_X (...);C frames;py_callback_X
 * (...). On today's frame-pointer walk no sample has them (the Python frames are
 * stacked together), so these tests fail until native stacks are unwound from CFI.
 *
 * Needs root. A version that is not installed is skipped with a printed reason.
 * Each interpreter is sampled for 4 s of its CPU time, not of the clock's, so a
 * loaded machine makes the test slower, not poorer in samples.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/folded.h"
#include "agenttest.h"
#include "childtest.h"
#include "testutil.h"

#define MAX_FRAMES 256

static char tmpdir[64];

struct interp {
	const char *label;   /* "3.9" ... "3.13", "debian" */
	char path[PATH_MAX]; /* "" when absent */
};

static struct interp interps[] = {
	{ "3.9" }, { "3.10" }, { "3.11" }, { "3.12" }, { "3.13" }, { "debian" },
};

static void find_interpreters(void)
{
	size_t i;

	for (i = 0; i < 5; i++)
		test_pyenv_python(interps[i].label, interps[i].path, sizeof(interps[i].path));
	if (access("/usr/bin/python3", X_OK) == 0)
		snprintf(interps[5].path, sizeof(interps[5].path), "/usr/bin/python3");
}

static int group_setup(void **state)
{
	(void)state;
	find_interpreters();
	return test_mkdtemp(tmpdir, sizeof(tmpdir)) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	test_kill_children();
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(tmpdir);
	return 0;
}

/* One callback's tally: samples in it, and those with its py_outer_* caller above
 * it and native frames (no "(file:line)", no kernel frame) between the two; for
 * qsort, one of them must be libc's sort (qsort, __qsort_r, msort_with_tmp: the
 * names perf gives them from libc6-dbg, beside ffi_call and closure_fcn). */
struct interleave {
	const char *outer, *callback;
	bool want_qsort;
	uint64_t samples, ordered, first_bad_set;
	uint64_t marked; /* samples marked [no unwind table]: not judged, but bounded */
	char first_bad[1024];
};

static bool is_qsort_frame(const char *f)
{
	return strstr(f, "qsort") || strstr(f, "msort"); /* __GI___qsort_r, msort_with_tmp */
}

static int interleave_cb(void *ctx, const char *stack, uint64_t count)
{
	struct interleave *il = ctx;
	char *copy = strdup(stack), *frames[MAX_FRAMES];
	size_t n, i, outer = SIZE_MAX, cb = SIZE_MAX, native = 0, qs = 0;
	size_t olen = strlen(il->outer), clen = strlen(il->callback);

	assert_non_null(copy);
	n = split_frames(copy, frames, MAX_FRAMES);
	for (i = 1; i < n; i++) {
		if (cb == SIZE_MAX && strncmp(frames[i], il->callback, clen) == 0 &&
		    frames[i][clen] == ' ')
			cb = i;
		if (outer == SIZE_MAX && strncmp(frames[i], il->outer, olen) == 0 &&
		    frames[i][olen] == ' ')
			outer = i;
	}
	if (cb != SIZE_MAX && n > 1 && strcmp(frames[1], "[no unwind table]") == 0) {
		il->marked += count; /* before the interpreter's table was in: said so */
	} else if (cb != SIZE_MAX) {
		il->samples += count;
		if (outer != SIZE_MAX && outer < cb)
			for (i = outer + 1; i < cb; i++) {
				if (is_python_frame(frames[i]) || is_kernel_frame(frames[i]) ||
				    frames[i][0] == '[')
					continue;
				native++;
				qs += is_qsort_frame(frames[i]);
			}
		if (outer != SIZE_MAX && outer < cb && native && (!il->want_qsort || qs))
			il->ordered += count;
		else if (!il->first_bad_set) {
			il->first_bad_set = 1;
			snprintf(il->first_bad, sizeof(il->first_bad), "%.1000s", stack);
		}
	}
	free(copy);
	return 0;
}

static void test_python_interleave(void **state)
{
	const struct interp *in = *state;
	char script[PATH_MAX], out[128], err[128], ready[128], pid[16];
	char *argv[] = { (char *)in->path, script, NULL };
	struct interleave il[2] = { { "py_outer_qsort", "py_callback_qsort", true },
				    { "py_outer_sorted", "py_callback_sorted", false } };
	pid_t py, agent;
	struct folded *f;
	int k;

	need_root();
	if (!in->path[0]) {
		test_skip("CPython %s: not installed on this machine", in->label);
	}
	assert_non_null(realpath("tests/workloads/pyinterleave.py", script));
	snprintf(out, sizeof(out), "%s/py%s.folded", tmpdir, in->label);
	snprintf(err, sizeof(err), "%s/py%s.err", tmpdir, in->label);
	snprintf(ready, sizeof(ready), "%s/py%s.ready", tmpdir, in->label);
	py = test_spawn(argv, ready, NULL);
	assert_true(test_wait_for_child_text(py, ready, "ready", 30000));
	snprintf(pid, sizeof(pid), "%d", (int)py);
	agent = start_agent(out, err, "--pid", pid, "--frequency", "999", "--window", "2", NULL);
	agent_wait_sampling(agent, err, 30000);
	wait_cpu_seconds(py, test_proc_cpu_ticks(py), 8);
	test_kill(agent, SIGTERM);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(py, SIGTERM);
	assert_int_equal(test_wait(py, 20000), 0);

	f = load_folded(out);
	for (k = 0; k < 2; k++)
		folded__foreach(f, interleave_cb, &il[k]);
	folded__free(f);
	for (k = 0; k < 2; k++) {
		print_message("CPython %s: %llu samples in %s, %llu under %s with C frames "
			      "between%s\n",
			      in->label, (unsigned long long)il[k].samples, il[k].callback,
			      (unsigned long long)il[k].ordered, il[k].outer,
			      il[k].want_qsort ? " (libc's qsort among them)" : "");
		if (il[k].first_bad_set)
			print_message("  first stack without: %s\n", il[k].first_bad);
	}
	for (k = 0; k < 2; k++) {
		/* 4 s of its CPU at 999 Hz gave ~2500 samples in py_callback_qsort and
		 * ~1150 in py_callback_sorted (the rest: building lists, ctypes); the
		 * test takes 8 s, since a slower machine's sanitized agent took ~0.4 s
		 * of a 4 s run to build libpython's table (10.8 % of the samples) */
		if (il[k].samples < 500)
			fail_msg("only %llu samples in %s, need 500",
				 (unsigned long long)il[k].samples, il[k].callback);
		/* Samples taken before the tables were built are marked and left out
		 * of the order check; they must stay few (the sanitized agent builds
		 * libpython's table in about a second). */
		if (il[k].marked * 10 > il[k].samples + il[k].marked)
			fail_msg("%llu of %llu samples of %s had no unwind table yet",
				 (unsigned long long)il[k].marked,
				 (unsigned long long)(il[k].samples + il[k].marked),
				 il[k].callback);
		if (il[k].ordered * 100 < il[k].samples * 95)
			fail_msg("%llu of %llu samples of %s (%.1f %%) show %s;C frames;%s, need "
				 ">= 95 %%",
				 (unsigned long long)il[k].ordered,
				 (unsigned long long)il[k].samples, il[k].callback,
				 100.0 * (double)il[k].ordered / (double)il[k].samples, il[k].outer,
				 il[k].callback);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		{ "python_interleave_3.9", test_python_interleave, NULL, test_teardown_children,
		  &interps[0] },
		{ "python_interleave_3.10", test_python_interleave, NULL, test_teardown_children,
		  &interps[1] },
		{ "python_interleave_3.11", test_python_interleave, NULL, test_teardown_children,
		  &interps[2] },
		{ "python_interleave_3.12", test_python_interleave, NULL, test_teardown_children,
		  &interps[3] },
		{ "python_interleave_3.13", test_python_interleave, NULL, test_teardown_children,
		  &interps[4] },
		{ "python_interleave_debian", test_python_interleave, NULL, test_teardown_children,
		  &interps[5] },
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

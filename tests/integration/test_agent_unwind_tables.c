/* End-to-end tests of the unwind tables' lifecycle on the real kernel: a binary
 * replaced on disk while a process still maps the old one, and tables evicted
 * and loaded again under a small --unwind-table-mb. The workload is compiled here
 * without frame pointers (-O2 -fomit-frame-pointer), so only the CFI walk can
 * give its whole stack, and its shape is known exactly:
 *   main;top;mid x DEPTH;LEAF
 * "No wrong frames" means: a sample of the workload either carries a marker
 * ([no unwind table], [incomplete], [truncated]) or has exactly that shape, with
 * the leaf of the binary that process runs.
 *
 * Needs root (CAP_BPF, CAP_PERFMON) and a C compiler; skipped with a reason
 * otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "common/folded.h"
#include "agenttest.h"
#include "testutil.h"

#define DEPTH 21 /* mid frames, as the program below recurses */

/* LEAF and PAD come from -D: PAD bytes of code ahead of the leaf move every
 * address of the second build. FDES (optional) puts that many tiny functions of
 * two rows each ahead of the workload's code: a table bigger than one window of
 * the agent's copy into the pool, the workload's rows in a later one. */
static const char prog_src[] =
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"#ifdef FDES\n"
	"__asm__(\".text\\n.rept \" FDES \"\\n.cfi_startproc\\nnop\\npush %rbp\\n"
	".cfi_adjust_cfa_offset 8\\nnop\\npop %rbp\\n.cfi_adjust_cfa_offset -8\\nret\\n"
	".cfi_endproc\\n.endr\\n\");\n"
	"#endif\n"
	"__attribute__((noinline, used)) void pad(void) { __asm__ volatile(\".fill \" PAD "
	"\", 1, 0x90\"); }\n"
	"__attribute__((noinline)) double LEAF(int n) { double x = 0; for (int i = 0; i < n; "
	"i++) x += i * 0.5; return x; }\n"
	"__attribute__((noinline)) double mid(int d, int n) { char b[256]; memset(b, d, sizeof "
	"b); if (d == 0) return LEAF(n) + b[3]; return mid(d - 1, n) + b[5]; }\n"
	"__attribute__((noinline)) double top(void) { return mid(20, 100000); }\n"
	"int main(void) { double s = 0; for (;;) { s += top(); if (s < 0) printf(\"%f\", s); } "
	"}\n";

struct fixture {
	char dir[64];
	char src[128];
};

static int setup(void **state)
{
	static struct fixture fx;
	FILE *f;

	if (!agent_group_setup(fx.dir, sizeof(fx.dir))) {
		*state = NULL;
		return 0;
	}
	if (system("cc --version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "skipping: no C compiler (cc)\n");
		*state = NULL;
		return 0;
	}
	snprintf(fx.src, sizeof(fx.src), "%s/prog.c", fx.dir);
	f = fopen(fx.src, "w");
	assert_non_null(f);
	fputs(prog_src, f);
	fclose(f);
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	agent_group_teardown(fx ? fx->dir : NULL);
	return 0;
}

/* Compiles the workload with this leaf, padding and extra flags to path. */
static void build_prog(const struct fixture *fx, const char *path, const char *leaf, int pad,
		       const char *extra)
{
	char cmd[640];

	snprintf(cmd, sizeof(cmd),
		 "cc -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -g -DLEAF=%s "
		 "-DPAD='\"%d\"' %s -o %s %s",
		 leaf, pad, extra, path, fx->src);
	if (system(cmd) != 0)
		fail_msg("cannot build the workload: %s", cmd);
}

static pid_t start_prog(const char *path)
{
	char *argv[] = { (char *)path, NULL };

	return test_spawn(argv, "/dev/null", "/dev/null");
}

/* Waits until pid has burnt some CPU, so it is running its loop, not starting. */
static void wait_running(pid_t pid)
{
	long long t0 = test_proc_cpu_ticks(pid);

	assert_true(t0 >= 0);
	assert_true(test_wait_cpu(pid, t0, 20, 20000));
}

struct tally {
	const char *comm; /* the workload's process name */
	const char *leaf; /* the leaf its binary has */
	uint64_t total;	  /* its samples */
	uint64_t whole;	  /* with the exact expected shape */
	uint64_t marked;  /* with a marker: missing callers, said so */
	uint64_t wrong;	  /* neither: a wrong frame */
	char example[512];
};

/* Is the user part of this stack (after the process name, up to the first kernel
 * frame) a path of the workload's tree down from main: main, or main;top;mid x k (k up to
 * DEPTH), then the leaf (after all DEPTH mids) or one library function (memset,
 * called by mid)? A leaf of the other build, or any frame out of place, is not. */
static bool has_shape(const char *stack, const char *leaf)
{
	char user[4096], *k, *p, *tok, *save = NULL;
	int mids = 0;

	snprintf(user, sizeof(user), "%s", stack);
	k = strstr(user, "_[k]");
	if (k) { /* cut before the first kernel frame */
		while (k > user && *k != ';')
			k--;
		*k = '\0';
	}
	p = strstr(user, ";main");
	if (!p || (p[5] != '\0' && strncmp(p + 5, ";top", 4) != 0))
		return false;
	if (!p[5]) /* sampled in main itself, between two calls of top */
		return true;
	p += strlen(";main;top");
	if (!*p)
		return true;
	for (tok = strtok_r(p, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		if (strcmp(tok, "mid") == 0 && mids < DEPTH) {
			mids++;
			continue;
		}
		if (strcmp(tok, leaf) == 0 && mids == DEPTH)
			return strtok_r(NULL, ";", &save) == NULL;
		if (!strncmp(tok, "leaf_", 5) || !strcmp(tok, "mid") || !strcmp(tok, "top") ||
		    !strcmp(tok, "main") || !mids)
			return false;
		return strtok_r(NULL, ";", &save) == NULL; /* a library function, last */
	}
	return true;
}

static int tally_cb(void *ctx, const char *stack, uint64_t count)
{
	struct tally *t = ctx;

	if (!first_frame_is(stack, t->comm))
		return 0;
	t->total += count;
	if (has_frame(stack, "[no unwind table]") || has_frame(stack, "[incomplete]") ||
	    has_frame(stack, "[truncated]")) {
		t->marked += count;
	} else if (has_shape(stack, t->leaf)) {
		t->whole += count;
	} else {
		t->wrong += count;
		snprintf(t->example, sizeof(t->example), "%s", stack);
	}
	return 0;
}

static void tally(const struct folded *f, struct tally *t)
{
	folded__foreach(f, tally_cb, t);
	print_message("%s: %llu samples, %llu whole, %llu marked, %llu wrong%s%s\n", t->comm,
		      (unsigned long long)t->total, (unsigned long long)t->whole,
		      (unsigned long long)t->marked, (unsigned long long)t->wrong,
		      t->wrong ? ": " : "", t->example);
}

/* The summary's last "unwind tables:" line: the run's total. */
static const char *tables_line(const char *text)
{
	const char *line = NULL, *p = text;

	while ((p = strstr(p, "unwind tables: ")))
		line = p++;
	assert_non_null(line);
	return line;
}

/* The figure before name (e.g. "evicted") in that line. */
static unsigned long long table_stat(const char *text, const char *name)
{
	const char *line = tables_line(text), *p;
	char key[64];

	snprintf(key, sizeof(key), " %s", name);
	p = strstr(line, key);
	assert_non_null(p);
	while (p > line && p[-1] != ' ' && p[-1] != '(')
		p--;
	while (p > line && (p[-1] == ' ' || (p[-1] >= '0' && p[-1] <= '9')))
		p--;
	return strtoull(p, NULL, 10);
}

/* A process keeps running the binary it mapped after the file is replaced on
 * disk (the way package upgrades replace files: a rename over it); a process
 * started afterwards runs the new one. Each is unwound by its own file's table:
 * opened through /proc/PID/map_files/ for the deleted one. */
static void test_file_replaced_while_mapped(void **state)
{
	struct fixture *fx = *state;
	char path[128], tmp[128], out[128], err[128], pa[16], pb[16];
	struct tally a = { .comm = "prog", .leaf = "leaf_one" };
	struct tally b = { .comm = "prog2", .leaf = "leaf_two" };
	struct folded *f;
	pid_t old, new, agent;
	char *text;

	NEED_ROOT(fx);
	snprintf(path, sizeof(path), "%s/prog", fx->dir);
	snprintf(tmp, sizeof(tmp), "%s/prog.new", fx->dir);
	snprintf(out, sizeof(out), "%s/replaced.folded", fx->dir);
	snprintf(err, sizeof(err), "%s/replaced.err", fx->dir);
	build_prog(fx, path, "leaf_one", 16, "");
	old = start_prog(path);
	wait_running(old);
	build_prog(fx, tmp, "leaf_two", 4096, "");
	assert_int_equal(rename(tmp, path), 0);
	/* Started through a symlink, for a process name of its own; its maps show
	 * the file's own path, the same as the first process's. */
	snprintf(tmp, sizeof(tmp), "%s/prog2", fx->dir);
	assert_int_equal(symlink("prog", tmp), 0);
	new = start_prog(tmp);
	wait_running(new);

	snprintf(pa, sizeof(pa), "%d", (int)old);
	snprintf(pb, sizeof(pb), "%d", (int)new);
	agent = start_agent(out, err, "--pid", pa, "--pid", pb, "--frequency", "199", "--window",
			    "1", "--duration", "4", NULL);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(old, SIGKILL);
	test_kill(new, SIGKILL);
	test_wait(old, 10000);
	test_wait(new, 10000);

	f = load_folded(out);
	tally(f, &a);
	tally(f, &b);
	/* 2 processes x 199 Hz x 4 s could give 1592; a loaded 2-CPU machine, less */
	assert_true(a.total > 100);
	assert_true(b.total > 100);
	/* No frame of the other build, nothing out of place. */
	assert_int_equal(a.wrong, 0);
	assert_int_equal(b.wrong, 0);
	/* Marked: only the samples before the tables were loaded (the sanitized
	 * agent builds them slowly). */
	assert_true(a.marked * 4 < a.total);
	assert_true(b.marked * 4 < b.total);
	text = test_read_file(err);
	assert_true(table_stat(text, "loaded") >= 3); /* two progs, libc */
	free(text);
	folded__free(f);
}

/* Counts the windows the agent's -v statistics reported so far. */
static int windows_reported(const char *err_path)
{
	char *text = test_read_file(err_path), *p = text;
	int n = 0;

	while (p && (p = strstr(p, "smolder: window: "))) {
		n++;
		p++;
	}
	free(text);
	return n;
}

/* The workload and a CPython fill most of a 1 MiB pool; then that CPython stops
 * (its tables go idle) and another starts, whose tables do not fit beside them:
 * the idle ones are evicted for it, while the running workload's stay. Every
 * sample of the workload is whole or says that it is not, and the second CPython
 * gets whole native stacks once its tables are in. */
static void test_eviction_under_small_cap(void **state)
{
	struct fixture *fx = *state;
	char path[128], out[128], err[128], pids[3][16], py[2][256], script[128];
	const char *versions[2] = { "3.11", "3.12" };
	struct tally t = { .comm = "prog", .leaf = "leaf_one" };
	pid_t work, pys[2], agent;
	uint64_t deadline, later;
	struct folded *f;
	char *text;
	FILE *fp;
	int i;

	NEED_ROOT(fx);
	for (i = 0; i < 2; i++)
		if (!test_pyenv_python(versions[i], py[i], sizeof(py[i]))) {
			test_skip("CPython %s not installed under pyenv", versions[i]);
		}
	snprintf(path, sizeof(path), "%s/prog", fx->dir);
	snprintf(out, sizeof(out), "%s/evict.folded", fx->dir);
	snprintf(err, sizeof(err), "%s/evict.err", fx->dir);
	snprintf(script, sizeof(script), "%s/spin.py", fx->dir);
	fp = fopen(script, "w");
	assert_non_null(fp);
	fputs("def f(n):\n    return sum(i * i for i in range(n))\nwhile True:\n    f(10000)\n",
	      fp);
	fclose(fp);
	build_prog(fx, path, "leaf_one", 16, "");
	work = start_prog(path);
	for (i = 0; i < 2; i++) {
		char *argv[] = { py[i], script, NULL };

		pys[i] = test_spawn(argv, "/dev/null", "/dev/null");
		if (i == 1)
			test_kill(pys[1], SIGSTOP); /* waits for its turn */
	}
	wait_running(work);
	snprintf(pids[0], sizeof(pids[0]), "%d", (int)work);
	snprintf(pids[1], sizeof(pids[1]), "%d", (int)pys[0]);
	snprintf(pids[2], sizeof(pids[2]), "%d", (int)pys[1]);
	agent = start_agent(out, err, "--pid", pids[0], "--pid", pids[1], "--pid", pids[2],
			    "--unwind-table-mb", "1", "--frequency", "199", "--window", "1",
			    "--duration", "12", "-v", NULL);
	/* Four windows with the first CPython running: its tables are in. */
	deadline = test_now_ms() + 30000;
	while (windows_reported(err) < 4 && test_now_ms() < deadline && !test_child_exited(agent))
		test_wait_cpu(work, test_proc_cpu_ticks(work), 5, 1000); /* a bounded wait */
	assert_true(windows_reported(err) >= 4);
	test_kill(pys[0], SIGSTOP);
	test_kill(pys[1], SIGCONT);
	later = test_now_ms();
	agent_exited_cleanly(agent, err, 60000);
	print_message("second CPython ran for the last %llu ms\n",
		      (unsigned long long)(test_now_ms() - later));
	test_kill(work, SIGKILL);
	test_wait(work, 10000);
	for (i = 0; i < 2; i++) {
		test_kill(pys[i], SIGKILL);
		test_wait(pys[i], 10000);
	}

	text = test_read_file(err);
	print_message("%s", strstr(text, "smolder: total:"));
	assert_true(table_stat(text, "evicted") > 0); /* the first CPython's, for the second */
	f = load_folded(out);
	tally(f, &t);
	assert_true(t.total > 300);
	assert_int_equal(t.wrong, 0);
	assert_true(t.marked * 4 < t.total); /* the workload's tables were never evicted */
	/* The second CPython reached _start once its tables were in. */
	snprintf(pids[0], sizeof(pids[0]), "python%s", versions[1]);
	assert_true(count_frames(f, pids[0], "_start") > 20);
	free(text);
	folded__free(f);
}

/* The rows in use in the summary's last "unwind tables:" line ("N of M rows in
 * use"). */
static unsigned long long rows_in_use(const char *text)
{
	const char *line = tables_line(text), *p;

	p = strstr(line, " rows in use");
	assert_non_null(p);
	while (p > line && p[-1] != ';')
		p--;
	return strtoull(p, NULL, 10);
}

static int cut_cb(void *ctx, const char *stack, uint64_t count)
{
	uint64_t *cut = ctx;

	if (first_frame_is(stack, "prog") && has_frame(stack, "[incomplete]"))
		*cut += count;
	return 0;
}

/* A table of more rows than one window of the agent's copy into the pool (1 MiB,
 * 131,072 rows: agent/sampler.c), with the workload's own rows past the first
 * window: once the table is in, every sample is whole; none is wrong or cut (a
 * window copied to the wrong place leaves rows the walk cannot follow). The
 * samples before the table are marked [no unwind table]: the sanitized agent
 * takes a second or more to build 228 k rows. */
static void test_table_over_many_windows(void **state)
{
	struct fixture *fx = *state;
	char path[128], out[128], err[128], pid[16];
	struct tally t = { .comm = "prog", .leaf = "leaf_one" };
	unsigned long long rows;
	struct folded *f;
	pid_t work, agent;
	uint64_t cut = 0;
	char *text;

	NEED_ROOT(fx);
	snprintf(path, sizeof(path), "%s/prog", fx->dir);
	snprintf(out, sizeof(out), "%s/big.folded", fx->dir);
	snprintf(err, sizeof(err), "%s/big.err", fx->dir);
	build_prog(fx, path, "leaf_one", 16, "-DFDES='\"100000\"'");
	work = start_prog(path);
	wait_running(work);
	snprintf(pid, sizeof(pid), "%d", (int)work);
	agent = start_agent(out, err, "--pid", pid, "--frequency", "199", "--window", "1",
			    "--duration", "4", NULL);
	agent_exited_cleanly(agent, err, 60000);
	test_kill(work, SIGKILL);
	test_wait(work, 10000);

	text = test_read_file(err);
	assert_non_null(text);
	/* minimum: the binary's table alone is past one window (two rows a
	 * function), so the copy used two windows or more */
	rows = rows_in_use(text);
	print_message("rows in use: %llu\n", rows);
	assert_true(rows > 200000);
	f = load_folded(out);
	tally(f, &t);
	folded__foreach(f, cut_cb, &cut);
	print_message("prog: %llu cut\n", (unsigned long long)cut);
	/* minimum: 100 whole samples (199 Hz x 4 s could give 796) */
	assert_true(t.whole >= 100);
	assert_int_equal(t.wrong, 0);
	assert_int_equal(cut, 0);
	free(text);
	folded__free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_replaced_while_mapped),
		cmocka_unit_test(test_eviction_under_small_cap),
		cmocka_unit_test(test_table_over_many_windows),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

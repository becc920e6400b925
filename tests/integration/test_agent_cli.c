/* End-to-end tests of the agent options (smolder agent --help) and summary lines
 * (README.md, "Using the agent"): the sanitized `smolder agent` samples workloads of known
 * shape (tests/workloads/shapes.c, fanout.c, pyshapes.py) on the real kernel, and
 * each test checks what the option changes against what the workload is known to
 * do: the last partial window drained on SIGINT and SIGTERM, `-o -` printing one
 * block per window as it ends, `--python off`, `--python-depth`, `--max-stacks`
 * losses counted rather than silent, `--bpf-stats`, and the folded output's
 * granularity: Python frames by function by default, with their lines under
 * `--lines`; `-o` onto a device or FIFO written in place, never replaced.
 *
 * Needs root (CAP_BPF, CAP_PERFMON); skipped with a reason otherwise. The Python
 * tests use /usr/bin/python3 and are skipped when it is missing.
 */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cmocka.h>

#include "childtest.h"
#include "common/folded.h"
#include "common/frame.h"
#include "testutil.h"

#define PYTHON "/usr/bin/python3"

static char tmpdir[64], shapes_bin[256], fanout_bin[256], pyshapes[PATH_MAX];

static int group_setup(void **state)
{
	(void)state;
	if (!test_mkdtemp(tmpdir, sizeof(tmpdir)))
		return -1;
	test_build_path(shapes_bin, sizeof(shapes_bin), "workloads/shapes");
	test_build_path(fanout_bin, sizeof(fanout_bin), "workloads/fanout");
	if (!realpath("tests/workloads/pyshapes.py", pyshapes))
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(tmpdir);
	return 0;
}

/* Whatever an assertion left running is killed here. */
static int teardown(void **state)
{
	test_teardown_children(state);
	return 0;
}

static void need_root(void)
{
	if (!test_is_root()) {
		test_skip("needs root for BPF");
	}
}

static void need_python(void)
{
	need_root();
	if (access(PYTHON, X_OK)) {
		test_skip("no %s", PYTHON);
	}
}

static void path_in_tmp(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static pid_t start_workload(const char *bin, const char *arg, const char *out)
{
	char *argv[] = { (char *)bin, (char *)arg, NULL };
	pid_t pid = test_spawn(argv, out, NULL);

	assert_true(pid > 0);
	return pid;
}

static pid_t start_python(const char *mode, const char *arg, const char *out)
{
	char *argv[] = { PYTHON, pyshapes, (char *)mode, (char *)arg, NULL };
	pid_t pid = test_spawn(argv, out, NULL);

	assert_true(pid > 0);
	return pid;
}

/* A workload started by the test ends on SIGTERM with status 0. */
static void stop_workload(pid_t pid)
{
	test_kill(pid, SIGTERM);
	assert_int_equal(test_wait(pid, 20000), 0);
}

/* Samples of the stacks that have a frame equal to name. */
struct frame_tally {
	const char *name;
	uint64_t count;
};

static int tally_cb(void *ctx, const char *stack, uint64_t count)
{
	struct frame_tally *t = ctx;
	size_t n = strlen(t->name);
	const char *p = stack;

	while (p) {
		if (strncmp(p, t->name, n) == 0 && (p[n] == ';' || p[n] == '\0')) {
			t->count += count;
			break;
		}
		p = strchr(p, ';');
		if (p)
			p++;
	}
	return 0;
}

static uint64_t samples_with_frame(const struct folded *f, const char *name)
{
	struct frame_tally t = { name, 0 };

	folded__foreach(f, tally_cb, &t);
	return t.count;
}

/* SIGINT or SIGTERM in the middle of a long window: the agent drains the partial
 * window, writes its stacks, prints the summary and exits 0. Reference: the CPU
 * time the workload used while it was sampled (from /proc). Minimum: 1.5 s of the
 * workload's CPU time at 173 Hz, of which at least half must be in the output.
 * (173 Hz, as a 30 s window at 999 Hz would size the maps at hundreds of MiB; not
 * 199 Hz, whose 5.03 ms period phase-locks with the workload's 10 ms rounds: over
 * 1.5 s its samples drifted through under one round and once missed burn_c's
 * 2 ms entirely.) */
static void drain_on_signal(int sig, const char *name)
{
	char out[128], err[128], pid[16];
	long hz = sysconf(_SC_CLK_TCK);
	long long before, t0, t1, t2;
	struct summary s;
	struct folded *f;
	uint64_t total;
	pid_t work, agent;
	char *text;

	need_root();
	snprintf(out, sizeof(out), "%s/drain-%s.folded", tmpdir, name);
	snprintf(err, sizeof(err), "%s/drain-%s.err", tmpdir, name);
	work = start_workload(shapes_bin, "1", "/dev/null");
	snprintf(pid, sizeof(pid), "%d", (int)work);
	before = test_proc_cpu_ticks(work);
	const char *args[] = { "agent",	   "--pid", pid,	"--frequency", "173",
			       "--window", "30",    "--output", out,	       NULL };
	agent = smolder_spawn("/dev/null", err, args);
	assert_true(agent > 0);
	assert_true(test_wait_for_text(err, "smolder: sampling", 30000));
	t0 = test_proc_cpu_ticks(work);
	assert_true(test_wait_cpu(work, t0, 3 * hz / 2, 30000));
	t1 = test_proc_cpu_ticks(work);
	/* No window has ended: whatever the file holds comes from the drain. */
	assert_int_not_equal(access(out, F_OK), 0);
	test_kill(agent, sig);
	text = child_exited_cleanly(agent, err, 60000);
	t2 = test_proc_cpu_ticks(work);
	stop_workload(work);

	parse_summary(text, &s);
	f = read_folded_file(out);
	total = folded__total(f);
	print_message("%s: %llu samples drained; workload CPU %.2f s sampled for sure, %.2f s at "
		      "most\n",
		      name, (unsigned long long)total, (double)(t1 - t0) / (double)hz,
		      (double)(t2 - before) / (double)hz);
	assert_true((double)total >= 0.5 * 173.0 * (double)(t1 - t0) / (double)hz);
	assert_true((double)total <= 1.2 * 173.0 * (double)(t2 - before) / (double)hz + 20.0);
	assert_int_equal(s.windows, 1);
	assert_int_equal(s.recorded, total);
	assert_int_equal(s.samples, s.recorded + s.counts_full);
	assert_true(samples_with_frame(f, "burn_a") > 0);
	assert_true(samples_with_frame(f, "burn_b") > 0);
	assert_true(samples_with_frame(f, "burn_c") > 0);
	assert_false(s.has_bpf); /* the bpf line is --bpf-stats' alone */
	folded__free(f);
	free(text);
}

static void test_drain_on_sigint(void **state)
{
	(void)state;
	drain_on_signal(SIGINT, "sigint");
}

static void test_drain_on_sigterm(void **state)
{
	(void)state;
	drain_on_signal(SIGTERM, "sigterm");
}

/* One block of `-o -` output: the bytes that arrived together. */
struct block {
	char *text;
	size_t len;
	uint64_t first_ms;
};

#define MAX_BLOCKS   32
#define BLOCK_GAP_MS 300 /* windows are 1 s apart; one window's write takes ms */

struct tail {
	struct block blocks[MAX_BLOCKS];
	size_t n;
	uint64_t last_ms, exit_ms;
	int status;
};

static void tail_add(struct tail *t, const char *buf, size_t len)
{
	uint64_t now = test_now_ms();
	struct block *b;

	if (!t->n || now - t->last_ms > BLOCK_GAP_MS) {
		assert_true(t->n < MAX_BLOCKS);
		t->blocks[t->n++] = (struct block){ .first_ms = now };
	}
	t->last_ms = now;
	b = &t->blocks[t->n - 1];
	b->text = realloc(b->text, b->len + len + 1);
	assert_non_null(b->text);
	memcpy(b->text + b->len, buf, len);
	b->len += len;
	b->text[b->len] = '\0';
}

/* Reads the FIFO the agent writes its stdout to until the agent exits, grouping
 * the bytes into blocks by their arrival time. */
static void tail_fifo(struct tail *t, int fd, pid_t agent, unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	char buf[65536];
	bool exited = false;
	ssize_t n;

	while (test_now_ms() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		poll(&p, 1, 100);
		n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			tail_add(t, buf, (size_t)n);
			continue;
		}
		if (exited)
			return; /* everything written before the exit has been read */
		if (waitpid(agent, &t->status, WNOHANG) == agent) {
			exited = true;
			test_child_forget(agent); /* reaped here */
			t->exit_ms = test_now_ms();
			continue;
		}
		if (n == 0)
			usleep(10000); /* no writer yet, or gone: polling interval */
	}
	fail_msg("the agent did not exit within %u ms", timeout_ms);
}

struct hottest {
	char *stack;
	uint64_t count;
};

static int hottest_cb(void *ctx, const char *stack, uint64_t count)
{
	struct hottest *h = ctx;

	if (count > h->count) {
		free(h->stack);
		h->stack = strdup(stack);
		h->count = count;
	}
	return 0;
}

/* `-o -`: every window's stacks are printed to stdout when the window ends, one
 * block per window: sorted, each stack once, a stack seen in several windows once
 * in each. Blocks are told apart by when they arrive (the agent writes through a
 * FIFO). Minimum: 3 blocks, the first one arriving over a second before the agent
 * exits. */
static void test_stdout_per_window(void **state)
{
	char fifo[128], err[128], pid[16], *text;
	struct folded *blocks[MAX_BLOCKS] = { 0 };
	struct tail t = { .status = -1 };
	struct hottest hot = { 0 };
	uint64_t sum = 0;
	struct summary s;
	pid_t work, agent;
	size_t i, with_hot = 0;
	int fd;

	(void)state;
	need_root();
	path_in_tmp(fifo, sizeof(fifo), "stdout.fifo");
	path_in_tmp(err, sizeof(err), "stdout.err");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(fd >= 0);
	work = start_workload(shapes_bin, "1", "/dev/null");
	snprintf(pid, sizeof(pid), "%d", (int)work);
	const char *args[] = { "agent", "--pid",      pid, "--frequency", "999", "--window",
			       "1",	"--duration", "4", "-o",	  "-",	 NULL };
	agent = smolder_spawn(fifo, err, args);
	assert_true(agent > 0);
	tail_fifo(&t, fd, agent, 60000);
	close(fd);
	stop_workload(work);

	text = test_read_file(err);
	if (!WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
		fail_msg("agent failed (wait status %d):\n%s", t.status, text);
	test_assert_no_sanitizer_report("agent", err);
	parse_summary(text, &s);
	print_message("%zu blocks on stdout, %llu windows, %llu samples recorded\n", t.n, s.windows,
		      s.recorded);
	assert_true(t.n >= 3);
	assert_int_equal(t.n, s.windows);
	assert_true(t.blocks[0].first_ms + 1000 < t.exit_ms); /* printed as it ended */

	for (i = 0; i < t.n; i++) {
		struct block *b = &t.blocks[i];
		char *line, *prev = NULL, *save = NULL;

		blocks[i] = parse_folded_text(b->text);
		/* sorted and one line per stack: the block is one window */
		for (line = strtok_r(b->text, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			*strrchr(line, ' ') = '\0';
			if (prev && strcmp(prev, line) >= 0)
				fail_msg("block %zu: '%s' after '%s'", i, line, prev);
			prev = line;
		}
		print_message("  block %zu at +%llu ms: %zu stacks, %llu samples\n", i,
			      (unsigned long long)(b->first_ms - t.blocks[0].first_ms),
			      folded__size(blocks[i]),
			      (unsigned long long)folded__total(blocks[i]));
		assert_true(samples_with_frame(blocks[i], "burn_a") > 0);
		sum += folded__total(blocks[i]);
	}
	/* The hottest stack of the first block comes back in (nearly) every block,
	 * once each: windows are printed alone, not the run so far. */
	folded__foreach(blocks[0], hottest_cb, &hot);
	assert_non_null(hot.stack);
	for (i = 0; i < t.n; i++)
		with_hot += folded__count(blocks[i], hot.stack) > 0;
	assert_true(with_hot + 1 >= t.n);
	assert_int_equal(sum, s.recorded);
	assert_int_equal(s.samples, s.recorded + s.counts_full);
	free(hot.stack);
	for (i = 0; i < t.n; i++) {
		folded__free(blocks[i]);
		free(t.blocks[i].text);
	}
	free(text);
}

/* Python and native frames of a folded file, by stack. */
struct py_tally {
	uint64_t total;	   /* every sample */
	uint64_t python;   /* samples with at least one Python frame */
	uint64_t native;   /* samples with a user frame that is not Python */
	uint64_t marked;   /* samples whose stack starts with [python: truncated] */
	uint64_t deep;	   /* samples of the deep recursion (descend) */
	uint64_t shallow;  /* samples of Burner.run */
	uint64_t burn_a;   /* samples under Burner.burn_a */
	uint64_t bad;	   /* samples breaking the depth rules below */
	size_t max_python; /* most Python frames in one stack */
	unsigned depth;	   /* --python-depth of the run, 0: not checked */
};

static int py_cb(void *ctx, const char *stack, uint64_t count)
{
	struct py_tally *t = ctx;
	char *copy = strdup(stack), *fr[1100];
	size_t n, i, npy = 0, ndescend = 0, first = 1;
	bool native = false, marked, run = false, root_is_module = false;
	bool out_of_order = false, has_module = false;
	uint64_t bad_before;

	assert_non_null(copy);
	bad_before = t->bad;
	n = split_frames(copy, fr, 1100);
	/* The native walk's own marker ([no unwind table], [incomplete],
	 * [truncated]) comes first when it has one; then Python's. */
	while (first < n && fr[first][0] == '[' && strncmp(fr[first], "[python", 7) != 0)
		first++;
	marked = first < n && strcmp(fr[first], "[python: truncated]") == 0;
	for (i = first; i < n; i++) {
		if (is_python_frame(fr[i])) {
			if (!npy)
				root_is_module = strncmp(fr[i], "<module> (", 10) == 0;
			npy++;
			if (strncmp(fr[i], "descend (", 9) == 0)
				ndescend++;
			else if (ndescend) /* a caller of the recursion inside it */
				out_of_order = true;
			has_module |= strncmp(fr[i], "<module> (", 10) == 0;
			run |= strncmp(fr[i], "Burner.run (", 12) == 0;
			if (strncmp(fr[i], "Burner.burn_a (", 15) == 0)
				t->burn_a += count;
		} else if (!is_kernel_frame(fr[i]) && strncmp(fr[i], "[python", 7) != 0) {
			native = true;
		}
	}
	for (i = first + 1; i < n; i++)
		if (strncmp(fr[i], "[python", 7) == 0)
			t->bad += count; /* a marker anywhere but first */
	t->total += count;
	t->python += npy ? count : 0;
	t->native += native ? count : 0;
	t->marked += marked ? count : 0;
	t->max_python = npy > t->max_python ? npy : t->max_python;
	if (t->depth) {
		/* Cut stacks keep the innermost depth frames: the recursion, and
		 * chunks() or main() when it had not gone deep yet, never <module>. */
		if (marked && (npy != t->depth || !ndescend || out_of_order || has_module))
			t->bad += count;
		if (ndescend && marked)
			t->deep += count;
		/* Stacks shallower than the depth are whole and unmarked. */
		if (run) {
			t->shallow += count;
			if (marked || !root_is_module)
				t->bad += count;
		}
	}
	if (t->bad != bad_before)
		print_message("  against the depth rules: %s %llu\n", stack,
			      (unsigned long long)count);
	free(copy);
	return 0;
}

/* --python off: a CPython process shows only native frames, while the default
 * (on) shows its Python frames. Minimum: 300 samples of the process in each run
 * (2 s at 999 Hz of a busy process). */
static void test_python_off(void **state)
{
	char out_on[128], out_off[128], err_on[128], err_off[128], pid[16], *text;
	struct py_tally on = { 0 }, off = { 0 };
	struct summary s_on, s_off;
	struct folded *f;
	pid_t py, agent;

	(void)state;
	need_python();
	path_in_tmp(out_on, sizeof(out_on), "pyon.folded");
	path_in_tmp(out_off, sizeof(out_off), "pyoff.folded");
	path_in_tmp(err_on, sizeof(err_on), "pyon.err");
	path_in_tmp(err_off, sizeof(err_off), "pyoff.err");
	py = start_python("shares", "60", "/dev/null");
	snprintf(pid, sizeof(pid), "%d", (int)py);

	const char *args_on[] = { "agent",	"--pid", pid,	     "--frequency", "999",
				  "--duration", "2",	 "--output", out_on,	    NULL };
	agent = smolder_spawn("/dev/null", err_on, args_on);
	text = child_exited_cleanly(agent, err_on, 60000);
	parse_summary(text, &s_on);
	free(text);
	const char *args_off[] = { "agent", "--pid",	pid,   "--frequency", "999",   "--duration",
				   "2",	    "--python", "off", "--output",    out_off, NULL };
	agent = smolder_spawn("/dev/null", err_off, args_off);
	text = child_exited_cleanly(agent, err_off, 60000);
	parse_summary(text, &s_off);
	free(text);
	stop_workload(py);

	f = read_folded_file(out_on);
	folded__foreach(f, py_cb, &on);
	folded__free(f);
	f = read_folded_file(out_off);
	folded__foreach(f, py_cb, &off);
	folded__free(f);
	print_message("on: %llu samples, %llu with Python frames; off: %llu samples, %llu with "
		      "Python frames, %llu with native frames\n",
		      (unsigned long long)on.total, (unsigned long long)on.python,
		      (unsigned long long)off.total, (unsigned long long)off.python,
		      (unsigned long long)off.native);
	assert_true(on.total >= 300 && off.total >= 300);
	assert_true(on.python >= on.total * 90 / 100);
	assert_true(on.burn_a > 0);
	assert_true(s_on.has_python && s_on.py_samples > 0);
	assert_int_equal(off.python, 0);
	assert_int_equal(off.marked, 0);
	assert_true(off.native >= off.total * 90 / 100);
	assert_false(s_off.has_python);
}

/* Python frames of a folded file: with a line ("f (a.py:3)") and without. */
struct line_tally {
	uint64_t with_line, without_line; /* frames, weighted by their stack's count */
	uint64_t spin;			  /* samples with a "spin (" frame */
};

static int line_cb(void *ctx, const char *stack, uint64_t count)
{
	struct line_tally *t = ctx;
	const char *p = stack, *semi;
	struct frame fr;

	for (p = strchr(stack, ';'); p; p = *semi ? semi : NULL) {
		p++;
		semi = strchrnul(p, ';');
		frame_parse(p, (size_t)(semi - p), false, &fr);
		if (fr.kind != FRAME_PYTHON)
			continue;
		if (fr.line == FRAME_NO_LINE)
			t->without_line += count;
		else
			t->with_line += count;
		if (strncmp(p, "spin (", 6) == 0)
			t->spin += count;
	}
	return 0;
}

/* The folded output is function-level by default ("spin (pyshapes.py)", every
 * Python frame without its line) and line-level with --lines ("spin
 * (pyshapes.py:34)"). Minimum: 300 Python frames seen in each run. */
static void test_lines(void **state)
{
	char out_fn[128], out_ln[128], err_fn[128], err_ln[128], pid[16], *text;
	struct line_tally fn = { 0 }, ln = { 0 };
	struct folded *f_fn, *f_ln;
	pid_t py, agent;

	(void)state;
	need_python();
	path_in_tmp(out_fn, sizeof(out_fn), "fn.folded");
	path_in_tmp(out_ln, sizeof(out_ln), "ln.folded");
	path_in_tmp(err_fn, sizeof(err_fn), "fn.err");
	path_in_tmp(err_ln, sizeof(err_ln), "ln.err");
	py = start_python("shares", "60", "/dev/null");
	snprintf(pid, sizeof(pid), "%d", (int)py);

	const char *args_fn[] = { "agent",	"--pid", pid,	     "--frequency", "999",
				  "--duration", "2",	 "--output", out_fn,	    NULL };
	agent = smolder_spawn("/dev/null", err_fn, args_fn);
	free(child_exited_cleanly(agent, err_fn, 60000));
	const char *args_ln[] = { "agent",    "--pid",	    pid, "--frequency",
				  "999",      "--duration", "2", "--lines",
				  "--output", out_ln,	    NULL };
	agent = smolder_spawn("/dev/null", err_ln, args_ln);
	text = child_exited_cleanly(agent, err_ln, 60000);
	free(text);
	stop_workload(py);

	f_fn = read_folded_file(out_fn);
	folded__foreach(f_fn, line_cb, &fn);
	f_ln = read_folded_file(out_ln);
	folded__foreach(f_ln, line_cb, &ln);
	print_message("default: %llu Python frames without a line, %llu with, %zu stacks; "
		      "--lines: %llu without, %llu with, %zu stacks\n",
		      (unsigned long long)fn.without_line, (unsigned long long)fn.with_line,
		      folded__size(f_fn), (unsigned long long)ln.without_line,
		      (unsigned long long)ln.with_line, folded__size(f_ln));
	assert_true(fn.without_line >= 300 && ln.with_line >= 300);
	assert_int_equal(fn.with_line, 0);
	assert_int_equal(ln.without_line, 0);
	assert_true(fn.spin > 0 && ln.spin > 0);
	folded__free(f_fn);
	folded__free(f_ln);
}

/* --python-depth 8 over two CPython processes, one recursing 1500 deep and one 5
 * frames deep (pyshapes.py `chunks` and `shares`): no stack has more than 8 Python
 * frames; every cut stack starts with "[python: truncated]" and keeps the 8
 * innermost frames (the recursion, in order, without <module>), the shallow stacks are whole and
 * unmarked, and the summary's "truncated" counts exactly the marked samples. Minimum: 200 samples
 * of each process. */
static void test_python_depth(void **state)
{
	char out[128], err[128], p1[16], p2[16], *text;
	struct py_tally t = { .depth = 8 };
	struct summary s;
	struct folded *f;
	pid_t deep, shallow, agent;

	(void)state;
	need_python();
	path_in_tmp(out, sizeof(out), "pydepth.folded");
	path_in_tmp(err, sizeof(err), "pydepth.err");
	deep = start_python("chunks", "60", "/dev/null");
	shallow = start_python("shares", "60", "/dev/null");
	snprintf(p1, sizeof(p1), "%d", (int)deep);
	snprintf(p2, sizeof(p2), "%d", (int)shallow);
	const char *args[] = { "agent", "--pid",       p1,    "--pid",
			       p2,	"--frequency", "999", "--python-depth",
			       "8",	"--duration",  "3",   "--output",
			       out,	NULL };
	agent = smolder_spawn("/dev/null", err, args);
	text = child_exited_cleanly(agent, err, 60000);
	/* chunks runs 60 s of CPU: it is stopped, not done */
	test_kill(deep, SIGKILL);
	test_wait(deep, 20000);
	stop_workload(shallow);

	parse_summary(text, &s);
	f = read_folded_file(out);
	folded__foreach(f, py_cb, &t);
	folded__free(f);
	print_message("deep (cut) %llu, shallow %llu, marked %llu, summary truncated %llu, most "
		      "Python frames %zu, rule breaks %llu\n",
		      (unsigned long long)t.deep, (unsigned long long)t.shallow,
		      (unsigned long long)t.marked, s.py_truncated, t.max_python,
		      (unsigned long long)t.bad);
	assert_true(t.deep >= 200 && t.shallow >= 200);
	assert_true(t.max_python <= 8);
	assert_int_equal(t.bad, 0);
	assert_true(s.has_python);
	assert_int_equal(t.marked, s.py_truncated);
	free(text);
}

/* Per stack of a folded file: the user part (comm and kernel frames removed). */
struct user_parts {
	struct folded *parts;
	uint64_t without_user; /* samples with no user frame at all */
};

static int user_cb(void *ctx, const char *stack, uint64_t count)
{
	struct user_parts *u = ctx;
	char *copy = strdup(stack), *fr[512], part[16384] = "";
	size_t n, i, len = 0;

	assert_non_null(copy);
	n = split_frames(copy, fr, 512);
	for (i = 1; i < n; i++) {
		if (is_kernel_frame(fr[i]))
			continue;
		len += (size_t)snprintf(part + len, sizeof(part) - len, "%s%s", len ? ";" : "",
					fr[i]);
		assert_true(len < sizeof(part));
	}
	if (len)
		assert_int_equal(folded__add(u->parts, part, count), 0);
	else
		u->without_user += count;
	free(copy);
	return 0;
}

static void run_fanout_agent(const char *pid, const char *max_stacks, const char *name,
			     struct summary *s, struct user_parts *u)
{
	char out[128], err[128], *text;
	const char *args[16] = { "agent",    "--pid", pid,	    "--frequency", "4999",
				 "--window", "4",     "--duration", "4",	   "--output" };
	struct folded *f;
	pid_t agent;
	int n = 10;

	snprintf(out, sizeof(out), "%s/%s.folded", tmpdir, name);
	snprintf(err, sizeof(err), "%s/%s.err", tmpdir, name);
	args[n++] = out;
	if (max_stacks) {
		args[n++] = "--max-stacks";
		args[n++] = max_stacks;
	}
	args[n] = NULL;
	agent = smolder_spawn("/dev/null", err, args);
	text = child_exited_cleanly(agent, err, 60000);
	parse_summary(text, s);
	free(text);
	f = read_folded_file(out);
	assert_int_equal(folded__total(f), s->recorded);
	assert_int_equal(folded__new(&u->parts), 0);
	folded__foreach(f, user_cb, u);
	folded__free(f);
	print_message("%s: %llu samples, %llu recorded, %zu distinct user stacks, %llu samples "
		      "without one; stack map full %llu, counts map full %llu\n",
		      name, s->samples, s->recorded, folded__size(u->parts),
		      (unsigned long long)u->without_user, s->stack_full, s->counts_full);
}

/* --max-stacks 1024 under a workload of 4096 distinct stacks (fanout.c): the stacks
 * that do not fit are counted as "stack map full" and their samples are kept
 * without them, so "samples" still equals "recorded" plus "counts map full" and the
 * output's total equals "recorded". The default size on the same workload loses
 * nothing and sees more than 1024 stacks. Minimum: 2048 samples in each run. */
static void test_max_stacks(void **state)
{
	char pid[16], truth_path[128], *truth;
	struct user_parts def = { 0 }, small = { 0 };
	struct summary s_def, s_small;
	pid_t work;

	(void)state;
	need_root();
	path_in_tmp(truth_path, sizeof(truth_path), "fanout.truth");
	work = start_workload(fanout_bin, "12", truth_path);
	snprintf(pid, sizeof(pid), "%d", (int)work);
	run_fanout_agent(pid, NULL, "stacks-default", &s_def, &def);
	run_fanout_agent(pid, "1024", "stacks-1024", &s_small, &small);
	stop_workload(work);
	truth = test_read_file(truth_path);
	assert_non_null(strstr(truth, "paths 4096\n")); /* the workload walked every path */
	free(truth);

	assert_true(s_def.samples >= 2048 && s_small.samples >= 2048);
	/* default: room for every stack */
	assert_int_equal(s_def.stack_full, 0);
	assert_int_equal(s_def.counts_full, 0);
	assert_true(folded__size(def.parts) > 1024);
	assert_int_equal(def.without_user, 0);
	assert_int_equal(s_def.samples, s_def.recorded);
	/* 1024 entries: losses counted, the samples themselves kept */
	assert_true(s_small.stack_full > 0);
	assert_true(folded__size(small.parts) <= 1024);
	assert_int_equal(s_small.samples, s_small.recorded + s_small.counts_full);
	/* A sample that lost its user stack is in the output without one; the other
	 * losses (kernel stacks) are at most one per sample that was in the kernel. */
	assert_true(small.without_user > 0);
	/* the minimum before the ratio: 2048 samples over 4096 paths need ~1600
	 * stacks, so hundreds of samples at least find the 1024-entry map full
	 * (17245 of 18429 in a 12 s run) */
	assert_true(s_small.stack_full >= 100);
	assert_true(small.without_user <= s_small.stack_full);
	assert_true(small.without_user >= s_small.stack_full / 2);
	folded__free(def.parts);
	folded__free(small.parts);
}

/* --bpf-stats: the summary reports the sampling program's runs and cost, per run
 * and per sample taken (the total over the samples it counted). The
 * program runs on every CPU's cpu-clock tick, sampled process or not, but an idle
 * CPU's timer sleeps (tickless idle): so the runs lie between one busy CPU's
 * worth (the workload's, frequency x duration) and every CPU's (the machine's
 * CPU count, not the agent's), and are never fewer than the samples. The mean
 * cost must be that of a small BPF program and the total must agree with runs x
 * mean. Minimum: 70 % of one busy CPU's runs. */
static void test_bpf_stats(void **state)
{
	char out[128], err[128], pid[16], *text;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	double one_cpu, all_cpus;
	struct summary s;
	pid_t work, agent;

	(void)state;
	need_root();
	path_in_tmp(out, sizeof(out), "bpfstats.folded");
	path_in_tmp(err, sizeof(err), "bpfstats.err");
	work = start_workload(shapes_bin, "1", "/dev/null");
	snprintf(pid, sizeof(pid), "%d", (int)work);
	const char *args[] = { "agent",	   "--pid",	 pid, "--frequency",
			       "499",	   "--duration", "3", "--bpf-stats",
			       "--output", out,		 NULL };
	agent = smolder_spawn("/dev/null", err, args);
	text = child_exited_cleanly(agent, err, 60000);
	stop_workload(work);

	parse_summary(text, &s);
	one_cpu = 499.0 * 3.0;
	all_cpus = (double)ncpus * one_cpu;
	print_message("bpf: %llu runs (between %.0f and %.0f), %.0f ns mean, %.4f s total; %llu "
		      "samples of the workload\n",
		      s.bpf_runs, one_cpu, all_cpus, s.bpf_mean_ns, s.bpf_total_s, s.samples);
	assert_true(s.has_bpf);
	assert_int_equal(s.cpus, ncpus);
	assert_true((double)s.bpf_runs >= 0.7 * one_cpu);
	assert_true((double)s.bpf_runs <= 1.1 * all_cpus);
	assert_true(s.bpf_runs >= s.samples); /* --pid: other processes' ticks count too */
	assert_true(s.samples > 300);
	assert_true(s.bpf_mean_ns >= 20.0 && s.bpf_mean_ns <= 100000.0);
	assert_true(fabs(s.bpf_total_s - (double)s.bpf_runs * s.bpf_mean_ns / 1e9) <=
		    0.0006 + 0.01 * s.bpf_total_s);
	/* per sample taken: the total over the samples, at least the mean per run */
	assert_true(s.bpf_per_sample_ns >= s.bpf_mean_ns * 0.99);
	assert_true(fabs(s.bpf_total_s - (double)s.samples * s.bpf_per_sample_ns / 1e9) <=
		    0.0006 + 0.01 * s.bpf_total_s);
	free(text);
}

/* -o onto special files, as root: a character device (1:3, made with mknod in the
 * test's directory) and a FIFO with a reader get each window's stacks written in
 * place and stay what they were (the agent once renamed a file over -o, which
 * turned `-o /dev/null` into a regular file for the whole host); a FIFO without a
 * reader and a directory are refused at start with the reason, before sampling.
 * Minimum: the FIFO's reader sees samples of the workload's burn_a. */
static void test_output_special_files(void **state)
{
	char dev[128], fifo[128], err[128], pid[16], buf[65536], *text;
	const char *const refused[][2] = { { "nofifo", "is a FIFO with no reader" },
					   { "", "is a directory" } };
	struct folded *f;
	struct stat st;
	size_t used = 0;
	ssize_t n;
	pid_t work, agent;
	int fd, status;

	(void)state;
	need_root();
	path_in_tmp(dev, sizeof(dev), "null");
	path_in_tmp(fifo, sizeof(fifo), "out.fifo");
	path_in_tmp(err, sizeof(err), "special.err");
	assert_int_equal(mknod(dev, S_IFCHR | 0666, makedev(1, 3)), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(fd >= 0);
	work = start_workload(shapes_bin, "1", "/dev/null");
	snprintf(pid, sizeof(pid), "%d", (int)work);

	for (int i = 0; i < 2; i++) {
		const char *args[] = { "agent",	     "--pid", pid,  "--window",	    "1",
				       "--duration", "2",     "-o", i ? fifo : dev, NULL };

		agent = smolder_spawn("/dev/null", err, args);
		text = child_exited_cleanly(agent, err, 60000);
		free(text);
	}
	while ((n = read(fd, buf + used, sizeof(buf) - 1 - used)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	close(fd);
	stop_workload(work);

	assert_int_equal(lstat(dev, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_true(st.st_rdev == makedev(1, 3));
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	f = parse_folded_text(buf);
	print_message("the FIFO's reader got %zu bytes, %llu samples\n", used,
		      (unsigned long long)folded__total(f));
	assert_true(samples_with_frame(f, "burn_a") > 0);
	folded__free(f);

	/* refused before sampling, with the reason, and nothing made at the path */
	path_in_tmp(fifo, sizeof(fifo), "nofifo");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	for (size_t i = 0; i < 2; i++) {
		char path[128];

		path_in_tmp(path, sizeof(path), refused[i][0]);
		const char *args[] = { "agent", "--pid", "1", "--duration", "2", "-o", path, NULL };

		agent = smolder_spawn("/dev/null", err, args);
		status = test_wait(agent, 30000);
		text = test_read_file(err);
		assert_non_null(text);
		print_message("-o %s: %s", path, text ? text : "");
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
		assert_non_null(strstr(text, refused[i][1]));
		assert_null(strstr(text, "smolder: sampling"));
		test_assert_no_sanitizer_report("agent", err);
		free(text);
	}
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_drain_on_sigint, teardown),
		cmocka_unit_test_teardown(test_drain_on_sigterm, teardown),
		cmocka_unit_test_teardown(test_stdout_per_window, teardown),
		cmocka_unit_test_teardown(test_python_off, teardown),
		cmocka_unit_test_teardown(test_python_depth, teardown),
		cmocka_unit_test_teardown(test_lines, teardown),
		cmocka_unit_test_teardown(test_max_stacks, teardown),
		cmocka_unit_test_teardown(test_bpf_stats, teardown),
		cmocka_unit_test_teardown(test_output_special_files, teardown),
	};

	if (getenv("SMOLDER_TEST_FILTER")) /* e.g. "test_python_*": run only those */
		cmocka_set_test_filter(getenv("SMOLDER_TEST_FILTER"));
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* End-to-end tests of off-CPU profiles (`smolder agent --off-cpu on`) on the real
 * kernel: the sanitized agent profiles workloads that measure their own blocked
 * time (tests/workloads/offcpu.c, and Python scripts on every CPython of pyenv) and
 * ships to a real collector; the tests read the collector's type=offcpu flame
 * graphs (values in nanoseconds) and compare them with the workloads' truth.
 *
 * Needs root (BPF); skipped with a reason otherwise.
 */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "agenttest.h"
#include "collectortest.h"

#define QUERY_WAIT_MS 20000

static char tmpdir[64];
static char workload[256];
static struct coll coll;

static int setup(void **state)
{
	if (!agent_group_setup(tmpdir, sizeof(tmpdir)))
		return 0;
	test_build_path(workload, sizeof(workload), "workloads/offcpu");
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

/* Starts an agent on pid shipping to the group's collector with label run=<run>
 * and the given extra options (NULL-terminated, at most 16); returns once it
 * samples. Its stderr is <tmpdir>/<run>.err, its folded output (CPU samples)
 * <tmpdir>/<run>.folded. */
static pid_t start_offcpu_agent(const char *run, pid_t pid, ...)
{
	char err[128], out[128], url[64], pidbuf[16], label[64];
	const char *extra[17];
	va_list ap;
	size_t n = 0;
	pid_t agent;

	snprintf(err, sizeof(err), "%s/%s.err", tmpdir, run);
	snprintf(out, sizeof(out), "%s/%s.folded", tmpdir, run);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", coll.port);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(label, sizeof(label), "run=%s", run);
	va_start(ap, pid);
	while (n < 16 && (extra[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	extra[n] = NULL;
	agent = start_agent(out, err, "--collector", url, "--spool-dir", tmpdir, "--pid", pidbuf,
			    "--window", "2", "--label", label, "--retry-base-ms", "50", "--off-cpu",
			    "on", n > 0 ? extra[0] : NULL, n > 1 ? extra[1] : NULL,
			    n > 2 ? extra[2] : NULL, n > 3 ? extra[3] : NULL,
			    n > 4 ? extra[4] : NULL, n > 5 ? extra[5] : NULL, NULL);
	assert_true(agent > 0);
	agent_wait_sampling(agent, err, 60000);
	return agent;
}

/* Stops the agent with SIGINT (its last window drained and shipped) and checks it
 * exited cleanly; returns its log. */
static char *stop_offcpu_agent(pid_t agent, const char *run)
{
	char err[128];

	snprintf(err, sizeof(err), "%s/%s.err", tmpdir, run);
	test_kill(agent, SIGINT);
	agent_exited_cleanly(agent, err, 60000);
	return test_read_file(err);
}

/* The off-CPU nanoseconds the agent's summary says it recorded. */
static uint64_t agent_recorded_ns(const char *log)
{
	const char *p = strstr(log, "smolder: off-cpu: ");

	assert_non_null(p);
	return (uint64_t)(strtod(p + strlen("smolder: off-cpu: "), NULL) * 1e9);
}

/* The collector's off-CPU flame graph of run=<run> (folded, nanoseconds, Python
 * frames with lines), once it holds at least min_total, e.g. 99.9 % of what the
 * agent recorded (bounded wait: the agent shipped before it exited, so this is at
 * once unless the collector is slow). */
static struct folded *offcpu_folded(const char *run, uint64_t min_total)
{
	uint64_t deadline = test_now_ms() + QUERY_WAIT_MS;
	char url[256], path[128];
	struct folded *f;
	struct reply r;
	FILE *out;

	/* to: a minute ahead, so the window that began this second is in */
	snprintf(url, sizeof(url),
		 "/api/v1/flamegraph?type=offcpu&format=folded&granularity=line&from=-1h&to=%lld"
		 "&where=run=%s",
		 (long long)time(NULL) + 60, run);
	snprintf(path, sizeof(path), "%s/%s.offcpu.folded", tmpdir, run);
	for (;;) {
		r = http_get(coll.port, url, NULL);
		assert_int_equal(r.status, 200);
		out = fopen(path, "w");
		assert_non_null(out);
		assert_int_equal(fwrite(r.body, 1, r.len, out), r.len);
		assert_int_equal(fclose(out), 0);
		free(r.body);
		f = load_folded(path);
		if (folded__total(f) >= min_total)
			return f;
		if (test_now_ms() > deadline) {
			print_message("  off-CPU total %llu ns, wanted %llu\n",
				      (unsigned long long)folded__total(f),
				      (unsigned long long)min_total);
			folded__free(f);
			fail_msg("the collector has too little off-CPU time for run=%s", run);
		}
		folded__free(f);
		usleep(200000); /* polling interval of a bounded wait */
	}
}

struct chain_check {
	const char *fn, *caller; /* "...;caller;fn;" */
	uint64_t with_caller, with_kernel, all;
};

/* Counts the value of stacks through fn: with its caller right above it, and with a
 * kernel frame ("..._[k]") below it. */
static int chain_cb(void *ctx, const char *stack, uint64_t count)
{
	struct chain_check *c = ctx;
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), ";%s;", c->fn);
	p = strstr(stack, pat);
	if (!p)
		return 0;
	c->all += count;
	snprintf(pat, sizeof(pat), ";%s;%s;", c->caller, c->fn);
	if (strstr(stack, pat))
		c->with_caller += count;
	if (strstr(p, "_[k]"))
		c->with_kernel += count;
	return 0;
}

/* Three threads blocked in nanosleep, a pipe read and a contended mutex: the shares
 * of their blocked time in the off-CPU profile match the workload's own
 * measurements within 5 points, and each blocking function's stacks hold its
 * caller above it and kernel frames below it. */
static void test_known_shape(void **state)
{
	const char *fn[] = { "wait_sleep", "wait_pipe", "wait_mutex" };
	const char *caller[] = { "run_sleep", "run_pipe", "run_mutex" };
	char *argv[] = { workload, "shapes", NULL }, truth_path[128];
	uint64_t seen[3], total = 0, ttotal;
	pid_t work, agent;
	struct folded *f;
	char *truth, *log;
	int i;

	NEED_ROOT(*state);
	snprintf(truth_path, sizeof(truth_path), "%s/shape.truth", tmpdir);
	work = test_spawn(argv, truth_path, NULL);
	agent = start_offcpu_agent("shape", work, NULL);
	usleep(6000000); /* the span profiled: the workload's shape is steady */
	log = stop_offcpu_agent(agent, "shape");
	test_kill(work, SIGTERM);
	assert_int_equal(test_wait(work, 10000), 0);
	truth = test_read_file(truth_path);
	f = offcpu_folded("shape", agent_recorded_ns(log) / 1000 * 999);

	for (i = 0; i < 3; i++)
		total += seen[i] = count_frames(f, "offcpu", fn[i]);
	ttotal = truth_value(truth, "total");
	/* 6 s of three threads blocked 100, 60 and 33 % of the time: ~11 s */
	print_message("  off-CPU time of the three functions %.2f s\n", (double)total / 1e9);
	assert_true(total > 5000000000ull);
	for (i = 0; i < 3; i++) {
		struct chain_check c = { fn[i], caller[i], 0, 0, 0 };
		double share = 100.0 * (double)seen[i] / (double)total;
		double real = 100.0 * (double)truth_value(truth, fn[i]) / (double)ttotal;

		print_message("  %s: agent %.1f%%, measured %.1f%%\n", fn[i], share, real);
		assert_true(share > real - 5.0 && share < real + 5.0);
		folded__foreach(f, chain_cb, &c);
		print_message("  %s: %.1f%% under %s, %.1f%% with kernel frames\n", fn[i],
			      100.0 * (double)c.with_caller / (double)c.all, caller[i],
			      100.0 * (double)c.with_kernel / (double)c.all);
		/* the minimum before the ratios: the least blocked thread is off CPU
		 * a third of 6 s */
		assert_true(c.all > 1000000000ull);
		assert_true(c.with_caller >= c.all * 95 / 100);
		assert_true(c.with_kernel >= c.all * 95 / 100);
	}
	free(log);
	free(truth);
	folded__free(f);
}

/* A thread sleeps n times ms: the off-CPU time recorded under sleep_known is
 * within 5 % of what it measured, with every wait timed or one in two (values
 * scaled by 2). */
static void run_totals(const char *run, const char *n, const char *ms, const char *probability)
{
	char *argv[] = { workload, "sleeps", (char *)n, (char *)ms, NULL }, out[128];
	uint64_t slept, seen;
	pid_t work, agent;
	struct folded *f;
	char *text, *log;

	snprintf(out, sizeof(out), "%s/%s.out", tmpdir, run);
	work = test_spawn(argv, out, NULL);
	assert_true(test_wait_for_child_text(work, out, "ready", 30000));
	agent = start_offcpu_agent(run, work, "--off-cpu-probability", probability, NULL);
	test_kill(work, SIGUSR1);
	assert_int_equal(test_wait(work, 120000), 0);
	log = stop_offcpu_agent(agent, run);
	text = test_read_file(out);
	slept = truth_value(text, "slept");
	f = offcpu_folded(run, agent_recorded_ns(log) / 1000 * 999);
	seen = count_frames(f, "offcpu", "sleep_known");
	print_message("  slept %.3f s (measured), recorded %.3f s (probability %s)\n",
		      (double)slept / 1e9, (double)seen / 1e9, probability);
	assert_true((double)seen > 0.95 * (double)slept && (double)seen < 1.05 * (double)slept);
	/* nothing else of the thread: its whole life is that loop, the startup
	 * before the agent and the wait for the signal aside */
	assert_true(count_frames(f, "offcpu", "run_sleeps") == seen);
	free(log);
	free(text);
	folded__free(f);
}

/* The json answers' context (query/context.c): an off-CPU answer says its type and
 * unit and gives seconds off CPU equal to its total; a CPU answer of the same run
 * and range keeps its one period (the off-CPU batches of the same windows add no
 * period of theirs: schema/sqlite/004's windows are the CPU profile's). */
static void check_context(const char *run)
{
	char url[256];
	struct reply r;
	const char *p;
	double total, secs;

	snprintf(url, sizeof(url),
		 "/api/v1/flamegraph?type=offcpu&format=json&max_nodes=16&from=-1h&to=%lld"
		 "&where=run=%s",
		 (long long)time(NULL) + 60, run);
	r = http_get(coll.port, url, NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "{\"meta\":{\"type\":\"offcpu\",\"unit\":\"nanoseconds\""));
	assert_non_null(strstr(r.body, "\"cpu_seconds\":null"));
	p = strstr(r.body, "\"total\":");
	assert_non_null(p);
	total = strtod(p + 8, NULL);
	p = strstr(r.body, "\"offcpu_seconds\":");
	assert_non_null(p);
	secs = strtod(p + strlen("\"offcpu_seconds\":"), NULL);
	print_message("  json context: total %.0f ns, offcpu_seconds %.6f\n", total, secs);
	assert_true(total > 1e9 && secs > total / 1e9 * 0.999999 && secs < total / 1e9 * 1.000001);
	free(r.body);
	/* the CPU profile of the same run: one period, so CPU time is given */
	snprintf(url, sizeof(url), "/api/v1/flamegraph?format=json&from=-1h&to=%lld&where=run=%s",
		 (long long)time(NULL) + 60, run);
	r = http_get(coll.port, url, NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "{\"meta\":{\"type\":\"cpu\",\"unit\":\"samples\""));
	if (strstr(r.body, "no_cpu_reason"))
		fail_msg("the CPU answer lost its CPU time: %.300s", r.body);
	free(r.body);
}

static void test_totals(void **state)
{
	NEED_ROOT(*state);
	run_totals("totals", "3", "2000", "1");
	check_context("totals");
}

/* One wait in two timed, of 3000 waits of 2 ms: the scaled total's relative
 * standard error is sqrt((1 - p) / (p n)) = 1.8 %, so 5 % is 2.7 of them. */
static void test_totals_sampled(void **state)
{
	NEED_ROOT(*state);
	run_totals("sampled", "3000", "2", "0.5");
}

/* Lists the keys (thread ids) of every map named name, as bpftool prints them. */
static char *map_keys(const char *name)
{
	char cmd[256], path[128];

	snprintf(path, sizeof(path), "%s/%s.dump", tmpdir, name);
	snprintf(cmd, sizeof(cmd), "bpftool -j map dump name %s > %s 2>/dev/null", name, path);
	if (system(cmd) != 0)
		return NULL;
	return test_read_file(path);
}

/* True when bpftool's JSON dump text holds tid as a 4-byte key. */
static bool dump_has_tid(const char *dump, unsigned tid)
{
	char key[96];

	snprintf(key, sizeof(key), "\"key\":[\"0x%02x\",\"0x%02x\",\"0x%02x\",\"0x%02x\"]",
		 tid & 0xff, (tid >> 8) & 0xff, (tid >> 16) & 0xff, tid >> 24);
	return strstr(dump, key) != NULL;
}

/* A context-switch storm (16 ping-pong pairs, every wait recorded) into off-CPU
 * maps of 16 keys: the waits that found no room are counted as lost, the agent
 * stays well, and when the storm is killed mid-flight (threads blocked in read)
 * none of its threads is left in the maps that time waits. */
static void test_storm(void **state)
{
	char *argv[] = { workload, "storm", "60", "16", NULL }, task[64], *log, *p, *dump;
	unsigned tids[64], ntids = 0, i;
	unsigned long long lost = 0;
	pid_t work, agent;
	struct dirent *de;
	DIR *d;

	NEED_ROOT(*state);
	work = test_spawn(argv, "/dev/null", NULL);
	agent = start_offcpu_agent("storm", work, "--off-cpu-min-us", "1", "--off-cpu-max-keys",
				   "16", NULL);
	usleep(3000000); /* the storm: ~10^5 switches a second */
	snprintf(task, sizeof(task), "/proc/%d/task", (int)work);
	d = opendir(task);
	assert_non_null(d);
	while ((de = readdir(d)) && ntids < 64)
		if (de->d_name[0] != '.')
			tids[ntids++] = (unsigned)atoi(de->d_name);
	closedir(d);
	assert_int_equal(ntids, 33);
	test_kill(work, SIGKILL);
	test_wait(work, 10000);
	/* the exit tracepoint ran in each thread before it was reaped */
	dump = map_keys("offcpu_start");
	if (!dump) {
		print_message("  (no bpftool: the maps are not inspected)\n");
	} else {
		for (i = 0; i < ntids; i++)
			assert_false(dump_has_tid(dump, tids[i]));
		free(dump);
		dump = map_keys("offcpu_pending");
		assert_non_null(dump);
		for (i = 0; i < ntids; i++)
			assert_false(dump_has_tid(dump, tids[i]));
		free(dump);
	}
	log = stop_offcpu_agent(agent, "storm");
	p = strstr(log, "smolder: off-cpu: ");
	assert_non_null(p);
	p = strstr(p, "waits dropped (map full) ");
	assert_non_null(p);
	lost = strtoull(p + strlen("waits dropped (map full) "), NULL, 10);
	print_message("  waits lost to full maps: %llu\n", lost);
	assert_true(lost > 0);
	free(log);
}

/* Python threads blocked in time.sleep, Lock.acquire (a lock another thread holds
 * 3 ms of every 4) and socket recv (a server thread sends a byte every 5 ms). The
 * lines marked "# SLEEP", "# ACQUIRE" and "# RECV" are the calls. */
static const char py_script[] =
	"import socket\n"
	"import sys\n"
	"import threading\n"
	"import time\n"
	"\n"
	"\n"
	"def sleeper():\n"
	"    while True:\n"
	"        time.sleep(0.005)  # SLEEP\n"
	"\n"
	"\n"
	"def holder(lock):\n"
	"    while True:\n"
	"        with lock:\n"
	"            time.sleep(0.003)\n"
	"        time.sleep(0.001)\n"
	"\n"
	"\n"
	"def locker(lock):\n"
	"    while True:\n"
	"        lock.acquire()  # ACQUIRE\n"
	"        lock.release()\n"
	"        time.sleep(0.0005)\n"
	"\n"
	"\n"
	"def server(listener):\n"
	"    conn, _ = listener.accept()\n"
	"    while True:\n"
	"        time.sleep(0.005)\n"
	"        conn.sendall(b'x')\n"
	"\n"
	"\n"
	"def receiver(port):\n"
	"    conn = socket.create_connection(('127.0.0.1', port))\n"
	"    while True:\n"
	"        conn.recv(1)  # RECV\n"
	"\n"
	"\n"
	"def main():\n"
	"    lock = threading.Lock()\n"
	"    listener = socket.socket()\n"
	"    listener.bind(('127.0.0.1', 0))\n"
	"    listener.listen(1)\n"
	"    port = listener.getsockname()[1]\n"
	"    for target, args in ((sleeper, ()), (holder, (lock,)),\n"
	"                         (locker, (lock,)), (server, (listener,)),\n"
	"                         (receiver, (port,))):\n"
	"        threading.Thread(target=target, args=args, daemon=True).start()\n"
	"    time.sleep(0.5)\n"
	"    print('ready', flush=True)\n"
	"    time.sleep(3600)\n"
	"\n"
	"\n"
	"main()\n";

/* The line of the script holding marker. */
static int py_line(const char *marker)
{
	const char *end = strstr(py_script, marker), *p;
	int line = 1;

	assert_non_null(end);
	for (p = py_script; p < end; p++)
		line += *p == '\n';
	return line;
}

struct py_check {
	const char *fn;	   /* "sleeper (" */
	const char *exact; /* "sleeper (<script>:<line>)" */
	uint64_t all, at_line, with_kernel;
};

static int py_cb(void *ctx, const char *stack, uint64_t count)
{
	struct py_check *c = ctx;
	const char *p = strstr(stack, c->fn);

	if (!p || (p != stack && p[-1] != ';'))
		return 0;
	c->all += count;
	if (has_frame(stack, c->exact))
		c->at_line += count;
	if (strstr(p, "_[k]"))
		c->with_kernel += count;
	return 0;
}

/* One CPython (pyenv's 3.9 to 3.13, "debian": /usr/bin/python3): each blocking
 * call's off-CPU time is under its Python function at the call's line, with kernel
 * frames below it. */
static void run_python(void **state, const char *version)
{
	static const char *const fns[] = { "sleeper", "locker", "receiver" };
	static const char *const marks[] = { "# SLEEP", "# ACQUIRE", "# RECV" };
	char python[PATH_MAX], script[128], out[128], run[32], fn[64], exact[256];
	char *argv[] = { python, script, NULL }, *log;
	pid_t py, agent;
	struct folded *f;
	FILE *w;
	int i;

	NEED_ROOT(*state);
	if (!strcmp(version, "debian"))
		snprintf(python, sizeof(python), "/usr/bin/python3");
	if (strcmp(version, "debian") ? !test_pyenv_python(version, python, sizeof(python))
				      : access(python, X_OK) != 0) {
		test_skip("CPython %s: not installed on this machine", version);
	}
	snprintf(run, sizeof(run), "py%s", version);
	snprintf(script, sizeof(script), "%s/offcpu_%s.py", tmpdir, version);
	snprintf(out, sizeof(out), "%s/%s.out", tmpdir, run);
	w = fopen(script, "w");
	assert_non_null(w);
	assert_int_equal(fputs(py_script, w) >= 0, 1);
	assert_int_equal(fclose(w), 0);
	py = test_spawn(argv, out, NULL);
	/* threads being created have no thread state yet: start once all run */
	assert_true(test_wait_for_child_text(py, out, "ready", 30000));
	agent = start_offcpu_agent(run, py, NULL);
	usleep(5000000); /* the span profiled */
	log = stop_offcpu_agent(agent, run);
	test_kill(py, SIGKILL);
	test_wait(py, 10000);
	f = offcpu_folded(run, agent_recorded_ns(log) / 1000 * 999);
	print_message("  CPython %s (%s)\n", version, python);
	for (i = 0; i < 3; i++) {
		struct py_check c = { fn, exact, 0, 0, 0 };

		snprintf(fn, sizeof(fn), "%s (", fns[i]);
		snprintf(exact, sizeof(exact), "%s (%s:%d)", fns[i], script, py_line(marks[i]));
		folded__foreach(f, py_cb, &c);
		print_message(
			"  %s: %.2f s off CPU, %.1f%% at line %d, %.1f%% with kernel frames\n",
			fns[i], (double)c.all / 1e9,
			c.all ? 100.0 * (double)c.at_line / (double)c.all : 0.0, py_line(marks[i]),
			c.all ? 100.0 * (double)c.with_kernel / (double)c.all : 0.0);
		/* 5 s of a thread blocked most of the time in that call */
		assert_true(c.all > 2000000000ull);
		assert_true(c.at_line >= c.all * 90 / 100);
		assert_true(c.with_kernel >= c.all * 90 / 100);
	}
	free(log);
	folded__free(f);
}

static void test_python_3_9(void **state)
{
	run_python(state, "3.9");
}

static void test_python_3_10(void **state)
{
	run_python(state, "3.10");
}

static void test_python_3_11(void **state)
{
	run_python(state, "3.11");
}

static void test_python_3_12(void **state)
{
	run_python(state, "3.12");
}

static void test_python_3_13(void **state)
{
	run_python(state, "3.13");
}

static void test_python_debian(void **state)
{
	run_python(state, "debian");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_shape),    cmocka_unit_test(test_totals),
		cmocka_unit_test(test_totals_sampled), cmocka_unit_test(test_storm),
		cmocka_unit_test(test_python_3_9),     cmocka_unit_test(test_python_3_10),
		cmocka_unit_test(test_python_3_11),    cmocka_unit_test(test_python_3_12),
		cmocka_unit_test(test_python_3_13),    cmocka_unit_test(test_python_debian),
	};

	(void)post_batch; /* collectortest.h's, for other tests */
	return cmocka_run_group_tests(tests, setup, teardown);
}

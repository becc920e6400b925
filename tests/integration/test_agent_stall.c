/* An agent stalled while a collector watches it, first its main thread alone
 * (ptrace), then the whole process (SIGSTOP, SIGCONT): the collector's
 * /healthz reports each stall while it lasts and is ok again after; with the
 * main thread stopped the windows still close on time (the drain thread), and
 * the window the agent drains on resuming from SIGSTOP, which holds the whole
 * stop's samples, is stored with its real time, so no step of the timeline
 * shows more than the host's cores.
 *
 * The stop lasts STALL_WINDOWS_STOPPED windows of 1 s: a drain that holds 6
 * windows' time, as a 60 s stop does of the default 10 s windows (the window
 * length only scales both), in a 1 s timeline. The collector reports a stall
 * after STALL_WINDOWS_TEST windows, so it is seen halfway through the stop.
 *
 * `smolder up` (its agent on its main thread, stopped alone) reports the stall
 * on its own /healthz.
 *
 * Needs root (the agent loads BPF); skipped with a reason otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/ptrace.h>
#include <sys/wait.h>

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

/* A run: the collector watching agents of 1 s windows, a workload with a thread
 * per CPU, and the agent sampling it and shipping to the collector. */
struct run {
	struct coll c;
	pid_t agent, burn;
	long nproc;
	long long from; /* unix seconds before the agent started */
	char agent_err[160];
};

static void run_start(struct run *r, bool metrics)
{
	const char *extra[] = { "--agent-window", "1", "--stall-windows", "3", NULL };
	char url[64], spool[128], burn_bin[256], threads[16], pid[16];
	char *burn_argv[] = { NULL, threads, NULL }, *body;
	long status;

	need_root();
	_Static_assert(STALL_WINDOWS_TEST < STALL_WINDOWS_STOPPED,
		       "the stall is seen while it lasts");
	r->nproc = sysconf(_SC_NPROCESSORS_ONLN);
	if (coll_start(&r->c, "127.0.0.1:0", extra)) {
		test_print_log("collector", r->c.err);
		fail_msg("the collector did not start");
	}
	/* two threads a CPU: a larger share of a host others keep busy too */
	snprintf(threads, sizeof(threads), "%d", (int)(2 * r->nproc < 16 ? 2 * r->nproc : 16));
	burn_argv[0] = test_build_path(burn_bin, sizeof(burn_bin), "workloads/shapes");
	r->burn = test_spawn(burn_argv, "/dev/null", NULL);
	assert_true(r->burn > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", r->c.port);
	snprintf(spool, sizeof(spool), "%s/spool", r->c.dir);
	snprintf(r->agent_err, sizeof(r->agent_err), "%s/agent.err", r->c.dir);
	r->from = (long long)time(NULL);
	/* with metrics: its /metrics on a port of the kernel's choosing */
	/* the workload alone: its threads are at most the host's cores, and the
	 * agent's main thread, naming one process's stacks, keeps up with 1 s
	 * windows on a busy host (the whole host's new processes it does not) */
	snprintf(pid, sizeof(pid), "%d", (int)r->burn);
	r->agent = start_agent("/dev/null", r->agent_err, "--window", "1", "--frequency", "99",
			       "--pid", pid, "--collector", url, "--spool-dir", spool,
			       metrics ? "--metrics" : NULL, "0", NULL);
	agent_wait_sampling(r->agent, r->agent_err, 60000);
	/* two windows stored: the agent ships, and /healthz is ok */
	metric_wait_at_least(r->c.port, "smolder_batches_ingested_total", 2, 30000);
	body = health_until(r->c.port, 200, 10000, &status);
	if (status != 200)
		fail_msg("/healthz before the stall: %ld %s", status, body);
	free(body);
	/* the pid is our child, running, and the agent (test_kill checks the first two) */
	assert_true(is_agent(r->agent));
}

/* /healthz says 503 "... sent nothing for ..." before until_ms (the stall's
 * end), then, once resume() ended it, 200 again. */
static void stall_reported(unsigned port, pid_t agent, uint64_t until_ms, void (*resume)(pid_t))
{
	long status;
	char *body = health_until(port, 503, (unsigned)(until_ms - test_now_ms()), &status);

	print_message("  /healthz during the stall: %ld %s", status, body);
	if (status != 503 || !strstr(body, "sent nothing for"))
		fail_msg("/healthz did not report the stalled agent: %ld %s", status, body);
	assert_true(test_now_ms() < until_ms); /* seen while it lasted */
	free(body);
	while (test_now_ms() < until_ms) /* the stall's length: a duration, not a wait */
		usleep(20000);
	resume(agent);
	body = health_until(port, 200, 10000, &status);
	if (status != 200)
		fail_msg("/healthz after the agent resumed: %ld %s", status, body);
	free(body);
}

/* What the 1 s series from the run's start holds. */
struct seen {
	unsigned long long total, in, most; /* samples; in [lo, hi]; most in a step */
	unsigned long long most_in;	    /* most in a step of [lo, hi] */
	long long most_t;		    /* that step */
	int points, steps_in;		    /* steps; those in [lo, hi] with samples */
};

static struct seen read_series(struct run *r, long long lo, long long hi)
{
	struct seen s = { 0 };
	unsigned long long v;
	long long t;
	char path[160], *body, *p;
	int used;

	snprintf(path, sizeof(path), "/api/v1/series?format=json&step=1&from=%lld&to=%lld", r->from,
		 (long long)time(NULL) + 1);
	body = http_get(r->c.port, path, NULL).body;
	assert_non_null(body);
	if (!strstr(body, "\"step\":1,"))
		fail_msg("the series is not of 1 s steps: %.300s", body);
	p = strstr(body, "\"points\":[");
	assert_non_null(p);
	for (p += strlen("\"points\":["); *p == '['; s.points++) {
		assert_int_equal(sscanf(p, "[%lld,%llu]%n", &t, &v, &used), 2);
		p += used + (p[used] == ',');
		s.total += v;
		if (t >= lo && t <= hi) {
			s.in += v;
			s.steps_in += v > 0;
			if (v > s.most_in)
				s.most_in = v;
		}
		if (v > s.most)
			s.most = v, s.most_t = t;
	}
	free(body);
	return s;
}

/* Polls the series (bounded) until want_steps steps of [lo, hi] have samples
 * (every window of the stall stored), then asserts that no step holds more than
 * the host's cores (with CORES_SLACK). */
static struct seen check_series(struct run *r, long long lo, long long hi, int want_steps)
{
	uint64_t deadline = test_now_ms() + 30000;
	struct seen s;

	while ((s = read_series(r, lo, hi)).steps_in < want_steps && test_now_ms() < deadline)
		usleep(200000); /* polling interval of a bounded wait */
	print_message("  %d steps, %llu samples, %llu in the stop's %lld s (%d steps with "
		      "samples); most in a step: %llu at %lld (%.2f cores of %ld)\n",
		      s.points, s.total, s.in, hi - lo + 1, s.steps_in, s.most, s.most_t,
		      (double)s.most / FREQUENCY, r->nproc);
	if ((double)s.most / FREQUENCY > (double)r->nproc * CORES_SLACK)
		fail_msg("a 1 s step at %lld holds %llu samples: %.2f cores on a %ld-core host",
			 s.most_t, s.most, (double)s.most / FREQUENCY, r->nproc);
	return s;
}

static void run_stop(struct run *r)
{
	test_kill(r->agent, SIGTERM);
	agent_exited_cleanly(r->agent, r->agent_err, 30000);
	test_kill(r->burn, SIGTERM);
	test_wait(r->burn, 10000);
	coll_stop(&r->c);
}

static void sigcont(pid_t pid)
{
	test_kill(pid, SIGCONT);
}

/* Stops one thread of pid (ptrace: the others run on), or resumes it. */
static void thread_stop(pid_t tid)
{
	int st;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) || ptrace(PTRACE_INTERRUPT, tid, NULL, NULL))
		fail_msg("ptrace %d: %s", (int)tid, strerror(errno));
	if (waitpid(tid, &st, __WALL) != tid || !WIFSTOPPED(st))
		fail_msg("thread %d did not stop (wait status %#x)", (int)tid, st);
}

static void thread_resume(pid_t tid)
{
	if (ptrace(PTRACE_DETACH, tid, NULL, NULL))
		fail_msg("ptrace detach %d: %s", (int)tid, strerror(errno));
}

/* One agent, stalled twice for STALL_WINDOWS_STOPPED windows; each time
 * /healthz reports the stall while it lasts and is ok after.
 *
 * 1. Only its main thread stopped (ptrace), as a blocked open() of a process's
 *    file or a slow symbolization stops it: the windows still close on time.
 *    None is late (shipped as pieces); those the queue held
 *    (PENDING_WINDOWS_MAX) are shipped once it runs, and the ones past them
 *    are dropped and counted in the agent's /metrics.
 * 2. The whole agent stopped (SIGSTOP): the drain on resuming holds the whole
 *    stop and is stored spread over its seconds: no 1 s step of the timeline
 *    holds more than the host's cores, nor half the stop's samples. Minimum:
 *    10 samples a second of the stop, and every second of it but one with
 *    samples. */
static void test_stalls(void **state)
{
	long long stop_at, cont_at, dropped;
	char *text, *p;
	struct seen seen;
	unsigned mport;
	struct run r;

	(void)state;
	run_start(&r, true);
	mport = agent_metrics_port(r.agent, r.agent_err, 30000);

	print_message("  the main thread stopped for %d s\n", STALL_WINDOWS_STOPPED);
	thread_stop(r.agent); /* the main thread's id is the process's */
	stall_reported(r.c.port, r.agent, test_now_ms() + STALL_WINDOWS_STOPPED * 1000,
		       thread_resume);
	dropped = metric_wait_at_least(mport, "smolder_agent_windows_dropped_total", 1, 30000);
	/* at least the stop's windows past those held (more when the main thread,
	 * on a busy host, was behind already, or falls behind 1 s windows again as
	 * it reads new processes' files) */
	print_message("  windows dropped: %lld\n", dropped);
	/* on time: no drain waited for the main thread (a drain late by a window
	 * or more would be shipped as 3 pieces or more; the drain thread itself may
	 * run a little late on a busy host) */
	text = test_read_file(r.agent_err);
	for (p = text; p && (p = strstr(p, "was shipped as ")); p++)
		if (strtol(p + strlen("was shipped as "), NULL, 10) > 2) {
			test_print_log("agent", r.agent_err);
			fail_msg("a window closed late while only the main thread was stopped");
		}
	free(text);

	print_message("  the agent stopped (SIGSTOP) for %d s\n", STALL_WINDOWS_STOPPED);
	stop_at = (long long)time(NULL);
	test_kill(r.agent, SIGSTOP);
	stall_reported(r.c.port, r.agent, test_now_ms() + STALL_WINDOWS_STOPPED * 1000, sigcont);
	cont_at = (long long)time(NULL);
	/* the stop's window stored: every second of the stop and of the resumed
	 * windows but one (its edge) with samples, as its pieces fill them (as one
	 * window it fills one step only) */
	seen = check_series(&r, stop_at, cont_at, (int)(cont_at - stop_at));
	/* Spread, whatever the host's load left the workload: no second of the
	 * stop holds half its samples (as one window, one second holds them all).
	 * Minimum: 10 samples a second of the stop. */
	assert_true(seen.in >= 10ull * STALL_WINDOWS_STOPPED);
	assert_true(seen.steps_in >= STALL_WINDOWS_STOPPED - 1);
	if (seen.most_in * 2 > seen.in)
		fail_msg("one second of the stop holds %llu of its %llu samples", seen.most_in,
			 seen.in);
	assert_true(test_wait_for_text(r.agent_err, "(the drain came late) was shipped as", 1));
	run_stop(&r);
}

/* `smolder up` whose agent (its main thread; the collector runs threads of its
 * own) stops for STALL_WINDOWS_STOPPED windows: up's own /healthz says 503,
 * naming the agent, while it lasts, and 200 after; up then stops cleanly. */
static void test_up_stall(void **state)
{
	char dir[64], db[128], spool[128], err[160], bin[256], burn_bin[256], pid[16], *text, *p;
	char *burn_argv[] = { NULL, "1", NULL };
	unsigned port = 0;
	long status;
	pid_t up, burn;
	int st;

	(void)state;
	need_root();
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	coll_register_dir(dir);
	snprintf(db, sizeof(db), "%s/up.db", dir);
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	snprintf(err, sizeof(err), "%s/up.err", dir);
	burn_argv[0] = test_build_path(burn_bin, sizeof(burn_bin), "workloads/shapes");
	burn = test_spawn(burn_argv, "/dev/null", NULL);
	assert_true(burn > 0);
	snprintf(pid, sizeof(pid), "%d", (int)burn);
	char *argv[] = { test_build_path(bin, sizeof(bin), "asan/smolder"),
			 "up",
			 "--db",
			 db,
			 "--listen",
			 "127.0.0.1:0",
			 "--spool-dir",
			 spool,
			 "--pid",
			 pid,
			 "--window",
			 "1",
			 "--stall-windows",
			 "3",
			 NULL };
	up = test_spawn(argv, "/dev/null", err);
	assert_true(test_wait_for_child_text(up, err, "(port ", 30000));
	text = test_read_file(err);
	p = text ? strstr(text, "(port ") : NULL;
	if (p)
		port = (unsigned)strtoul(p + 6, NULL, 10);
	free(text);
	assert_true(port > 0 && port < 65536);
	/* its agent ships: ok (it is expected from the start, and would be
	 * reported as "the agent" until its first batch) */
	text = health_until(port, 200, 30000, &status);
	if (status != 200)
		fail_msg("up's /healthz before the stall: %ld %s", status, text);
	free(text);
	metric_wait_at_least(port, "smolder_batches_ingested_total", 2, 30000);

	thread_stop(up); /* the agent's thread: up's main thread */
	stall_reported(port, up, test_now_ms() + STALL_WINDOWS_STOPPED * 1000, thread_resume);
	test_kill(up, SIGTERM);
	st = test_wait(up, 30000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		test_print_log("up", err);
		fail_msg("smolder up exited with wait status %#x", st);
	}
	test_assert_no_sanitizer_report("up", err);
	test_kill(burn, SIGTERM);
	test_wait(burn, 10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_stalls, teardown),
		cmocka_unit_test_teardown(test_up_stall, teardown),
	};

	if (getenv("SMOLDER_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SMOLDER_TEST_FILTER"));
	coll_env();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

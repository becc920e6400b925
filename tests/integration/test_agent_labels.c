/* End-to-end tests of per-process labels (agent/labels.h) on the real kernel: the
 * test makes real cgroups of every path shape the agent names (systemd services,
 * a template instance, a user's unit of the same name as a system one, docker and
 * kubepods under both cgroup drivers) under the cgroup2 mount, and a service under
 * the v1 name=systemd mount where the host has one (a hybrid host: the v2 path
 * then says nothing), moves a CPU-burning workload into each (its pid written to
 * cgroup.procs), runs the sanitized agent on them against a real collector, and
 * asks the collector, for each label, which processes the selection holds: that
 * workload's, and no other's, with at least MIN_SAMPLES samples. Python workloads
 * get py_main; with --thread-labels a Python process with more named threads than
 * the cap gets LABELS_THREADS_MAX names and thread=[other], whose samples are
 * those the agent's summary says it folded. The cgroups are removed in the
 * group's teardown, after the workloads are killed, also when a test failed.
 *
 * Needs root (BPF, cgroup creation); skipped with a reason otherwise.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/labels.h"
#include "agenttest.h"
#include "childtest.h"
#include "collectortest.h"

#define QUERY_WAIT_MS 20000
#define MIN_SAMPLES   30 /* per selection: 1 s of CPU at 99 Hz is ~99 */
#define CPU_SECONDS   1	 /* each workload burns at least this much while sampled */
#define MAX_CGROUPS   64

#define ID1  "1111111111111111111111111111111111111111111111111111111111111111"
#define ID2  "2222222222222222222222222222222222222222222222222222222222222222"
#define ID3  "33333333333333333333333333333333333333333333333333333333333333a3"
#define ID4  "4444444444444444444444444444444444444444444444444444444444444b44"
#define UID1 "0a1b2c3d-0000-4111-8222-000000000001"
#define USC1 "0a1b2c3d_0000_4111_8222_000000000001"
#define UID2 "0a1b2c3d-0000-4111-8222-000000000002"

static char tmpdir[64];
static struct coll coll;
static char v2_mount[PATH_MAX], v1_mount[PATH_MAX]; /* v1_mount "": no name=systemd */
static char test_root[64];			    /* our directory under each mount */
static char made[MAX_CGROUPS][PATH_MAX];	    /* directories made, in order */
static size_t nmade;

/* The mount points of cgroup2 and of the v1 name=systemd hierarchy, from
 * /proc/self/mountinfo ("ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - TYPE SRC
 * SUPEROPTS"). */
static void find_mounts(void)
{
	char line[4096], point[PATH_MAX], *dash;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char type[64] = "", src[256] = "", opts[1024] = "";

		dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
		    sscanf(dash + 3, "%63s %255s %1023s", type, src, opts) < 2)
			continue;
		if (strcmp(type, "cgroup2") == 0 && !v2_mount[0])
			snprintf(v2_mount, sizeof(v2_mount), "%s", point);
		else if (strcmp(type, "cgroup") == 0 && strstr(opts, "name=systemd") &&
			 !v1_mount[0])
			snprintf(v1_mount, sizeof(v1_mount), "%s", point);
	}
	fclose(f);
}

/* Makes mount/test_root/rel, each missing directory on the way recorded for the
 * teardown. */
static void make_cgroup(const char *mount, const char *rel, char *out, size_t len)
{
	char path[PATH_MAX], *p;

	snprintf(path, sizeof(path), "%s/%s/%s", mount, test_root, rel);
	for (p = path + strlen(mount) + 1;; p++) {
		if (*p && *p != '/')
			continue;
		char save = *p;

		*p = '\0';
		if (mkdir(path, 0755) == 0) {
			assert_true(nmade < MAX_CGROUPS);
			snprintf(made[nmade++], sizeof(made[0]), "%s", path);
		} else if (errno != EEXIST) {
			fail_msg("cannot make the cgroup %s: %s", path, strerror(errno));
		}
		*p = save;
		if (!save)
			break;
	}
	snprintf(out, len, "%s", path);
}

/* Moves pid into the cgroup at dir. */
static void move_to(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 16], text[16];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(text, sizeof(text), "%d\n", (int)pid);
	if (write_file(path, text, strlen(text)))
		fail_msg("cannot move %d into %s: %s", (int)pid, dir, strerror(errno));
}

/* Removes what make_cgroup made, deepest first; a cgroup whose last process just
 * exited may be busy a moment longer, so each is retried for up to 5 s. */
static void remove_cgroups(void)
{
	uint64_t deadline = test_now_ms() + 5000;

	while (nmade) {
		const char *dir = made[nmade - 1];

		if (rmdir(dir) == 0 || errno == ENOENT) {
			nmade--;
			continue;
		}
		if (errno != EBUSY || test_now_ms() > deadline) {
			fprintf(stderr, "test_agent_labels: cannot remove the cgroup %s: %s\n", dir,
				strerror(errno));
			nmade--;
			continue;
		}
		usleep(10000);
	}
}

static int setup(void **state)
{
	if (!agent_group_setup(tmpdir, sizeof(tmpdir)))
		return 0;
	find_mounts();
	if (!v2_mount[0]) {
		fprintf(stderr, "skipping: no cgroup2 mount in /proc/self/mountinfo\n");
		return 0;
	}
	snprintf(test_root, sizeof(test_root), "smolder-test-labels-%d", (int)getpid());
	coll_env();
	coll_start_for_group(&coll);
	*state = &coll;
	return 0;
}

static int teardown(void **state)
{
	if (*state)
		coll_stop(&coll);
	agent_group_teardown(tmpdir[0] ? tmpdir : NULL); /* kills the workloads first */
	remove_cgroups();
	coll_teardown(state);
	return 0;
}

/* A busy loop in a shell: its own process, comm "sh". */
static pid_t start_burner(void)
{
	char *argv[] = { "/bin/sh", "-c", "while :; do :; done", NULL };

	return test_spawn(argv, NULL, NULL);
}

/* Starts the agent on the given pids (at most 16) with extra options (NULL
 * terminated), returns once it samples. Its stderr is <tmpdir>/<run>.err. */
static pid_t start_labels_agent(const char *run, const pid_t *pids, size_t npids, ...)
{
	char err[128], out[128], url[64], pidbuf[16][16];
	const char *args[64] = { 0 };
	const char *extra;
	size_t n = 0, i;
	va_list ap;
	pid_t agent;

	snprintf(out, sizeof(out), "%s/%s.folded", tmpdir, run);
	snprintf(err, sizeof(err), "%s/%s.err", tmpdir, run);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", coll.port);
	assert_true(npids <= 16);
	for (i = 0; i < npids; i++) {
		snprintf(pidbuf[i], sizeof(pidbuf[i]), "%d", (int)pids[i]);
		args[n++] = "--pid";
		args[n++] = pidbuf[i];
	}
	va_start(ap, npids);
	while ((extra = va_arg(ap, const char *)) && n < 60)
		args[n++] = extra;
	va_end(ap);
	args[n] = NULL;
	agent = start_agent(out, err, "--collector", url, "--spool-dir", tmpdir, "--window", "2",
			    args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7],
			    args[8], args[9], args[10], args[11], args[12], args[13], args[14],
			    args[15], args[16], args[17], args[18], args[19], args[20], args[21],
			    args[22], args[23], args[24], args[25], args[26], args[27], args[28],
			    args[29], args[30], args[31], args[32], args[33], args[34], args[35],
			    NULL);
	agent_wait_sampling(agent, err, 60000);
	return agent;
}

/* Stops the agent with SIGINT (last window shipped) and returns its stderr. */
static char *stop_labels_agent(pid_t agent, const char *run)
{
	char err[128];

	snprintf(err, sizeof(err), "%s/%s.err", tmpdir, run);
	test_kill(agent, SIGINT);
	agent_exited_cleanly(agent, err, 60000);
	return test_read_file(err);
}

/* GET path (its "%s" filled with where), the body; fails on a status not 200. */
static char *query(const char *fmt, const char *where)
{
	char path[1024];
	struct reply r;

	snprintf(path, sizeof(path), fmt, where);
	r = http_get(coll.port, path, NULL);
	if (r.status != 200)
		fail_msg("GET %s: status %ld: %s", path, r.status, r.body ? r.body : "");
	return r.body;
}

/* The samples the collector holds for where (the flame graph's total). */
static uint64_t samples_where(const char *where)
{
	char *body = query("/api/v1/flamegraph?format=folded&from=-1h&to=now&%s", where);
	struct folded *f = parse_folded_text(body);
	uint64_t total = folded__total(f);

	folded__free(f);
	free(body);
	return total;
}

/* Asserts that the selection `key=value` holds pid's samples, at least
 * MIN_SAMPLES, and no other process's; waits (bounded) for the collector to
 * have them all. */
static void assert_selects(const char *key, const char *value, pid_t pid)
{
	char where[512], want[32], *body = NULL;
	uint64_t deadline = test_now_ms() + QUERY_WAIT_MS, n = 0;

	snprintf(where, sizeof(where), "where=%s=%s", key, value);
	snprintf(want, sizeof(want), "[\"%d\"]", (int)pid);
	for (;;) {
		struct reply r;
		char path[1024];

		snprintf(path, sizeof(path), "/api/v1/labels/pid/values?from=-1h&to=now&%s", where);
		r = http_get(coll.port, path, NULL);
		free(body);
		body = r.body;
		if (body)
			body[strcspn(body, "\n")] = '\0';
		if (r.status == 200 && strcmp(body, want) == 0 &&
		    (n = samples_where(where)) >= MIN_SAMPLES)
			break;
		if (test_now_ms() > deadline)
			fail_msg("%s=%s: processes %s (status %ld), %llu samples; want %s and at "
				 "least %d samples",
				 key, value, body ? body : "", r.status, (unsigned long long)n,
				 want, MIN_SAMPLES);
		usleep(100000);
	}
	print_message("  %s=%s: pid %d alone, %llu samples\n", key, value, (int)pid,
		      (unsigned long long)n);
	free(body);
}

struct workload {
	const char *v2;		   /* cgroup under the cgroup2 mount's test root */
	const char *v1;		   /* under name=systemd's, or NULL */
	const char *key, *value;   /* the selection that must hold it alone */
	const char *key2, *value2; /* a second one, or NULL */
	pid_t pid;
};

static void test_cgroup_labels(void **state)
{
	struct workload w[] = {
		{ "system.slice/smt-api.service", NULL, "service", "smt-api" },
		/* a user's unit of the same name: never service=smt-api */
		{ "user.slice/user-4242.slice/user@4242.service/app.slice/smt-api.service", NULL,
		  "service", "user@4242/smt-api" },
		{ "system.slice/system-smt.slice/smt-getty@tty9.service", NULL, "service",
		  "smt-getty@tty9" },
		{ "system.slice/docker-" ID1 ".scope", NULL, "container_id", ID1 },
		{ "docker/" ID2, NULL, "container_id", ID2 },
		{ "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" USC1
		  ".slice/cri-containerd-" ID3 ".scope",
		  NULL, "pod_uid", UID1, "container_id", ID3 },
		{ "kubepods/besteffort/pod" UID2 "/" ID4, NULL, "pod_uid", UID2, "container_id",
		  ID4 },
		/* hybrid: the v2 path names nothing, name=systemd does */
		{ "smt-plain", "system.slice/smt-v1.service", "service", "smt-v1" },
	};
	size_t nw = sizeof(w) / sizeof(w[0]), i;
	pid_t pids[16], agent;
	long long cpu[16];
	char dir[PATH_MAX], *log, *body;

	NEED_ROOT(*state);
	if (!v1_mount[0]) {
		print_message("  no name=systemd (v1) mount: its fallback is not tried here\n");
		nw--;
	}
	for (i = 0; i < nw; i++) {
		w[i].pid = pids[i] = start_burner();
		make_cgroup(v2_mount, w[i].v2, dir, sizeof(dir));
		move_to(dir, w[i].pid);
		if (w[i].v1) {
			make_cgroup(v1_mount, w[i].v1, dir, sizeof(dir));
			move_to(dir, w[i].pid);
		}
	}
	agent = start_labels_agent("cgroups", pids, nw, NULL);
	for (i = 0; i < nw; i++) /* CPU time while sampled: from now */
		cpu[i] = test_proc_cpu_ticks(w[i].pid);
	for (i = 0; i < nw; i++)
		wait_cpu_seconds(w[i].pid, cpu[i], CPU_SECONDS);
	log = stop_labels_agent(agent, "cgroups");
	for (i = 0; i < nw; i++) {
		assert_selects(w[i].key, w[i].value, w[i].pid);
		if (w[i].key2)
			assert_selects(w[i].key2, w[i].value2, w[i].pid);
	}
	if (!strstr(log, "smolder: labels: "))
		fail_msg("no labels line in the agent's summary:\n%s", log);
	free(log);
	/* no thread label without --thread-labels, and none for the plain cgroup */
	snprintf(dir, sizeof(dir), "where=pid=%d", (int)w[0].pid);
	body = query("/api/v1/labels?from=-1h&to=now&%s", dir);
	if (strstr(body, "\"thread\"") || strstr(body, "\"py_main\""))
		fail_msg("labels of a shell: %s", body);
	free(body);
	for (i = 0; i < nw; i++)
		test_kill(w[i].pid, SIGKILL);
}

/* Writes a Python program to tmpdir/name. */
static void write_program(const char *name, const char *text, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", tmpdir, name);
	assert_int_equal(write_file(path, text, strlen(text)), 0);
}

static const char burn_py[] = "import time\n"
			      "t = time.time()\n"
			      "while time.time() - t < 600:\n"
			      "    sum(range(1000))\n";

static void test_python_main(void **state)
{
	char script[PATH_MAX], module[PATH_MAX], dir[PATH_MAX];
	char *a1[] = { "/usr/bin/python3", "-X", "dev", "-u", script, "--port", "80", NULL };
	char *a2[] = { "/usr/bin/python3", "-uB", "-W", "ignore", "-m", "smt_mod", NULL };
	pid_t pids[2], agent;
	long long cpu[2];
	int i;

	NEED_ROOT(*state);
	write_program("smt_app.py", burn_py, script, sizeof(script));
	write_program("smt_mod.py", burn_py, module, sizeof(module));
	setenv("PYTHONPATH", tmpdir, 1);
	pids[0] = test_spawn(a1, NULL, NULL);
	pids[1] = test_spawn(a2, NULL, NULL);
	unsetenv("PYTHONPATH");
	/* a service too: both labels on one process */
	make_cgroup(v2_mount, "system.slice/smt-py.service", dir, sizeof(dir));
	move_to(dir, pids[0]);
	agent = start_labels_agent("python", pids, 2, "--python", "off", NULL);
	for (i = 0; i < 2; i++)
		cpu[i] = test_proc_cpu_ticks(pids[i]);
	for (i = 0; i < 2; i++)
		wait_cpu_seconds(pids[i], cpu[i], CPU_SECONDS);
	free(stop_labels_agent(agent, "python"));
	assert_selects("py_main", "smt_app.py", pids[0]);
	assert_selects("service", "smt-py", pids[0]);
	assert_selects("py_main", "smt_mod", pids[1]);
	for (i = 0; i < 2; i++)
		test_kill(pids[i], SIGKILL);
}

/* 40 named threads (prctl PR_SET_NAME) taking turns at the GIL, all named before
 * any burns (a start() among busy threads waits for the GIL), then "named" on
 * stdout. */
static const char threads_py[] =
	"import ctypes, sys, threading, time\n"
	"libc = ctypes.CDLL(None)\n"
	"go = threading.Event()\n"
	"ready = threading.Semaphore(0)\n"
	"def work(i):\n"
	"    libc.prctl(15, ('lt-w%02d' % i).encode(), 0, 0, 0)\n"
	"    ready.release()\n"
	"    go.wait()\n"
	"    t = time.time()\n"
	"    while time.time() - t < 600:\n"
	"        sum(range(1000))\n"
	"ts = [threading.Thread(target=work, args=(i,)) for i in range(40)]\n"
	"for t in ts: t.start()\n"
	"for t in ts: ready.acquire()\n"
	"print('named', flush=True)\n"
	"go.set()\n"
	"for t in ts: t.join()\n";

/* The number after needle in text, or fails. */
static uint64_t number_after(const char *text, const char *needle)
{
	const char *p = strstr(text, needle);

	if (!p)
		fail_msg("'%s' not in:\n%s", needle, text);
	return strtoull(p + strlen(needle), NULL, 10);
}

static void test_thread_labels(void **state)
{
	char script[PATH_MAX], out[PATH_MAX], where[64], other[96], *log, *body, *p;
	char *argv[] = { "/usr/bin/python3", script, NULL };
	uint64_t folded, held, deadline;
	long long cpu;
	size_t names = 0;
	pid_t pid, agent;

	NEED_ROOT(*state);
	write_program("smt_threads.py", threads_py, script, sizeof(script));
	snprintf(out, sizeof(out), "%s/threads.out", tmpdir);
	pid = test_spawn(argv, out, NULL);
	if (!test_wait_for_child_text(pid, out, "named", 60000))
		fail_msg("the threads were not named in a minute");
	agent = start_labels_agent("threads", &pid, 1, "--thread-labels", "--python", "off", NULL);
	cpu = test_proc_cpu_ticks(pid);
	wait_cpu_seconds(pid, cpu, 5); /* 40 threads: ~12 samples each */
	log = stop_labels_agent(agent, "threads");
	folded = number_after(log, "thread names past 32 per process: ");
	free(log);
	snprintf(where, sizeof(where), "where=pid=%d", (int)pid);
	/* every thread sampled, so exactly the cap's names and [other] */
	deadline = test_now_ms() + QUERY_WAIT_MS;
	for (;;) {
		body = query("/api/v1/labels/thread/values?from=-1h&to=now&%s", where);
		for (names = 0, p = body; (p = strchr(p, '"')); p++)
			names++;
		names /= 2; /* each name in quotes */
		snprintf(other, sizeof(other), "where=pid=%d&where=thread=%%5Bother%%5D", (int)pid);
		held = strstr(body, "\"[other]\"") ? samples_where(other) : 0;
		if ((names == LABELS_THREADS_MAX + 1 && held == folded) || test_now_ms() > deadline)
			break;
		free(body);
		usleep(100000);
	}
	print_message("  %zu thread names, %llu samples folded (agent) and %llu held "
		      "(collector)\n",
		      names, (unsigned long long)folded, (unsigned long long)held);
	if (names != LABELS_THREADS_MAX + 1 || !strstr(body, "\"[other]\"") ||
	    !strstr(body, "\"lt-w"))
		fail_msg("thread names of pid %d: %s", (int)pid, body);
	free(body);
	assert_true(folded >= MIN_SAMPLES / 10); /* at least 8 threads' worth, ~7 each */
	assert_int_equal(held, folded);
	test_kill(pid, SIGKILL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cgroup_labels),
		cmocka_unit_test(test_python_main),
		cmocka_unit_test(test_thread_labels),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

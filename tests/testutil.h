/* Helpers shared by the cmocka tests: build paths, child processes, temporary
 * directories, bounded waits on real conditions, and folded-file parsing.
 *
 * Tests find the build directory through $SMOLDER_BUILD (set by tests/run.sh),
 * defaulting to "build". Everything here is static so each test binary is one
 * translation unit; include <cmocka.h> first (failures here are cmocka failures).
 * SMOLDER_TEST_FILTER=PATTERN runs only the matching tests of a binary.
 *
 * Child processes: test_spawn() starts one or fails the test, and registers it.
 * Every registered child is killed (with its process group) and reaped by
 * test_teardown_children() after each test, whatever the test's outcome (cmocka
 * longjmps out of a failed test), and by an atexit handler; each child also gets
 * SIGKILL from the kernel when the test binary dies (PR_SET_PDEATHSIG), e.g. at
 * tests/run.sh's timeout. test_kill() is the only way a test signals a process:
 * it refuses anything but a registered, unreaped child (pid -1 is every process).
 */
#ifndef SMOLDER_TESTUTIL_H
#define SMOLDER_TESTUTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* SMOLDER_TEST_FILTER=PATTERN runs only the tests whose names match (cmocka's
 * wildcards), e.g. while breaking code on purpose to see a test fail. */
__attribute__((constructor)) static void test_filter_from_env(void)
{
	const char *f = getenv("SMOLDER_TEST_FILTER");

	if (f && *f)
		cmocka_set_test_filter(f);
}

static inline const char *test_build_dir(void)
{
	const char *b = getenv("SMOLDER_BUILD");
	return b && *b ? b : "build";
}

/* Writes "<build>/<rel>" into buf and returns buf. */
static inline char *test_build_path(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", test_build_dir(), rel);
	return buf;
}

static inline uint64_t test_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* This process's CPU time (every thread, user and system) in ms: a bound on work
 * done that a loaded machine does not stretch, as it stretches test_now_ms(). */
static inline uint64_t test_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Creates a fresh directory under /tmp; the path is written to buf. */
/* This process's peak RSS (VmHWM of /proc/self/status) in KiB. */
static inline uint64_t test_peak_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kib = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* Resets the peak RSS to the current RSS (Linux 4.0+); false if unsupported, and
 * then test_peak_rss_kib() measures from the process's start. */
static inline bool test_reset_peak_rss(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, "5", 1) == 1;
	close(fd);
	return ok;
}

/* The prefix of every directory test_mkdtemp() makes: test_rm_rf() removes
 * nothing else. */
#define TEST_TMP_PREFIX "/tmp/smolder-test-"

static inline char *test_mkdtemp(char *buf, size_t len)
{
	snprintf(buf, len, TEST_TMP_PREFIX "XXXXXX");
	return mkdtemp(buf);
}

/* Removes dir and everything in it: a directory test_mkdtemp() made or a path
 * inside one. Any other path (another prefix, "..", a quote, too long) fails
 * the test and removes nothing. */
static inline void test_rm_rf(const char *dir)
{
	const size_t n = strlen(TEST_TMP_PREFIX);
	char cmd[512];

	if (!dir || strncmp(dir, TEST_TMP_PREFIX, n) != 0 || strlen(dir) < n + 6 ||
	    strcspn(dir + n, "/") < 6 || (dir[n + 6] && dir[n + 6] != '/') || strstr(dir, "/..") ||
	    strchr(dir, '\'') || strlen(dir) + 16 > sizeof(cmd))
		fail_msg("test_rm_rf: refusing %s: not under a test's own " TEST_TMP_PREFIX
			 "XXXXXX directory",
			 dir ? dir : "(null)");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* ---- child processes --------------------------------------------------- */

#define TEST_MAX_CHILDREN 64

struct test_child {
	pid_t pid;
	bool keep;     /* lives for the whole group (test_child_keep), not one test */
	char name[64]; /* basename of argv[0], for messages */
};

struct test_children {
	struct test_child c[TEST_MAX_CHILDREN];
	size_t n;
	bool atexit_set;
};

static inline struct test_children *test_children(void)
{
	static struct test_children tc;

	return &tc;
}

/* True when pid is a child of this process that has not been reaped yet (running
 * or a zombie): only then is the pid, and the process group of that id, still ours. */
static inline bool test_is_unreaped_child(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return pid > 0 && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static inline struct test_child *test_child_find(pid_t pid)
{
	struct test_children *tc = test_children();
	size_t i;

	for (i = 0; i < tc->n; i++)
		if (tc->c[i].pid == pid)
			return &tc->c[i];
	return NULL;
}

static inline void test_child_forget(pid_t pid)
{
	struct test_children *tc = test_children();
	struct test_child *c = test_child_find(pid);

	if (c)
		*c = tc->c[--tc->n];
}

/* Marks a child (a server a group setup started) to survive the per-test cleanup;
 * the group teardown stops it, and test_kill_children() or exit kill it. */
static inline void test_child_keep(pid_t pid)
{
	struct test_child *c = test_child_find(pid);

	if (!c)
		fail_msg("test_child_keep: pid %d is not a child this test started", (int)pid);
	c->keep = true;
}

/* SIGKILL to the child and its process group (what it forked), then reaps it.
 * Nothing is signalled unless the pid is still an unreaped child of ours. */
static inline void test_child_kill_reap(pid_t pid)
{
	uint64_t deadline;
	int status;

	if (pid > 1 && test_is_unreaped_child(pid)) {
		kill(-pid, SIGKILL); /* test_spawn made it a group leader */
		kill(pid, SIGKILL);
		for (deadline = test_now_ms() + 10000; test_now_ms() < deadline;) {
			pid_t r = waitpid(pid, &status, WNOHANG);

			if (r == pid || (r < 0 && errno != EINTR))
				break;
			usleep(10000); /* polling interval of a bounded wait */
		}
	}
	test_child_forget(pid);
}

/* Kills and reaps every registered child, kept ones included (group teardown,
 * exit). */
static inline void test_kill_children(void)
{
	struct test_children *tc = test_children();

	while (tc->n)
		test_child_kill_reap(tc->c[tc->n - 1].pid);
}

/* A cmocka teardown for every test that starts processes: kills and reaps what the
 * test left running (all of it when the test failed midway), kept children aside. */
static inline int test_teardown_children(void **state)
{
	struct test_children *tc = test_children();
	size_t i = tc->n;

	(void)state;
	while (i-- > 0) {
		if (tc->c[i].keep)
			continue;
		fprintf(stderr, "teardown: killing %s (pid %d), still running after the test\n",
			tc->c[i].name, (int)tc->c[i].pid);
		test_child_kill_reap(tc->c[i].pid);
	}
	return 0;
}

/* Starts argv[0] in a process group of its own, stdin from in_fd (< 0: /dev/null;
 * the caller keeps in_fd), stdout to out_path and stderr to err_path (NULL:
 * inherit), and registers it (see the top of this file). Returns its pid (> 0);
 * any failure (missing binary, unwritable output file, too many children) fails
 * the test with the reason. */
static inline pid_t test_spawn_stdin(char *const argv[], int in_fd, const char *out_path,
				     const char *err_path)
{
	static const char *const steps[] = {
		"setpgid", "prctl", "open stdin", "open the stdout file", "open the stderr file",
		"execv"
	};
	struct test_children *tc = test_children();
	int fds[2], report[2] = { 0, 0 };
	pid_t parent = getpid(), pid;
	ssize_t n;

	if (tc->n == TEST_MAX_CHILDREN)
		fail_msg("cannot start %s: %d children already registered", argv[0],
			 TEST_MAX_CHILDREN);
	if (pipe2(fds, O_CLOEXEC))
		fail_msg("cannot start %s: pipe2: %s", argv[0], strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		fail_msg("cannot start %s: fork: %s", argv[0], strerror(errno));
	}
	if (pid == 0) { /* async-signal-safe calls only until execv */
		int fd, step = 0;

		if (setpgid(0, 0))
			goto child_fail;
		step = 1;
		if (prctl(PR_SET_PDEATHSIG, SIGKILL))
			goto child_fail;
		if (getppid() != parent) /* the test died before prctl: nobody to report to */
			_exit(127);
		step = 2;
		if (in_fd >= 0 ? dup2(in_fd, 0) < 0
			       : (fd = open("/dev/null", O_RDONLY)) < 0 || dup2(fd, 0) < 0)
			goto child_fail;
		step = 3;
		if (out_path && ((fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
				 dup2(fd, 1) < 0))
			goto child_fail;
		step = 4;
		if (err_path && ((fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0 ||
				 dup2(fd, 2) < 0))
			goto child_fail;
		step = 5;
		execv(argv[0], argv);
	child_fail:
		report[0] = step;
		report[1] = errno;
		n = write(fds[1], report, sizeof(report)); /* the parent fails the test */
		_exit(127);
	}
	close(fds[1]);
	do
		n = read(fds[0], report, sizeof(report));
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	if (n != 0) { /* the child wrote why it did not reach the program */
		bool full = n == (ssize_t)sizeof(report) && report[0] >= 0 && report[0] < 6;

		waitpid(pid, NULL, 0);
		fail_msg("cannot start %s: %s: %s", argv[0], full ? steps[report[0]] : "child",
			 full ? strerror(report[1]) : "no report");
	}
	tc->c[tc->n].pid = pid;
	tc->c[tc->n].keep = false;
	snprintf(tc->c[tc->n].name, sizeof(tc->c[tc->n].name), "%s",
		 strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0]);
	tc->n++;
	if (!tc->atexit_set)
		tc->atexit_set = atexit(test_kill_children) == 0;
	return pid;
}

/* test_spawn_stdin() with stdin from /dev/null. */
static inline pid_t test_spawn(char *const argv[], const char *out_path, const char *err_path)
{
	return test_spawn_stdin(argv, -1, out_path, err_path);
}

/* Sends sig to pid. Fails the test instead when pid is not a child test_spawn()
 * started that is still unreaped: pid <= 0 would reach a process group or every
 * process, and a reaped pid may belong to someone else by now. */
static inline void test_kill(pid_t pid, int sig)
{
	if (pid <= 0)
		fail_msg("refusing to send signal %d to pid %d", sig, (int)pid);
	if (!test_child_find(pid) || !test_is_unreaped_child(pid))
		fail_msg("refusing to send signal %d to pid %d: not a running child of this test",
			 sig, (int)pid);
	if (kill(pid, sig))
		fail_msg("kill(%d, %d): %s", (int)pid, sig, strerror(errno));
}

/* Waits for pid (> 0, else the test fails) to exit for up to timeout_ms; returns its
 * wait status, -1 when waitpid failed (errno says why: ECHILD, no such child), or
 * -2 when pid is still running at the deadline (it is left running). */
static inline int test_wait_keep(pid_t pid, unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	int status;

	if (pid <= 0) /* waitpid(-1) or (0) would reap any child */
		fail_msg("refusing to wait for pid %d", (int)pid);
	while (test_now_ms() < deadline) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid) {
			test_child_forget(pid);
			return status;
		}
		if (r < 0 && errno != EINTR) {
			int e = errno;

			test_child_forget(pid);
			errno = e;
			return -1;
		}
		usleep(10000); /* polling interval of a bounded wait, not synchronization */
	}
	return -2;
}

/* The same, but a pid still running at the deadline is killed with SIGKILL and
 * reaped, and -1 returned. */
static inline int test_wait(pid_t pid, unsigned timeout_ms)
{
	int status = test_wait_keep(pid, timeout_ms);

	if (status == -2) {
		test_child_kill_reap(pid);
		return -1;
	}
	return status;
}

/* Runs fn(arg) in a forked child (a process group of its own, registered like
 * test_spawn's, killed if the test dies) and waits up to timeout_ms: returns
 * fn's result (0 to 125), or -1 when the child did not finish in time (it is
 * killed) or died otherwise. For code under test that may block for good, such
 * as an open() that waits on a FIFO: the test then fails instead of hanging.
 * fn runs in a copy of the test's memory: it reports through its result only. */
static inline int test_call_bounded(const char *name, int (*fn)(void *), void *arg,
				    unsigned timeout_ms)
{
	struct test_children *tc = test_children();
	pid_t pid;
	int status;

	if (tc->n == TEST_MAX_CHILDREN)
		fail_msg("cannot fork %s: %d children already registered", name, TEST_MAX_CHILDREN);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fail_msg("cannot fork %s: %s", name, strerror(errno));
	if (pid == 0) {
		if (setpgid(0, 0) || prctl(PR_SET_PDEATHSIG, SIGKILL))
			_exit(126);
		_exit(fn(arg) & 0x7f);
	}
	tc->c[tc->n].pid = pid;
	tc->c[tc->n].keep = false;
	snprintf(tc->c[tc->n].name, sizeof(tc->c[tc->n].name), "%s", name);
	tc->n++;
	if (!tc->atexit_set)
		tc->atexit_set = atexit(test_kill_children) == 0;
	status = test_wait(pid, timeout_ms);
	if (status == -1 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Reads a whole file into a NUL-terminated malloc'd buffer; NULL on error. */
static inline char *test_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = (cap ? cap * 2 : 8192));
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	if (!buf)
		buf = calloc(1, 1);
	else
		buf[len] = '\0';
	return buf;
}

/* True when pid (a child of this test) has exited, without reaping it. */
static inline bool test_child_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == pid;
}

/* Polls until the file at path contains needle, for up to timeout_ms. For a file
 * that child pid writes (pid > 0), gives up as soon as the child has exited, so
 * a server that dies at startup costs no timeout. */
static inline bool test_wait_for_child_text(pid_t pid, const char *path, const char *needle,
					    unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;

	while (test_now_ms() < deadline) {
		char *text = test_read_file(path);
		bool found = text && strstr(text, needle);

		free(text);
		if (found)
			return true;
		if (pid > 0 && test_child_exited(pid))
			return false;
		usleep(20000);
	}
	return false;
}

/* test_wait_for_child_text() for a file no particular child writes. */
static inline bool test_wait_for_text(const char *path, const char *needle, unsigned timeout_ms)
{
	return test_wait_for_child_text(0, path, needle, timeout_ms);
}

/* Prints a child's log to stderr, framed, for a failure message to refer to. */
static inline void test_print_log(const char *what, const char *log_path)
{
	char *text = test_read_file(log_path);

	fprintf(stderr, "---- %s: %s ----\n%s---- end of %s ----\n", what, log_path,
		text ? text : "(unreadable)\n", log_path);
	free(text);
}

/* Fails the test when log_path (a sanitized child's stderr) holds a sanitizer
 * report: AddressSanitizer, LeakSanitizer or UndefinedBehaviorSanitizer. */
static inline void test_assert_no_sanitizer_report(const char *what, const char *log_path)
{
	static const char *const marks[] = { "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
					     "runtime error:" };
	char *text = test_read_file(log_path);
	const char *found = NULL;
	size_t i;

	if (!text)
		fail_msg("%s: cannot read its log %s", what, log_path);
	for (i = 0; i < sizeof(marks) / sizeof(marks[0]) && !found; i++)
		if (strstr(text, marks[i]))
			found = marks[i];
	free(text);
	if (found) {
		test_print_log(what, log_path);
		fail_msg("%s: \"%s\" in %s", what, found, log_path);
	}
}

/* Fails unless status (from test_wait) is how a child sent sig should end: killed
 * by it for SIGKILL, else exit status 0 (a server stops cleanly on SIGTERM/SIGINT). */
static inline void test_assert_stopped_by(const char *what, int status, int sig,
					  const char *log_path)
{
	bool ok;

	if (sig == SIGKILL)
		ok = status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
	else
		ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (ok)
		return;
	if (log_path)
		test_print_log(what, log_path);
	if (status == -1)
		fail_msg("%s: did not exit in time after signal %d", what, sig);
	else if (WIFSIGNALED(status))
		fail_msg("%s: killed by signal %d after signal %d", what, WTERMSIG(status), sig);
	else
		fail_msg("%s: exit status %d after signal %d", what, WEXITSTATUS(status), sig);
}

/* Stops a sanitized server this test started: sends sig, waits up to timeout_ms,
 * and asserts its end (test_assert_stopped_by) and a log free of sanitizer reports. */
static inline void test_stop_checked(const char *what, pid_t pid, int sig, const char *log_path,
				     unsigned timeout_ms)
{
	test_kill(pid, sig);
	test_assert_stopped_by(what, test_wait(pid, timeout_ms), sig, log_path);
	test_assert_no_sanitizer_report(what, log_path);
}

/* CPU time (utime+stime, in clock ticks) a process has used; -1 when it is gone. */
static inline long long test_proc_cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long utime, stime;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return -1;
	/* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
		   &stime) != 2)
		return -1;
	return (long long)(utime + stime);
}

/* pyenv's pythonX.Y for version "X.Y" (any patch release) into buf: the root is
 * $PYENV_ROOT, else what `pyenv root` prints, else /root/.pyenv. Returns false
 * when that interpreter is not installed (the caller skips with a reason). */
static inline bool test_pyenv_python(const char *version, char *buf, size_t len)
{
	char root[512] = "", pattern[1024];
	const char *env = getenv("PYENV_ROOT");
	bool found;
	glob_t g;
	FILE *p;

	if (env && *env) {
		snprintf(root, sizeof(root), "%s", env);
	} else if ((p = popen("pyenv root 2>/dev/null", "r"))) {
		if (!fgets(root, sizeof(root), p))
			root[0] = '\0';
		root[strcspn(root, "\n")] = '\0';
		pclose(p);
	}
	snprintf(pattern, sizeof(pattern), "%s/versions/%s.*/bin/python%s",
		 root[0] ? root : "/root/.pyenv", version, version);
	found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
	if (found)
		snprintf(buf, len, "%s", g.gl_pathv[0]);
	globfree(&g);
	return found;
}
/* Waits until pid has used at least `ticks` more CPU ticks than `from`. */
static inline bool test_wait_cpu(pid_t pid, long long from, long long ticks, unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;

	while (test_now_ms() < deadline) {
		long long now = test_proc_cpu_ticks(pid);
		if (now < 0)
			return false;
		if (now - from >= ticks)
			return true;
		usleep(10000);
	}
	return false;
}

/* Skips the running test, printing its reason in the one form tests/run.sh lists
 * (and CI's allow-list names): "skipping: REASON". The arguments are printf's,
 * without a newline. */
#define test_skip(...)                                                                             \
	do {                                                                                       \
		print_message("skipping: ");                                                       \
		print_message(__VA_ARGS__);                                                        \
		print_message("\n");                                                               \
		skip();                                                                            \
	} while (0)

static inline bool test_is_root(void)
{
	return geteuid() == 0;
}

/* The next value of a xorshift64 generator whose state is *state (never 0): a
 * repeatable pseudo-random sequence for tests that draw their own data. */
static inline uint64_t test_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* A port that was free a moment ago on 127.0.0.1 (the kernel's choice for port 0;
 * someone may take it before the caller binds it). */
static inline unsigned test_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned port = 0;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	if (!port)
		fail_msg("no free port: %s", strerror(errno));
	return port;
}

/* Runs a shell command (fmt and its arguments), its stdout and stderr kept in
 * dir/cmd.out; *status is system()'s. Returns that output (the caller frees it). */
static inline __attribute__((format(printf, 3, 4))) char *test_shell(const char *dir, int *status,
								     const char *fmt, ...)
{
	char cmd[4096], out[256];
	va_list ap;
	int n;

	snprintf(out, sizeof(out), "%s/cmd.out", dir);
	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n + strlen(out) + 8 >= sizeof(cmd))
		fail_msg("test_shell: command too long: %.80s...", cmd);
	snprintf(cmd + n, sizeof(cmd) - (size_t)n, " >'%s' 2>&1", out);
	*status = system(cmd);
	return test_read_file(out);
}

#endif

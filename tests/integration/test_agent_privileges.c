/* The agent without root: run as the user nobody holding exactly the
 * capabilities deploy/systemd/smolder-agent.service grants (CAP_BPF CAP_PERFMON
 * CAP_SYS_PTRACE CAP_DAC_READ_SEARCH CAP_SYSLOG, ambient, through setpriv), it gets
 * the same profile as an agent running as root at the same time on the same
 * processes, all of them root's: the native workload's burn_a share (shapes),
 * kernel frames named (dd in read()), and the Python workload's
 * Burner.burn_a share (pyshapes.py on Debian's python3). With any one of them
 * missing it refuses to start, naming it (agent/caps.c). Needs root (to hand the
 * capabilities out); skipped with a reason otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#define NOBODY	  "65534"
#define CAPS	  "+bpf,+perfmon,+sys_ptrace,+dac_read_search,+syslog"
#define SECONDS	  "5"
#define FREQUENCY "999" /* Hz: a few thousand samples in SECONDS on a loaded machine */
#define MIN_STACK 200	/* samples each run must have of a workload before comparing */

static char dir[64];

static int group_setup(void **state)
{
	(void)state;
	if (!test_mkdtemp(dir, sizeof(dir)))
		return -1;
	/* nobody's agent rewrites its output file here */
	return chown(dir, 65534, 65534) || chmod(dir, 0700);
}

static int group_teardown(void **state)
{
	(void)state;
	test_rm_rf(dir);
	return 0;
}

/* Starts the sanitized agent for `pids` (a NULL-terminated list of "--pid", P
 * pairs already in extra), as root or as nobody with caps (NULL: root). */
static pid_t agent(const char *caps, const char *out, const char *err, char *const *extra)
{
	char bin[256], inh[128], amb[128], bnd[160], *argv[32];
	int n = 0, k;

	if (caps) {
		snprintf(inh, sizeof(inh), "--inh-caps=-all%s%s", *caps ? "," : "", caps);
		snprintf(amb, sizeof(amb), "--ambient-caps=-all%s%s", *caps ? "," : "", caps);
		snprintf(bnd, sizeof(bnd), "--bounding-set=-all%s%s", *caps ? "," : "", caps);
		argv[n++] = "/usr/bin/setpriv";
		argv[n++] = "--reuid=" NOBODY;
		argv[n++] = "--regid=" NOBODY;
		argv[n++] = "--clear-groups";
		argv[n++] = inh;
		argv[n++] = amb;
		argv[n++] = bnd;
		argv[n++] = "--";
	}
	argv[n++] = test_build_path(bin, sizeof(bin), "asan/smolder");
	argv[n++] = "agent";
	argv[n++] = "--output";
	argv[n++] = (char *)out;
	argv[n++] = "--duration";
	argv[n++] = SECONDS;
	argv[n++] = "--frequency";
	argv[n++] = FREQUENCY;
	for (k = 0; extra[k]; k++)
		argv[n++] = extra[k];
	argv[n] = NULL;
	return test_spawn(argv, NULL, err);
}

static void wait_clean(pid_t pid, const char *err)
{
	int status = test_wait(pid, 120000);

	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		test_print_log("agent", err);
		fail_msg("agent failed (wait status %d)", status);
	}
	test_assert_no_sanitizer_report("agent", err);
}

struct tally {
	unsigned long long comm, with;	      /* samples of comm; of those, holding `frame` */
	unsigned long long kframes, kunknown; /* kernel frames; unnamed ones */
};

/* Sums a folded file's samples of stacks whose first frame is comm. */
static struct tally tally(const char *path, const char *comm, const char *frame)
{
	struct tally t = { 0 };
	char *text = test_read_file(path), *line, *save = NULL;
	size_t clen = strlen(comm);

	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *p;
		unsigned long long n;

		if (!sp || strncmp(line, comm, clen) || line[clen] != ';')
			continue;
		n = strtoull(sp + 1, NULL, 10);
		*sp = '\0';
		t.comm += n;
		if (frame && strstr(line, frame))
			t.with += n;
		for (p = strstr(line, "_[k]"); p; p = strstr(p + 4, "_[k]")) {
			const char *start = p;

			while (start > line && start[-1] != ';')
				start--;
			t.kframes += n;
			if (*start == '[' || !strncmp(start, "0x", 2))
				t.kunknown += n;
		}
	}
	free(text);
	return t;
}

static double share(struct tally t)
{
	return t.comm ? 100.0 * (double)t.with / (double)t.comm : 0.0;
}

/* The two runs' shares agree within 4 standard errors of their difference (two
 * binomial samples), or 5 points when that is less. */
static void compare(const char *what, struct tally root, struct tally nobody)
{
	double p, se, tol;

	print_message("  %s: root %.1f%% of %llu samples, nobody %.1f%% of %llu\n", what,
		      share(root), root.comm, share(nobody), nobody.comm);
	assert_true(root.comm >= MIN_STACK && nobody.comm >= MIN_STACK);
	assert_true(root.with > 0 && nobody.with > 0);
	p = (double)(root.with + nobody.with) / (double)(root.comm + nobody.comm);
	se = 100.0 * sqrt(p * (1.0 - p) * (1.0 / (double)root.comm + 1.0 / (double)nobody.comm));
	tol = 4.0 * se > 5.0 ? 4.0 * se : 5.0;
	print_message("    bound %.1f points\n", tol);
	assert_true(share(nobody) > share(root) - tol && share(nobody) < share(root) + tol);
}

static void test_same_profile_without_root(void **state)
{
	char shapes[256], script[PATH_MAX], rout[128], rerr[128], nout[128], nerr[128];
	char p1[16], p2[16], p3[16];
	char *work_argv[] = { test_build_path(shapes, sizeof(shapes), "workloads/shapes"), "1",
			      NULL };
	char *dd_argv[] = { "/bin/dd", "if=/dev/zero",	   "of=/dev/null",
			    "bs=64",   "count=1000000000", NULL };
	char *py_argv[] = { "/usr/bin/python3", script, "shares", "600", NULL };
	char *extra[] = { "--pid", p1, "--pid", p2, "--pid", p3, NULL };
	struct tally r, n;
	pid_t work, dd, py, ra, na;

	(void)state;
	if (!test_is_root() || access("/usr/bin/setpriv", X_OK)) {
		test_skip("needs root and setpriv to hand out capabilities");
	}
	/* the tests run from the source tree (tests/run.sh) */
	assert_non_null(realpath("tests/workloads/pyshapes.py", script));
	work = test_spawn(work_argv, "/dev/null", NULL);
	dd = test_spawn(dd_argv, "/dev/null", "/dev/null");
	py = test_spawn(py_argv, "/dev/null", NULL);
	snprintf(p1, sizeof(p1), "%d", (int)work);
	snprintf(p2, sizeof(p2), "%d", (int)dd);
	snprintf(p3, sizeof(p3), "%d", (int)py);
	snprintf(rout, sizeof(rout), "%s/root.folded", dir);
	snprintf(rerr, sizeof(rerr), "%s/root.err", dir);
	snprintf(nout, sizeof(nout), "%s/nobody.folded", dir);
	snprintf(nerr, sizeof(nerr), "%s/nobody.err", dir);
	/* both at once, on the same processes */
	ra = agent(NULL, rout, rerr, extra);
	na = agent(CAPS, nout, nerr, extra);
	wait_clean(ra, rerr);
	wait_clean(na, nerr);
	test_kill(work, SIGKILL);
	test_kill(dd, SIGKILL);
	test_kill(py, SIGKILL);

	r = tally(rout, "shapes", ";burn_a;");
	n = tally(nout, "shapes", ";burn_a;");
	compare("shapes, burn_a", r, n);
	r = tally(rout, "python3", ";Burner.burn_a (");
	n = tally(nout, "python3", ";Burner.burn_a (");
	compare("python3, Burner.burn_a", r, n);
	r = tally(rout, "dd", NULL);
	n = tally(nout, "dd", NULL);
	print_message("  dd: kernel frames root %llu (%llu unnamed), nobody %llu (%llu unnamed)\n",
		      r.kframes, r.kunknown, n.kframes, n.kunknown);
	assert_true(r.kframes >= MIN_STACK && n.kframes >= MIN_STACK);
	/* CAP_SYSLOG: kallsyms gives addresses, so kernel frames have names */
	assert_true(n.kunknown * 10 <= n.kframes);
	assert_true(r.kunknown * 10 <= r.kframes);
}

/* Each capability left out: the agent exits 1 at start and names it. */
static void test_each_capability_needed(void **state)
{
	static const char *const caps[] = { "bpf", "perfmon", "sys_ptrace", "dac_read_search",
					    "syslog" };
	static const char *const names[] = { "CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE",
					     "CAP_DAC_READ_SEARCH", "CAP_SYSLOG" };
	char *extra[] = { "--pid", "1", NULL };
	char set[128], out[128], err[128], *log;
	size_t i, j, len;
	int status;
	pid_t a;

	(void)state;
	if (!test_is_root() || access("/usr/bin/setpriv", X_OK)) {
		test_skip("needs root and setpriv to hand out capabilities");
	}
	for (i = 0; i < 5; i++) {
		for (j = 0, len = 0, set[0] = '\0'; j < 5; j++)
			if (j != i)
				len += (size_t)snprintf(set + len, sizeof(set) - len, "%s+%s",
							len ? "," : "", caps[j]);
		snprintf(out, sizeof(out), "%s/no-%s.folded", dir, caps[i]);
		snprintf(err, sizeof(err), "%s/no-%s.err", dir, caps[i]);
		a = agent(set, out, err, extra);
		status = test_wait(a, 60000);
		assert_true(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 1);
		log = test_read_file(err);
		assert_non_null(log);
		if (!strstr(log, names[i]) || !strstr(log, "the agent lacks")) {
			test_print_log("agent", err);
			fail_msg("no reason naming %s", names[i]);
		}
		/* only the one left out is named as lacking */
		for (j = 0; j < 5; j++)
			if (j != i) {
				char lack[64];

				snprintf(lack, sizeof(lack), "lacks %s", names[j]);
				assert_null(strstr(log, lack));
			}
		test_assert_no_sanitizer_report("agent", err);
		free(log);
	}
}

/* A thread's capability sets and no_new_privs, from /proc/PID/task/TID/status. */
struct thread_caps {
	unsigned long long inh, prm, eff, bnd, amb;
	int nnp;
};

static void read_thread_caps(const char *status_path, struct thread_caps *c)
{
	char *text = test_read_file(status_path), *p;
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "CapInh:", offsetof(struct thread_caps, inh) },
		{ "CapPrm:", offsetof(struct thread_caps, prm) },
		{ "CapEff:", offsetof(struct thread_caps, eff) },
		{ "CapBnd:", offsetof(struct thread_caps, bnd) },
		{ "CapAmb:", offsetof(struct thread_caps, amb) },
	};

	assert_non_null(text);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		p = strstr(text, keys[i].key);
		if (!p)
			fail_msg("%s: no %s", status_path, keys[i].key);
		*(unsigned long long *)((char *)c + keys[i].off) =
			strtoull(p + strlen(keys[i].key), NULL, 16);
	}
	p = strstr(text, "NoNewPrivs:");
	assert_non_null(p);
	c->nnp = atoi(p + strlen("NoNewPrivs:"));
	free(text);
}

/* As root, the agent drops to the five capabilities it needs once its BPF objects
 * are loaded, in every thread (the main loop, the unwind table builder, the
 * sender, the metrics endpoint), with its bounding and ambient sets cleared of the
 * rest and no_new_privs set, so a hostile binary that subverts the symbolizer
 * cannot use CAP_SYS_ADMIN or CAP_DAC_OVERRIDE, nor regain them by execve. With
 * --output FILE it keeps CAP_DAC_OVERRIDE as well, to write where it was asked;
 * CAP_CHECKPOINT_RESTORE it keeps for /proc/PID/map_files.
 * Reference: capability numbers from linux/capability.h. Minimum: 4 threads seen
 * (main, builder, sender, metrics), and the profile of the run still has samples. */
static void test_root_agent_drops_capabilities(void **state)
{
	const unsigned long long five = 1ull << 2 /* DAC_READ_SEARCH */ |
					1ull << 19 /* SYS_PTRACE */ | 1ull << 34 /* SYSLOG */ |
					1ull << 38 /* PERFMON */ | 1ull << 39 /* BPF */;
	const unsigned long long dac_override = 1ull << 1;
	/* kept when held, for /proc/PID/map_files (a root agent holds it) */
	const unsigned long long checkpoint_restore = 1ull << 40;

	(void)state;
	if (!test_is_root()) {
		test_skip("needs root");
	}
	for (int to_file = 0; to_file < 2; to_file++) {
		char bin[256], out[128], err[128], spool[128], task[64], status_path[336];
		unsigned long long want = five | checkpoint_restore | (to_file ? dac_override : 0);
		char *argv[] = { test_build_path(bin, sizeof(bin), "asan/smolder"),
				 "agent",
				 "--pid",
				 "1",
				 "--metrics",
				 "0",
				 "--collector",
				 "http://127.0.0.1:1",
				 "--spool-dir",
				 spool,
				 "--output",
				 to_file ? out : "-",
				 NULL };
		struct dirent *e;
		size_t threads = 0;
		pid_t a;
		DIR *d;

		snprintf(out, sizeof(out), "%s/drop-%d.folded", dir, to_file);
		snprintf(err, sizeof(err), "%s/drop-%d.err", dir, to_file);
		snprintf(spool, sizeof(spool), "%s/drop-spool-%d", dir, to_file);
		a = test_spawn(argv, to_file ? NULL : out, err);
		if (!test_wait_for_child_text(a, err, "smolder: sampling", 60000)) {
			test_print_log("agent", err);
			fail_msg("the agent did not start sampling");
		}
		snprintf(task, sizeof(task), "/proc/%d/task", (int)a);
		d = opendir(task);
		assert_non_null(d);
		while ((e = readdir(d))) {
			struct thread_caps c;

			if (e->d_name[0] == '.')
				continue;
			snprintf(status_path, sizeof(status_path), "%s/%s/status", task, e->d_name);
			read_thread_caps(status_path, &c);
			print_message(
				"  %s thread %s: eff %llx prm %llx bnd %llx amb %llx inh %llx "
				"nnp %d\n",
				to_file ? "-o FILE" : "-o -", e->d_name, c.eff, c.prm, c.bnd, c.amb,
				c.inh, c.nnp);
			assert_true(c.eff == want);
			assert_true(c.prm == want);
			assert_true(c.bnd == want);
			assert_true(c.amb == 0 && c.inh == 0);
			assert_int_equal(c.nnp, 1);
			threads++;
		}
		closedir(d);
		assert_true(threads >= 4);
		test_stop_checked("agent", a, SIGINT, err, 60000);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_each_capability_needed, test_teardown_children),
		cmocka_unit_test_teardown(test_root_agent_drops_capabilities,
					  test_teardown_children),
		cmocka_unit_test_teardown(test_same_profile_without_root, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* Tests of agent/labels: every cgroup path shape labels.h names (systemd units,
 * template instances, user units, docker, containerd, CRI-O and podman under both
 * cgroup drivers, kubepods under both, paths seen from a cgroup namespace) and
 * malformed ones that must give no label; whole /proc/PID/cgroup files (v2,
 * hybrid with the name=systemd fallback, cut short); Python command lines; and the
 * cache on live processes: this process, a child that exits before it is read,
 * and the thread-name cap on a fake /proc.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/labels.h"
#include "testutil.h"

#define ID  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "1b4c1e0a-5a3e-4c1f-9d1e-7a2b3c4d5e6f"
#define USC "1b4c1e0a_5a3e_4c1f_9d1e_7a2b3c4d5e6f"

struct shape {
	const char *path, *service, *container_id, *pod_uid;
};

static void check_path(const struct shape *s)
{
	struct proc_labels l = { 0 };
	int n = labels_parse_cgroup_path(s->path, strlen(s->path), &l);
	int want = !!*s->service + !!*s->container_id + !!*s->pod_uid;

	print_message("  %s\n", s->path);
	assert_int_equal(n, want);
	assert_string_equal(l.service, s->service);
	assert_string_equal(l.container_id, s->container_id);
	assert_string_equal(l.pod_uid, s->pod_uid);
}

static void test_path_shapes(void **state)
{
	static const struct shape shapes[] = {
		{ "/system.slice/nginx.service", "nginx", "", "" },
		{ "/system.slice/nginx.service/worker", "nginx", "", "" },
		{ "/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1", "", "" },
		{ "/system.slice/postgresql@15-main.service", "postgresql@15-main", "", "" },
		{ "/system.slice/dbus-org.freedesktop.login1.service",
		  "dbus-org.freedesktop.login1", "", "" },
		{ "/user.slice/user-1000.slice/user@1000.service/app.slice/api.service",
		  "user@1000/api", "", "" },
		{ "/user.slice/user-1000.slice/user@1000.service/init.scope", "user@1000", "", "" },
		{ "/user.slice/user-0.slice/session-3.scope", "", "", "" },
		{ "/init.scope", "", "", "" },
		{ "/", "", "", "" },
		{ "/system.slice/docker.service", "docker", "", "" },
		{ "/system.slice/docker-" ID ".scope", "", ID, "" },
		{ "/docker/" ID, "", ID, "" },
		{ "/system.slice/containerd.service/cri-containerd-" ID ".scope", "containerd", ID,
		  "" },
		{ "/containerd/" ID, "", ID, "" },
		{ "/system.slice/crio-" ID ".scope", "", ID, "" },
		{ "/machine.slice/libpod-" ID ".scope", "", ID, "" },
		{ "/machine.slice/libpod-" ID ".scope/container", "", ID, "" },
		{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" USC
		  ".slice/cri-containerd-" ID ".scope",
		  "", ID, UID },
		{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" USC
		  ".slice/crio-" ID ".scope",
		  "", ID, UID },
		{ "/kubepods.slice/kubepods-pod" USC ".slice/docker-" ID ".scope", "", ID, UID },
		{ "/kubepods.slice/kubepods-pod" USC ".slice", "", "", UID },
		{ "/kubepods/burstable/pod" UID "/" ID, "", ID, UID },
		{ "/kubepods/pod" UID "/" ID, "", ID, UID },
		{ "/kubepods/burstable/pod" UID "/crio-" ID, "", ID, UID },
		/* kind's nodes, and paths seen from inside a cgroup namespace */
		{ "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
		  "kubelet-kubepods-besteffort-pod" USC ".slice/cri-containerd-" ID ".scope",
		  "", ID, UID },
		{ "/../../kubepods-burstable-pod" USC ".slice/cri-containerd-" ID ".scope", "", ID,
		  UID },
		{ "/./nginx.service//", "nginx", "", "" },
		/* systemd inside a container: both */
		{ "/system.slice/docker-" ID ".scope/system.slice/nginx.service", "nginx", ID, "" },
		/* nested containers: the innermost */
		{ "/docker/" ID
		  "/docker/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
		  "", "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", "" },
		/* malformed: no label */
		{ "/system.slice/.service", "", "", "" },
		{ "/system.slice/ngi nx.service", "", "", "" },
		{ "/system.slice/a@b@c.service", "", "", "" },
		{ "/system.slice/nginx.service.d", "", "", "" },
		{ "/system.slice/docker-" ID "0.scope", "", "", "" },
		{ "/system.slice/docker-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789"
		  "abcdef.scope",
		  "", "", "" },
		{ "/system.slice/docker-" ID ".scopex", "", "", "" },
		{ "/system.slice/docker-" ID, "", "", "" },
		{ "/system.slice/crio-conmon-" ID ".scope", "", "", "" },
		{ "/" ID, "", "", "" }, /* a bare id without a runtime */
		{ "/other/" ID, "", "", "" },
		{ "/docker/" ID "/x/y", "", ID, "" },
		{ "/kubepods/burstable/pod1b4c1e0a-5a3e-4c1f-9d1e-7a2b3c4d5e6", "", "", "" },
		{ "/kubepods/burstable/pod1b4c1e0a_5a3e_4c1f_9d1e_7a2b3c4d5e6f", "", "", "" },
		{ "/kubepods/burstable/pod1B4C1E0A-5A3E-4C1F-9D1E-7A2B3C4D5E6F", "", "", "" },
		{ "/kubepods.slice/kubepods-pod" UID ".slice", "", "", "" },
		{ "/other.slice/other-pod" USC ".slice", "", "", "" },
		{ "/kubepods.slice/kubepods-pod1b4c1e0a_5a3e_4c1f_9d1e-7a2b3c4d5e6f.slice", "", "",
		  "" },
		{ "/kubepods/burstable/pod" UID "x/" ID, "", "", "" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		check_path(&shapes[i]);
}

static void test_path_limits(void **state)
{
	struct proc_labels l = { 0 };
	char *long_path = malloc(LABELS_CGROUP_PATH_MAX + 2), unit[LABELS_UNIT_NAME_MAX + 32];
	size_t n;

	(void)state;
	assert_non_null(long_path);
	/* a path over the cap, ending in a unit: refused whole */
	memset(long_path, 'a', LABELS_CGROUP_PATH_MAX + 1);
	long_path[0] = '/';
	memcpy(long_path + LABELS_CGROUP_PATH_MAX + 1 - 14, "/nginx.service", 14);
	long_path[LABELS_CGROUP_PATH_MAX + 1] = '\0';
	assert_int_equal(labels_parse_cgroup_path(long_path, LABELS_CGROUP_PATH_MAX + 1, &l),
			 -EINVAL);
	assert_string_equal(l.service, "");
	/* at the cap: read */
	assert_int_equal(labels_parse_cgroup_path(long_path + 1, LABELS_CGROUP_PATH_MAX, &l),
			 -EINVAL); /* no leading '/' */
	long_path[1] = '/';
	assert_int_equal(labels_parse_cgroup_path(long_path + 1, LABELS_CGROUP_PATH_MAX, &l), 1);
	assert_string_equal(l.service, "nginx");
	free(long_path);
	assert_int_equal(labels_parse_cgroup_path("", 0, &l), -EINVAL);

	/* unit names: 255 bytes is one, 256 is not */
	for (n = LABELS_UNIT_NAME_MAX; n <= LABELS_UNIT_NAME_MAX + 1; n++) {
		memset(&l, 0, sizeof(l));
		unit[0] = '/';
		memset(unit + 1, 'u', n - 8);
		memcpy(unit + 1 + n - 8, ".service", 9);
		assert_int_equal(labels_parse_cgroup_path(unit, n + 1, &l),
				 n == LABELS_UNIT_NAME_MAX);
		assert_int_equal(strlen(l.service), n == LABELS_UNIT_NAME_MAX ? n - 8 : 0);
	}
	/* a user's unit of the longest name fits its label */
	memset(&l, 0, sizeof(l));
	n = (size_t)snprintf(unit, sizeof(unit), "/user@4294967295.service/");
	memset(unit + n, 'u', LABELS_UNIT_NAME_MAX - 8);
	memcpy(unit + n + LABELS_UNIT_NAME_MAX - 8, ".service", 9);
	assert_int_equal(labels_parse_cgroup_path(unit, strlen(unit), &l), 1);
	assert_int_equal(strlen(l.service), 5 + 10 + 1 + LABELS_UNIT_NAME_MAX - 8);
	/* a uid of 11 digits is no user manager, and no unit of its own either way */
	memset(&l, 0, sizeof(l));
	assert_int_equal(labels_parse_cgroup_path("/user@42949672950.service/a.service", 35, &l),
			 1);
	assert_string_equal(l.service, "a");
}

static void check_file(const char *text, size_t len, const char *service, const char *cid,
		       const char *pod)
{
	struct proc_labels l;

	memset(&l, 'x', sizeof(l)); /* cleared by the parser */
	labels_parse_cgroup(text, len, &l);
	assert_string_equal(l.service, service);
	assert_string_equal(l.container_id, cid);
	assert_string_equal(l.pod_uid, pod);
}

static void test_cgroup_files(void **state)
{
	/* pure v2 */
	static const char v2[] = "0::/system.slice/nginx.service\n";
	/* hybrid: the unified line says nothing, name=systemd does (this test machine's
	 * layout) */
	static const char hybrid[] = "9:name=systemd:/system.slice/docker-" ID ".scope\n"
				     "4:memory:/process_api/546f9490d2ddb0c9b2ebf8173771e9ce\n"
				     "1:cpu:/\n"
				     "0::/\n";
	/* hybrid where both say something: the v2 line wins */
	static const char both[] = "1:name=systemd:/system.slice/old.service\n"
				   "0::/system.slice/new.service\n";
	/* a v1 controller's line is never read */
	static const char v1only[] = "4:memory:/docker/" ID "\n0::/\n";
	/* the path may hold ':' */
	static const char colon[] = "0::/system.slice/a:b.service\n";
	static const char junk[] = "garbage\n::\n0:\n0::\n0::relative.service\n";

	(void)state;
	check_file(v2, strlen(v2), "nginx", "", "");
	check_file(hybrid, strlen(hybrid), "", ID, "");
	check_file(both, strlen(both), "new", "", "");
	check_file(v1only, strlen(v1only), "", "", "");
	check_file(colon, strlen(colon), "a:b", "", "");
	check_file(junk, strlen(junk), "", "", "");
	/* cut short: the last line without its newline is not read */
	check_file(v2, strlen(v2) - 1, "", "", "");
	check_file(hybrid, strlen(hybrid) - 1, "", ID, "");
	check_file("", 0, "", "", "");
}

static void check_cmdline(const char *const *argv, size_t argc, const char *want)
{
	char buf[1024];
	size_t len = 0, i;
	struct proc_labels l;

	for (i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;

		memcpy(buf + len, argv[i], n);
		len += n;
	}
	memset(&l, 'x', sizeof(l));
	assert_int_equal(labels_parse_cmdline(buf, len, &l), *want != '\0');
	assert_string_equal(l.py_main, want);
}

#define CMD(want, ...)                                                                             \
	do {                                                                                       \
		static const char *const a[] = { __VA_ARGS__ };                                    \
		print_message("  %s -> '%s'\n", a[sizeof(a) / sizeof(a[0]) > 1 ? 1 : 0], want);    \
		check_cmdline(a, sizeof(a) / sizeof(a[0]), want);                                  \
	} while (0)

static void test_cmdlines(void **state)
{
	char buf[512];
	struct proc_labels l;
	size_t i;

	(void)state;
	CMD("app.py", "python", "app.py");
	CMD("app.py", "python3", "app.py", "--port", "80");
	CMD("manage.py", "/usr/bin/python3.11", "/srv/app/releases/42/manage.py", "runserver");
	CMD("gunicorn", "/srv/venv/bin/python3", "/srv/venv/bin/gunicorn", "app:app");
	CMD("pkg.mod", "python3", "-m", "pkg.mod");
	CMD("pkg.mod", "python3", "-mpkg.mod", "-m", "other");
	CMD("celery", "python3", "-u", "-X", "dev", "-W", "ignore", "-m", "celery", "worker");
	CMD("app.py", "python3", "-Xfrozen_modules=off", "-Wignore", "-OO", "app.py");
	CMD("pkg.mod", "python3", "-uBm", "pkg.mod");
	CMD("pkg", "python3", "-uBmpkg");
	CMD("app.py", "python3", "-I", "-S", "-E", "-s", "-b", "-q", "app.py");
	CMD("app.py", "python3", "--check-hash-based-pycs", "always", "app.py");
	CMD("app.py", "python3", "--", "app.py");
	CMD("-c", "python3", "-c", "print(1)");
	CMD("-c", "python3", "-uc", "print(1)", "app.py");
	CMD("-c", "python3", "-cprint(1)");
	CMD("", "python3");		     /* interactive */
	CMD("", "python3", "-i");	     /* interactive */
	CMD("", "python3", "-");	     /* stdin */
	CMD("", "python3", "--version");     /* no program */
	CMD("", "python3", "-m");	     /* no module */
	CMD("", "python3", "-c");	     /* no code */
	CMD("", "python3", "-X");	     /* no value */
	CMD("", "python3", "-Z", "app.py");  /* not CPython's option */
	CMD("", "python3", "-m", "pkg/mod"); /* not a module name */
	CMD("", "python3", "-m", "pkg mod");
	CMD("", "python3", "dir/"); /* no file name */
	CMD("", "python3", "..");
	CMD("", "python3", "has space.py");
	CMD("", "python3", "tab\t.py");
	CMD("", "node", "app.js");	 /* not Python */
	CMD("", "pythonista", "app.py"); /* not Python either */
	CMD("", "/usr/bin/python3x", "app.py");
	CMD("", "python3", "--", "");
	CMD("", "python3", "--");
	CMD("a.py", "python3.13", "a.py");

	/* longest name: 128 bytes is one, 129 is not */
	for (i = LABELS_PY_MAIN_MAX; i <= LABELS_PY_MAIN_MAX + 1; i++) {
		memcpy(buf, "python3", 8);
		memset(buf + 8, 'm', i);
		buf[8 + i] = '\0';
		memset(&l, 0, sizeof(l));
		assert_int_equal(labels_parse_cmdline(buf, 8 + i + 1, &l), i == LABELS_PY_MAIN_MAX);
	}
	/* cut short: an argument without its NUL is not read */
	memcpy(buf, "python3\0app.py", 15);
	assert_int_equal(labels_parse_cmdline(buf, 14, &l), 0);
	assert_int_equal(labels_parse_cmdline(buf, 15, &l), 1);
	assert_int_equal(labels_parse_cmdline(buf, 0, &l), 0);
	/* options past LABELS_CMDLINE_ARGS_MAX: no label */
	{
		size_t len = 8;

		memcpy(buf, "python3", 8);
		for (i = 0; i < LABELS_CMDLINE_ARGS_MAX; i++, len += 3)
			memcpy(buf + len, "-u", 3);
		memcpy(buf + len, "app.py", 7);
		assert_int_equal(labels_parse_cmdline(buf, len + 7, &l), 0);
	}
}

/* A fake /proc/PID/ for the cache. */
static void fake_proc(const char *root, unsigned pid, const char *cgroup, const char *cmdline,
		      size_t cmdlen)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	assert_int_equal(mkdir(path, 0755) == 0 || errno == EEXIST, 1);
	snprintf(path, sizeof(path), "%s/%u/cgroup", root, pid);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(cgroup, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%u/cmdline", root, pid);
	f = fopen(path, "w");
	assert_non_null(f);
	fwrite(cmdline, 1, cmdlen, f);
	fclose(f);
}

static void test_cache(void **state)
{
	char root[256], name[32];
	struct label_cache *c;
	struct label_cache_stats st;
	const struct proc_labels *l;
	const char *t;
	unsigned i, w;

	(void)state;
	assert_non_null(test_mkdtemp(root, sizeof(root)));
	fake_proc(root, 10, "0::/system.slice/api.service\n", "python3\0-m\0api.main\0", 20);
	fake_proc(root, 11, "0::/docker/" ID "\n", "sh\0", 3);
	assert_int_equal(label_cache__new(root, &c), 0);

	l = label_cache__get(c, 10);
	assert_string_equal(l->service, "api");
	assert_string_equal(l->py_main, "api.main");
	l = label_cache__get(c, 11);
	assert_string_equal(l->container_id, ID);
	assert_string_equal(l->py_main, "");
	/* cached: a changed file is not read again... */
	fake_proc(root, 10, "0::/system.slice/web.service\n", "python3\0app.py\0", 15);
	assert_string_equal(label_cache__get(c, 10)->service, "api");
	/* ...until the process is announced again (an exec) */
	assert_int_equal(label_cache__refresh(c, 10), 0);
	assert_string_equal(label_cache__get(c, 10)->service, "web");
	assert_string_equal(label_cache__get(c, 10)->py_main, "app.py");
	/* gone: no labels, no error on get */
	assert_int_equal(label_cache__refresh(c, 12), -ESRCH);
	l = label_cache__get(c, 12);
	assert_string_equal(l->service, "");
	label_cache__stats(c, &st);
	assert_int_equal(st.reads, 4);
	assert_int_equal(st.gone, 1);

	/* thread names: LABELS_THREADS_MAX distinct ones, then [other] */
	for (i = 0; i < LABELS_THREADS_MAX + 5; i++) {
		snprintf(name, sizeof(name), "worker-%u", i);
		t = label_cache__thread(c, 10, name, 2);
		assert_string_equal(t, i < LABELS_THREADS_MAX ? name : LABELS_THREAD_OTHER);
	}
	assert_string_equal(label_cache__thread(c, 10, "worker-3", 1), "worker-3");
	assert_string_equal(label_cache__thread(c, 11, "worker-99", 1), "worker-99");
	/* a comm of 16 bytes without its NUL, and control bytes */
	assert_string_equal(label_cache__thread(c, 11, "0123456789abcdefXX", 1), "0123456789abcde");
	assert_string_equal(label_cache__thread(c, 11, "a\nb\x7f", 1), "a?b?");
	assert_string_equal(label_cache__thread(c, 11, "", 1), "");
	label_cache__stats(c, &st);
	assert_int_equal(st.threads_folded, 10);
	/* an exec forgets the old image's threads */
	assert_int_equal(label_cache__refresh(c, 10), 0);
	assert_string_equal(label_cache__thread(c, 10, "worker-40", 1), "worker-40");

	/* entries unused for LABELS_KEEP_WINDOWS windows are dropped, used ones kept */
	for (w = 0; w < LABELS_KEEP_WINDOWS + 1; w++) {
		label_cache__get(c, 11);
		label_cache__end_window(c);
	}
	label_cache__stats(c, &st);
	assert_int_equal(st.entries, 1);
	assert_string_equal(label_cache__get(c, 11)->container_id, ID);
	label_cache__free(c);
	label_cache__free(NULL);
	test_rm_rf(root);
}

/* The cache full: still labels, read once a window per process. */
static void test_cache_full(void **state)
{
	char root[256];
	struct label_cache *c;
	struct label_cache_stats st;
	unsigned pid;

	(void)state;
	assert_non_null(test_mkdtemp(root, sizeof(root)));
	fake_proc(root, 7, "0::/system.slice/late.service\n", "x\0", 2);
	assert_int_equal(label_cache__new(root, &c), 0);
	for (pid = 100000; pid < 100000 + LABELS_CACHE_MAX; pid++)
		label_cache__get(c, pid); /* gone: cached as "no labels" */
	label_cache__stats(c, &st);
	assert_int_equal(st.entries, LABELS_CACHE_MAX);
	assert_string_equal(label_cache__get(c, 7)->service, "late");
	assert_string_equal(label_cache__get(c, 7)->service, "late");
	assert_string_equal(label_cache__thread(c, 7, "t", 1), "t");
	label_cache__stats(c, &st);
	assert_int_equal(st.uncached, 1);
	assert_string_equal(label_cache__get(c, 100005)->service, "");
	label_cache__free(c);
	test_rm_rf(root);
}

/* Live processes through the real /proc: this one, and a child gone before. */
static void test_live(void **state)
{
	struct proc_labels l, parsed;
	char buf[LABELS_CGROUP_READ_MAX];
	FILE *f;
	size_t n;
	pid_t child;
	int status;

	(void)state;
	assert_int_equal(labels_read("/proc", (uint32_t)getpid(), &l), 0);
	f = fopen("/proc/self/cgroup", "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	memset(&parsed, 0, sizeof(parsed));
	labels_parse_cgroup(buf, n, &parsed);
	assert_string_equal(l.service, parsed.service);
	assert_string_equal(l.container_id, parsed.container_id);
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(labels_read("/proc", (uint32_t)child, &l), -ESRCH);
	assert_string_equal(l.service, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_shapes),  cmocka_unit_test(test_path_limits),
		cmocka_unit_test(test_cgroup_files), cmocka_unit_test(test_cmdlines),
		cmocka_unit_test(test_cache),	     cmocka_unit_test(test_cache_full),
		cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

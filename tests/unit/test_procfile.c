/* Tests that a watched process cannot steer the root agent through the files it
 * opens on the process's behalf (agent/symbols/procfile.c and its users: the
 * symbolizer and the Python finder).
 *
 * The attack, as reproduced: a process in a chroot, running as nobody, maps its
 * own binary; /proc/PID/maps (read by the agent, whose root is the host's) names
 * it by its host path, HOST/jail/prog. Inside the jail the user plants
 * jail/HOST/jail/prog as an absolute symbolic link to a host path of their
 * choosing: a root-only ELF in a 0700 directory, or a FIFO. The agent joined
 * /proc/PID/root and the path and opened it with open(), which resolved the link
 * against the agent's root: it read the root-only file's symbols into the
 * profile, or waited on the FIFO forever. Every test here runs the code under test
 * in a child with a time bound, so a hang fails the test instead of stalling it.
 * Expected names come from nm on the binaries the test builds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/python/pyproc.h"
#include "agent/symbols/elfsyms.h"
#include "agent/symbols/procfile.h"
#include "agent/symbols/procmaps.h"
#include "testutil.h"

#define BOUND_MS 20000 /* what a call that must not block may take, under ASan */
#define NOBODY	 "65534:65534"

/* The jailed program: parks in pause(); jail_fn is the function whose address
 * is symbolized. The secrets are the same code with another name for it. */
static const char prog_src[] = "#include <unistd.h>\n"
			       "__attribute__((noinline, used)) int jail_fn(int x)\n"
			       "{ volatile int a = x; for (int i = 0; i < 64; i++) a += i; "
			       "return a; }\n"
			       "int main(int argc, char **argv) { (void)argv; jail_fn(argc); "
			       "for (;;) pause(); }\n";
/* A host file that looks like CPython to the Python finder. */
static const char pysecret_src[] = "char _PyRuntime[8192], PyCode_Type[512], _Py_NoneStruct[64];\n"
				   "int main(void) { return _PyRuntime[0] + PyCode_Type[0]; }\n";

static char tmp[64], jail[128], secret[160], pysecret[160], host_fifo[160];
static uint64_t fn_addr; /* jail_fn in prog (static, not PIE: absolute) */

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static uint64_t nm_addr(const char *path, const char *name)
{
	char cmd[512], line[256];
	unsigned long long addr = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s | awk '$3 == \"%s\" { print $1 }'", path, name);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (fgets(line, sizeof(line), p))
		addr = strtoull(line, NULL, 16);
	pclose(p);
	assert_true(addr != 0);
	return addr;
}

/* The jail (owned by nobody) holding prog and python3.11 (the same binary), and,
 * outside it, a root-only directory holding the secrets, and a FIFO. */
static int setup(void **state)
{
	FILE *f;

	(void)state;
	if (!test_mkdtemp(tmp, sizeof(tmp)))
		return -1;
	snprintf(jail, sizeof(jail), "%s/jail", tmp);
	snprintf(secret, sizeof(secret), "%s/rootonly/secret", tmp);
	snprintf(pysecret, sizeof(pysecret), "%s/rootonly/pysecret", tmp);
	snprintf(host_fifo, sizeof(host_fifo), "%s/host.fifo", tmp);
	if (chmod(tmp, 0755) || mkdir(jail, 0755))
		return -1;
	{
		char path[256];

		snprintf(path, sizeof(path), "%s/prog.c", tmp);
		f = fopen(path, "w");
		if (!f || fputs(prog_src, f) < 0 || fclose(f))
			return -1;
		snprintf(path, sizeof(path), "%s/pysecret.c", tmp);
		f = fopen(path, "w");
		if (!f || fputs(pysecret_src, f) < 0 || fclose(f))
			return -1;
	}
	{
		char cmd[2048];

		snprintf(cmd, sizeof(cmd),
			 "set -e; cd %s && cc -O1 -static -no-pie -o jail/prog prog.c && "
			 "cp jail/prog jail/python3.11 && mkdir -m 0700 rootonly && "
			 "objcopy --redefine-sym jail_fn=secret_host_only_fn jail/prog %s && "
			 "cc -O0 -static -no-pie -o %s pysecret.c && chmod 0600 %s %s && "
			 "mkfifo %s && chown -R 65534:65534 jail",
			 tmp, secret, pysecret, secret, pysecret, host_fifo);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (!getenv("SMOLDER_KEEP"))
		test_rm_rf(tmp);
	return 0;
}

/* Starts /NAME in the jail as nobody; returns its pid once it runs the program. */
static pid_t start_jailed(const char *name)
{
	char prog[160], want[200], exe[64], got[256];
	char *argv[] = { "/usr/sbin/chroot", "--userspec=" NOBODY, jail, prog, NULL };
	uint64_t deadline;
	ssize_t n;
	pid_t pid;

	snprintf(prog, sizeof(prog), "/%s", name);
	snprintf(want, sizeof(want), "%s/%s", jail, name);
	pid = test_spawn(argv, NULL, NULL);
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	for (deadline = test_now_ms() + 10000; test_now_ms() < deadline;) {
		n = readlink(exe, got, sizeof(got) - 1);
		if (n > 0) {
			got[n] = '\0';
			if (!strcmp(got, want))
				return pid;
		}
		usleep(10000); /* polling interval of a bounded wait */
	}
	fail_msg("%s did not start in the jail", name);
	return -1;
}

/* Replaces what jail/HOST/jail/NAME (the maps line's path, inside the jail) is:
 * "ln -s TARGET", "cp FILE" or "mkfifo". */
static void plant(const char *name, const char *how, const char *what)
{
	sh("set -e; d=%s%s; mkdir -p $d; rm -f $d/%s; cd $d; %s %s %s; chown -h 65534:65534 %s",
	   jail, jail, name, how, what ? what : "", name, name);
}

static void stop_jailed(pid_t pid)
{
	int status;

	test_kill(pid, SIGKILL);
	status = test_wait(pid, 10000);
	assert_true(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

struct symbolize_case {
	pid_t pid;
	char name[256];
	struct procfile_stats before, after;
};

/* In a child: the name of jail_fn's address in the jailed process, as the agent
 * finds it. 0 when the call returned; 1 when it failed outright. */
static int symbolize(void *arg)
{
	struct symbolize_case *sc = arg;
	struct elfsyms_cache *files;
	struct proc_cache *pc;
	int fd, ret = 0;

	procfile_stats(&sc->before);
	if (elfsyms_cache__new(16, SIZE_MAX, &files) || proc_cache__new(files, 2, &pc))
		return 1;
	proc_cache__symbolize(pc, (uint32_t)sc->pid, fn_addr + 4, sc->name, sizeof(sc->name));
	procfile_stats(&sc->after);
	proc_cache__free(pc);
	elfsyms_cache__free(files);
	/* the child's findings go back through a file: its memory is its own */
	fd = open("result", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, sc, sizeof(*sc)) != (ssize_t)sizeof(*sc))
		ret = 1;
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Runs symbolize() bounded, and reads back what it found. */
static void symbolize_bounded(struct symbolize_case *sc, const char *what)
{
	char cwd[PATH_MAX];
	int ret, fd;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(tmp), 0);
	unlink("result");
	ret = test_call_bounded("symbolize", symbolize, sc, BOUND_MS);
	if (ret == -1)
		fail_msg("%s: symbolizing the jailed process did not return in %d s", what,
			 BOUND_MS / 1000);
	assert_int_equal(ret, 0);
	fd = open("result", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, sc, sizeof(*sc)), (ssize_t)sizeof(*sc));
	close(fd);
	assert_int_equal(chdir(cwd), 0);
}

/* jail_fn's address, the same in the secret (only its name differs). */
static void find_fn(void)
{
	char prog[160];

	snprintf(prog, sizeof(prog), "%s/prog", jail);
	fn_addr = nm_addr(prog, "jail_fn");
	assert_true(fn_addr == nm_addr(secret, "secret_host_only_fn"));
}

static void test_jail_link_to_host_secret(void **state)
{
	struct symbolize_case sc = { 0 };

	(void)state;
	find_fn();
	sc.pid = start_jailed("prog");
	plant("prog", "ln -s", secret); /* absolute: the host's path */
	symbolize_bounded(&sc, "a link to a root-only ELF");
	/* never the host file's name; the mapped file's own (through map_files) */
	assert_string_equal(sc.name, "jail_fn");
	stop_jailed(sc.pid);
}

static void test_jail_replaced_file(void **state)
{
	struct symbolize_case sc = { 0 };
	char copy[200];

	(void)state;
	find_fn();
	sc.pid = start_jailed("prog");
	/* the path now names another regular file (a copy of the secret the user
	 * could read): not the file mapped, whose device and inode the maps give */
	snprintf(copy, sizeof(copy), "%s/decoy", tmp);
	sh("cp %s %s", secret, copy);
	plant("prog", "cp", copy);
	symbolize_bounded(&sc, "a replaced file");
	assert_string_equal(sc.name, "jail_fn");
	assert_int_equal(sc.after.not_mapped - sc.before.not_mapped, 1);
	stop_jailed(sc.pid);
}

static void test_jail_link_to_fifo(void **state)
{
	struct symbolize_case sc = { 0 };
	char twin[300];

	(void)state;
	find_fn();
	sc.pid = start_jailed("prog");
	plant("prog", "ln -s", host_fifo);
	/* where the link leads inside the jail: a FIFO there too, refused unopened */
	snprintf(twin, sizeof(twin), "%s%s", jail, host_fifo);
	sh("mkdir -p $(dirname %s) && mkfifo %s", twin, twin);
	symbolize_bounded(&sc, "a link to a FIFO");
	assert_string_equal(sc.name, "jail_fn");
	assert_int_equal(sc.after.not_regular - sc.before.not_regular, 1);
	sh("rm -f %s", twin);
	stop_jailed(sc.pid);
}

struct python_case {
	pid_t pid;
};

/* In a child: pyproc__inspect's result, as a small number (0: -ENOENT). */
static int inspect(void *arg)
{
	const struct python_case *pcase = arg;
	struct pyproc *p = NULL;
	int err = pyproc__inspect(pcase->pid, &p);

	free(p);
	return err == -ENOENT ? 0 : err == -EAGAIN ? 2 : err == 0 ? 3 : 4;
}

/* The Python finder opens files named like CPython: python3.11 here, which is
 * not CPython at all. A link to a FIFO must not hold it, and a link to a host
 * file that looks like CPython must not be read (it would be taken for the
 * process's interpreter: -EAGAIN, offsets that do not check out, where the
 * process's own file gives -ENOENT, not CPython). */
static void test_jail_python(void **state)
{
	struct python_case pcase;
	int ret;

	(void)state;
	pcase.pid = start_jailed("python3.11");
	plant("python3.11", "ln -s", host_fifo);
	ret = test_call_bounded("inspect", inspect, &pcase, BOUND_MS);
	if (ret == -1)
		fail_msg("pyproc__inspect of a link to a FIFO did not return in %d s",
			 BOUND_MS / 1000);
	assert_int_equal(ret, 0);

	plant("python3.11", "ln -s", pysecret);
	ret = test_call_bounded("inspect", inspect, &pcase, BOUND_MS);
	assert_int_equal(ret, 0);
	stop_jailed(pcase.pid);
}

/* The helper itself, on a directory standing for a process's root: links stay
 * inside it, FIFOs and devices are never opened, the device and inode are
 * checked; then the same without openat2 (the O_NOFOLLOW walk). */
static void check_helper(bool walk)
{
	struct procfile_stats before, after;
	struct procfile_id id;
	char root[160];
	struct stat st;
	char text[16] = "";
	int rfd, fd;

	snprintf(root, sizeof(root), "%s/root%d", tmp, walk);
	/* lib/abs: an absolute link to a host directory; what it names there is
	 * "host", its twin inside the root "twin" */
	sh("mkdir -p %s/lib %s/etc %s%s/hostdir %s/hostdir && echo host > %s/hostdir/file && "
	   "echo twin > %s%s/hostdir/file && mkfifo %s/lib/fifo && ln -s %s/hostdir %s/lib/abs "
	   "&& ln -s /dev/null %s/lib/dev && ln -s ../etc %s/lib/up && echo plain > %s/lib/plain",
	   root, root, root, tmp, tmp, tmp, root, tmp, root, tmp, root, root, root, root);
	procfile_set_no_openat2(walk);
	rfd = procfile_open_dir(PROCFILE_OWN_ROOT, root, 0);
	assert_true(rfd >= 0);
	procfile_stats(&before);

	fd = procfile_open(rfd, "/lib/plain", 0, NULL);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY);
	close(fd);
	/* the same file, but another device and inode is wanted */
	id = (struct procfile_id){ st.st_dev, st.st_ino + 1 };
	assert_int_equal(procfile_open(rfd, "/lib/plain", 0, &id), -ESTALE);
	id.ino--;
	fd = procfile_open(rfd, "/lib/plain", 0, &id);
	assert_true(fd >= 0);
	close(fd);

	assert_int_equal(procfile_open(rfd, "/lib/fifo", 0, NULL), -EINVAL);
	if (walk) {
		/* no link is followed at all */
		assert_int_equal(procfile_open(rfd, "/lib/abs/file", 0, NULL), -ELOOP);
		assert_int_equal(procfile_open(rfd, "/lib/dev", 0, NULL), -ELOOP);
		assert_int_equal(procfile_open(rfd, "/lib/../lib/plain", 0, NULL), -EXDEV);
	} else {
		/* an absolute link resolves in the root: the twin, not the host's */
		fd = procfile_open(rfd, "/lib/abs/file", 0, NULL);
		assert_true(fd >= 0);
		assert_int_equal(pread(fd, text, sizeof(text) - 1, 0), 5);
		assert_string_equal(text, "twin\n");
		close(fd);
		assert_int_equal(procfile_open(rfd, "/lib/dev", 0, NULL), -ENOENT);
		assert_int_equal(procfile_open(rfd, "/lib/up/../../../../etc/hostname", 0, NULL),
				 -ENOENT);
		assert_int_equal(procfile_open(rfd, "/lib/abs/file", PROCFILE_NO_SYMLINKS, NULL),
				 -ELOOP);
	}
	/* a device by its own path: checked before any open */
	assert_int_equal(procfile_open(PROCFILE_OWN_ROOT, "/dev/null", 0, NULL), -EINVAL);
	procfile_stats(&after);
	assert_int_equal(after.not_regular - before.not_regular, 2);
	assert_int_equal(after.not_mapped - before.not_mapped, 1);
	assert_int_equal(after.link - before.link, walk ? 3 : 1);
	close(rfd);
	procfile_set_no_openat2(false);
}

static void test_helper(void **state)
{
	(void)state;
	check_helper(false);
	check_helper(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_helper),
		cmocka_unit_test_teardown(test_jail_link_to_host_secret, test_teardown_children),
		cmocka_unit_test_teardown(test_jail_replaced_file, test_teardown_children),
		cmocka_unit_test_teardown(test_jail_link_to_fifo, test_teardown_children),
		cmocka_unit_test_teardown(test_jail_python, test_teardown_children),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/* Tests of agent/symbols/procmaps on live processes: this test process (a function of its
 * own, libc's getpid, libraries built and dlopen'ed at test time, a stripped one
 * for the fallback name, the vDSO, anonymous and special mappings) and forked
 * children that load a library, are snapshotted, then killed and reaped, so their
 * frames must still resolve from the snapshot until the window rules free it.
 * Expected names and addresses come from dlsym/dladdr, nm and the vDSO's own
 * headers, read here independently of the code under test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/python/pyproc.h"
#include "agent/symbols/elfsyms.h"
#include "agent/symbols/procmaps.h"
#include "testutil.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA	     0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

#define KEEP_WINDOWS 2

static const char lib_src[] =
	"#include <unistd.h>\n"
	"#define NOINLINE __attribute__((noinline, used))\n"
	"NOINLINE int pm_lib_func(int x)\n"
	"{\n"
	"	volatile int a = x;\n"
	"	for (int i = 0; i < 8; i++)\n"
	"		a += i;\n"
	"	return a;\n"
	"}\n"
	"static NOINLINE int pm_static_func(int x) { volatile int a = x * 7; return a + 1; }\n"
	"NOINLINE void pm_lib_park(void) { for (;;) pause(); }\n"
	"int pm_call_static(int x) { return pm_static_func(x); }\n";

static char tmpdir[64];
/* the same library under several names: each dlopen of a new path is a new mapping */
static char lib_self[128], lib_stripped[128], lib_child[128], lib_deleted[128], lib_new[128],
	lib_newer[128], lib_reuse[128];

__attribute__((noinline, used)) static int test_marker_func(int x)
{
	volatile int a = x;

	return a + 1;
}

__attribute__((noinline, used)) static void test_child_park(void)
{
	for (;;)
		pause();
}

static int setup(void **state)
{
	char src[128], cmd[2048];
	FILE *f;

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/smolder-procmaps-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(src, sizeof(src), "%s/pm.c", tmpdir);
	snprintf(lib_self, sizeof(lib_self), "%s/libpm.so", tmpdir);
	snprintf(lib_stripped, sizeof(lib_stripped), "%s/libpm_stripped.so", tmpdir);
	snprintf(lib_child, sizeof(lib_child), "%s/libpm_child.so", tmpdir);
	snprintf(lib_deleted, sizeof(lib_deleted), "%s/libpm_deleted.so", tmpdir);
	snprintf(lib_new, sizeof(lib_new), "%s/libpm_new.so", tmpdir);
	snprintf(lib_newer, sizeof(lib_newer), "%s/libpm_newer.so", tmpdir);
	snprintf(lib_reuse, sizeof(lib_reuse), "%s/libpm_reuse.so", tmpdir);
	f = fopen(src, "w");
	if (!f || fputs(lib_src, f) < 0 || fclose(f))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "cc -O1 -fno-toplevel-reorder -fno-inline -shared -fPIC -o %s %s && "
		 "strip -o %s %s && cp %s %s && cp %s %s && cp %s %s && cp %s %s && cp %s %s",
		 lib_self, src, lib_stripped, lib_self, lib_self, lib_child, lib_self, lib_deleted,
		 lib_self, lib_new, lib_self, lib_newer, lib_self, lib_reuse);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

struct fixture {
	struct elfsyms_cache *files;
	struct proc_cache *pc;
};

static struct fixture *fixture_new(void)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(elfsyms_cache__new(64, SIZE_MAX, &f->files), 0);
	assert_int_equal(proc_cache__new(f->files, KEEP_WINDOWS, &f->pc), 0);
	return f;
}

static void fixture_free(struct fixture *f)
{
	proc_cache__free(f->pc);
	elfsyms_cache__free(f->files);
	free(f);
}

static uint64_t addr_of(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* Symbolizes and checks the name and the return code. */
static void expect_frame(struct proc_cache *pc, pid_t pid, uint64_t addr, const char *name, int rc)
{
	char buf[512];

	memset(buf, 'z', sizeof(buf));
	assert_int_equal(proc_cache__symbolize(pc, (uint32_t)pid, addr, buf, sizeof(buf)), rc);
	assert_string_equal(buf, name);
}

/* Address of a symbol in a file, from nm. */
static uint64_t nm_addr(const char *path, const char *name)
{
	char cmd[256], line[512], sym[256], type;
	uint64_t a, result = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm --defined-only '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%" SCNx64 " %c %255s", &a, &type, sym) == 3 && !strcmp(sym, name))
			result = a;
	assert_int_equal(pclose(p), 0);
	assert_true(result != 0);
	return result;
}

static void self_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	assert_true(n > 0);
	buf[n] = '\0';
}

static void test_self(void **state)
{
	struct fixture *f = fixture_new();
	void *h, *stripped, *libc, *fn;
	char exe[PATH_MAX], want[128], buf[64];
	uint64_t vaddr;
	Dl_info info;
	int rc;

	(void)state;
	/* loaded before the first snapshot, so it is in it */
	h = dlopen(lib_self, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	stripped = dlopen(lib_stripped, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(stripped);

	expect_frame(f->pc, getpid(), addr_of((void *)test_marker_func), "test_marker_func", 0);
	expect_frame(f->pc, getpid(), addr_of((void *)test_marker_func) + 1, "test_marker_func", 0);
	assert_int_equal(proc_cache__size(f->pc), 1);

	fn = dlsym(h, "pm_lib_func");
	assert_non_null(fn);
	expect_frame(f->pc, getpid(), addr_of(fn) + 2, "pm_lib_func", 0);
	fn = dlsym(h, "pm_lib_park");
	assert_non_null(fn);
	expect_frame(f->pc, getpid(), addr_of(fn), "pm_lib_park", 0);

	/* libc's getpid: glibc exports it as a weak alias of __getpid */
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	fn = dlsym(libc, "getpid");
	assert_non_null(fn);
	rc = proc_cache__symbolize(f->pc, (uint32_t)getpid(), addr_of(fn), buf, sizeof(buf));
	assert_int_equal(rc, 0);
	assert_true(!strcmp(buf, "getpid") || !strcmp(buf, "__getpid"));
	dlclose(libc);

	/* the stripped library has no symbol for its static function: the fallback
	 * is the file's base name and the ELF address, which nm reads from the
	 * unstripped original (strip moves no code) */
	fn = dlsym(stripped, "pm_lib_func");
	assert_non_null(fn);
	assert_true(dladdr(fn, &info));
	vaddr = nm_addr(lib_self, "pm_static_func");
	snprintf(want, sizeof(want), "libpm_stripped.so+0x%" PRIx64, vaddr);
	expect_frame(f->pc, getpid(), addr_of(info.dli_fbase) + vaddr, want, -ENOENT);
	/* while the unstripped copy resolves the same code by name */
	fn = dlsym(h, "pm_lib_func");
	assert_true(dladdr(fn, &info));
	expect_frame(f->pc, getpid(), addr_of(info.dli_fbase) + vaddr, "pm_static_func", 0);

	self_exe(exe, sizeof(exe));
	assert_non_null(proc_cache__exe(f->pc, (uint32_t)getpid()));
	assert_string_equal(proc_cache__exe(f->pc, (uint32_t)getpid()), exe);
	assert_null(proc_cache__exe(f->pc, 0x7ffffff0u));

	dlclose(stripped);
	dlclose(h);
	fixture_free(f);
}

struct child {
	pid_t pid;
	uint64_t func, park; /* pm_lib_func, pm_lib_park in the child's library */
};

/* Forks a child that loads lib (if not NULL), reports its addresses and parks. */
static void child_start(const char *lib, struct child *c)
{
	uint64_t msg[2] = { 0, 0 };
	void (*park)(void) = test_child_park;
	pid_t parent;
	int fds[2];
	void *h;

	assert_int_equal(pipe(fds), 0);
	parent = getpid();
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		/* dies with the test, even when a failed assertion skips child_kill */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(1);
		close(fds[0]);
		if (lib) {
			h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
			if (!h)
				_exit(1);
			msg[0] = addr_of(dlsym(h, "pm_lib_func"));
			msg[1] = addr_of(dlsym(h, "pm_lib_park"));
			park = (void (*)(void))(uintptr_t)msg[1];
		}
		if (write(fds[1], msg, sizeof(msg)) != sizeof(msg))
			_exit(1);
		park();
		_exit(1);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], msg, sizeof(msg)), sizeof(msg));
	close(fds[0]);
	c->func = msg[0];
	c->park = msg[1];
	if (lib) {
		assert_true(c->func != 0);
		assert_true(c->park != 0);
	}
}

static void child_kill(const struct child *c)
{
	int status;

	assert_int_equal(kill(c->pid, SIGKILL), 0);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	/* reaped: the pid is gone */
	assert_int_equal(kill(c->pid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

/* Reaps a child already killed and waited for with WNOWAIT. */
static void child_reap(const struct child *c)
{
	int status;

	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFSIGNALED(status));
}

static void test_child_after_exit(void **state)
{
	struct fixture *f = fixture_new();
	char exe[PATH_MAX];
	struct child c;
	int i;

	(void)state;
	child_start(lib_child, &c);
	assert_int_equal(proc_cache__snapshot(f->pc, (uint32_t)c.pid), 0);
	child_kill(&c);

	/* the process is gone; its snapshot still resolves its frames */
	expect_frame(f->pc, c.pid, c.func + 1, "pm_lib_func", 0);
	expect_frame(f->pc, c.pid, c.park, "pm_lib_park", 0);
	/* the child is a fork: the test binary sits at the same address */
	expect_frame(f->pc, c.pid, addr_of((void *)test_marker_func), "test_marker_func", 0);
	expect_frame(f->pc, c.pid, 0x10, "[unknown]", -ENOENT);
	self_exe(exe, sizeof(exe));
	assert_string_equal(proc_cache__exe(f->pc, (uint32_t)c.pid), exe);
	assert_int_equal(proc_cache__snapshot(f->pc, (uint32_t)c.pid), -ESRCH);
	assert_int_equal(proc_cache__size(f->pc), 1); /* a failed snapshot keeps the old */

	/* used in window 0; kept through KEEP_WINDOWS unused windows after it */
	for (i = 0; i < KEEP_WINDOWS; i++) {
		proc_cache__end_window(f->pc);
		assert_int_equal(proc_cache__size(f->pc), 1);
	}
	proc_cache__end_window(f->pc);
	assert_int_equal(proc_cache__size(f->pc), 0);
	assert_null(proc_cache__exe(f->pc, (uint32_t)c.pid));
	expect_frame(f->pc, c.pid, c.func + 1, "[unknown]", -ENOENT);
	assert_int_equal(proc_cache__size(f->pc), 0);
	fixture_free(f);
}

/* A process that exits has no mappings left while it is a zombie, and its last
 * samples can still ask for a snapshot then (a remap event, a miss): the
 * snapshot taken while it lived must stay and name them. */
static void test_child_exiting(void **state)
{
	struct fixture *f = fixture_new();
	struct child c;
	siginfo_t info;
	char path[64];
	char *maps;

	(void)state;
	child_start(lib_child, &c);
	assert_int_equal(proc_cache__snapshot(f->pc, (uint32_t)c.pid), 0);
	assert_int_equal(kill(c.pid, SIGKILL), 0);
	/* exited, not reaped: its /proc entry and start time remain, its maps are empty */
	memset(&info, 0, sizeof(info));
	assert_int_equal(waitid(P_PID, (id_t)c.pid, &info, WEXITED | WNOWAIT), 0);
	assert_int_equal(info.si_pid, c.pid);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)c.pid);
	maps = test_read_file(path);
	assert_non_null(maps);
	assert_string_equal(maps, "");
	free(maps);

	assert_int_equal(proc_cache__snapshot(f->pc, (uint32_t)c.pid), -ESRCH);
	expect_frame(f->pc, c.pid, c.func + 1, "pm_lib_func", 0);
	expect_frame(f->pc, c.pid, addr_of((void *)test_marker_func), "test_marker_func", 0);
	/* a miss reads the zombie again: still the old snapshot afterwards */
	expect_frame(f->pc, c.pid, 0x10, "[unknown]", -ENOENT);
	expect_frame(f->pc, c.pid, c.park, "pm_lib_park", 0);
	assert_int_equal(proc_cache__size(f->pc), 1);
	child_reap(&c);
	fixture_free(f);
}

/* A snapshot opens no file; symbols are loaded at the first address that
 * resolves into a file, and a second process mapping the same file finds them by
 * (device, inode) without opening it, even after it exited (its map_files and
 * root are gone). Index entries unused for 6 windows are dropped. */
static void test_lazy_and_shared(void **state)
{
	struct fixture *f = fixture_new();
	struct proc_cache_stats st;
	struct child a, b;
	uint64_t opens;
	int i;

	(void)state;
	child_start(lib_child, &a);
	child_start(lib_child, &b);
	assert_int_equal(proc_cache__snapshot(f->pc, (uint32_t)a.pid), 0);
	assert_int_equal(proc_cache__snapshot(f->pc, (uint32_t)b.pid), 0);
	proc_cache__stats(f->pc, &st);
	assert_int_equal(st.captures, 2);
	assert_int_equal(st.file_opens, 0); /* no ELF file opened at capture */
	assert_int_equal(elfsyms_cache__parsed(f->files), 0);

	expect_frame(f->pc, a.pid, a.func + 1, "pm_lib_func", 0);
	proc_cache__stats(f->pc, &st);
	opens = st.file_opens;
	assert_true(opens >= 1);
	assert_int_equal(st.file_hits, 0);

	child_kill(&b); /* gone before its frames are named */
	expect_frame(f->pc, b.pid, b.func + 1, "pm_lib_func", 0);
	proc_cache__stats(f->pc, &st);
	assert_int_equal(st.file_opens, opens); /* found by (device, inode) */
	assert_int_equal(st.file_hits, 1);
	assert_true(st.files >= 1);

	child_kill(&a);
	for (i = 0; i < 8; i++)
		proc_cache__end_window(f->pc);
	proc_cache__stats(f->pc, &st);
	assert_int_equal(st.snapshots, 0);
	assert_int_equal(st.files, 0);
	fixture_free(f);
}

/* A use resets the count: a dead process's snapshot stays while it is used. */
static void test_child_used_is_kept(void **state)
{
	struct fixture *f = fixture_new();
	struct child c;
	int i;

	(void)state;
	child_start(lib_child, &c);
	expect_frame(f->pc, c.pid, c.func, "pm_lib_func", 0); /* takes the snapshot */
	child_kill(&c);
	for (i = 0; i < 3 * KEEP_WINDOWS; i++) {
		proc_cache__end_window(f->pc);
		expect_frame(f->pc, c.pid, c.park + 1, "pm_lib_park", 0);
	}
	for (i = 0; i < KEEP_WINDOWS; i++)
		proc_cache__end_window(f->pc);
	assert_int_equal(proc_cache__size(f->pc), 1);
	proc_cache__end_window(f->pc);
	assert_int_equal(proc_cache__size(f->pc), 0);
	fixture_free(f);
}

/* A library deleted from disk while mapped resolves through map_files. */
static void test_deleted_library(void **state)
{
	struct fixture *f = fixture_new();
	struct child c;

	(void)state;
	if (geteuid() != 0) { /* map_files needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE */
		fixture_free(f);
		test_skip("/proc/PID/map_files needs root");
		return;
	}
	child_start(lib_deleted, &c);
	assert_int_equal(unlink(lib_deleted), 0);
	assert_int_equal(proc_cache__snapshot(f->pc, (uint32_t)c.pid), 0);
	child_kill(&c);
	expect_frame(f->pc, c.pid, c.func + 3, "pm_lib_func", 0);
	expect_frame(f->pc, c.pid, c.park, "pm_lib_park", 0);
	fixture_free(f);
}

/* A library loaded after the snapshot resolves at once: the first miss of a window
 * reads the maps again (the snapshot of a process first seen in ld.so, before libc
 * was mapped). Only the first: one loaded after that miss waits for the next
 * window, so an address outside every mapping for good costs one read a window. */
static void test_new_library(void **state)
{
	struct fixture *f = fixture_new();
	void *h, *h2, *fn, *fn2;

	(void)state;
	expect_frame(f->pc, getpid(), addr_of((void *)test_marker_func), "test_marker_func", 0);
	h = dlopen(lib_new, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	fn = dlsym(h, "pm_lib_func");
	assert_non_null(fn);
	expect_frame(f->pc, getpid(), addr_of(fn), "pm_lib_func", 0);
	h2 = dlopen(lib_newer, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h2);
	fn2 = dlsym(h2, "pm_lib_func");
	assert_non_null(fn2);
	assert_ptr_not_equal(fn, fn2);
	expect_frame(f->pc, getpid(), addr_of(fn2), "[unknown]", -ENOENT);
	proc_cache__end_window(f->pc);
	expect_frame(f->pc, getpid(), addr_of(fn2), "pm_lib_func", 0);
	dlclose(h2);
	dlclose(h);
	fixture_free(f);
}

/* A snapshot of a live process unused for 6 windows is dropped, and taken again on
 * the next use. */
static void test_alive_idle(void **state)
{
	struct fixture *f = fixture_new();
	int i;

	(void)state;
	expect_frame(f->pc, getpid(), addr_of((void *)test_marker_func), "test_marker_func", 0);
	for (i = 0; i < 6; i++) {
		proc_cache__end_window(f->pc);
		assert_int_equal(proc_cache__size(f->pc), 1);
	}
	proc_cache__end_window(f->pc);
	assert_int_equal(proc_cache__size(f->pc), 0);
	expect_frame(f->pc, getpid(), addr_of((void *)test_marker_func), "test_marker_func", 0);
	assert_int_equal(proc_cache__size(f->pc), 1);
	fixture_free(f);
}

/* A pid reused by a new process: the start time differs, so a miss reads the new
 * process's maps even within the same window. Needs ns_last_pid (root); other
 * processes forking at the same moment can take the pid first, hence the retries. */
static void test_pid_reuse(void **state)
{
	struct fixture *f = fixture_new();
	struct child a, b;
	int attempt;
	FILE *nl;

	(void)state;
	for (attempt = 0; attempt < 20; attempt++) {
		child_start(NULL, &a);
		expect_frame(f->pc, a.pid, addr_of((void *)test_marker_func), "test_marker_func",
			     0);
		child_kill(&a);
		/* start times count clock ticks (10 ms): let B start a few ticks later */
		usleep(30000);

		nl = fopen("/proc/sys/kernel/ns_last_pid", "w");
		if (!nl || fprintf(nl, "%d", (int)a.pid - 1) < 0 || fclose(nl))
			break;
		child_start(lib_reuse, &b);
		if (b.pid == a.pid) {
			expect_frame(f->pc, b.pid, b.func, "pm_lib_func", 0);
			assert_int_equal(proc_cache__size(f->pc), 1);
			child_kill(&b);
			fixture_free(f);
			return;
		}
		child_kill(&b); /* another process took the pid first */
	}
	fixture_free(f);
	test_skip("another process kept taking the pid first");
}

/* Finds name in the vDSO's dynamic symbols by reading its headers in memory, and
 * returns its run-time address, or 0. */
static uint64_t vdso_sym(const char *name)
{
	const char *base = (const char *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
	const Elf64_Shdr *sh;
	const Elf64_Phdr *ph;
	const Elf64_Sym *syms;
	const char *strs;
	uint64_t bias = 0;
	size_t i, j, n;

	if (!base)
		return 0;
	ph = (const Elf64_Phdr *)(base + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			bias = addr_of(base) - ph[i].p_vaddr + ph[i].p_offset;
			break;
		}
	sh = (const Elf64_Shdr *)(base + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		syms = (const Elf64_Sym *)(base + sh[i].sh_offset);
		strs = base + sh[sh[i].sh_link].sh_offset;
		n = sh[i].sh_size / sizeof(*syms);
		for (j = 0; j < n; j++)
			if (!strcmp(strs + syms[j].st_name, name))
				return bias + syms[j].st_value;
	}
	return 0;
}

static void test_vdso(void **state)
{
	struct fixture *f = fixture_new();
	int (*gettime)(clockid_t, struct timespec *);
	struct timespec ts;
	uint64_t a = vdso_sym("__vdso_clock_gettime");

	(void)state;
	if (!a) {
		fixture_free(f);
		test_skip("no __vdso_clock_gettime in this process's vDSO");
		return;
	}
	/* the address really is the vDSO's clock_gettime */
	gettime = (int (*)(clockid_t, struct timespec *))(uintptr_t)a;
	assert_int_equal(gettime(CLOCK_MONOTONIC, &ts), 0);
	assert_true(ts.tv_sec > 0 || ts.tv_nsec > 0);

	expect_frame(f->pc, getpid(), a, "__vdso_clock_gettime", 0);
	expect_frame(f->pc, getpid(), a + 4, "__vdso_clock_gettime", 0);
	fixture_free(f);
}

/* "[vsyscall]" start, if this kernel maps it executable, else 0. */
static uint64_t vsyscall_start(void)
{
	char line[512];
	uint64_t start = 0, s, e;
	char perms[8];
	FILE *maps = fopen("/proc/self/maps", "r");

	assert_non_null(maps);
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, "[vsyscall]") &&
		    sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &s, &e, perms) == 3 &&
		    perms[2] == 'x')
			start = s;
	fclose(maps);
	return start;
}

static void test_unknown_and_special(void **state)
{
	struct fixture *f = fixture_new();
	const uint32_t nopid = 0x7ffffff0u; /* above PID_MAX_LIMIT: never a process */
	char *anon, *named, buf[8];
	bool have_name;
	uint64_t vs;

	(void)state;
	anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(anon != MAP_FAILED);
	named = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(named != MAP_FAILED);
	have_name = prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)named, 8192,
			  (unsigned long)"jit") == 0;

	expect_frame(f->pc, getpid(), 0x10, "[unknown]", -ENOENT);
	expect_frame(f->pc, getpid(), addr_of(anon) + 0x20, "[unknown]", -ENOENT);
	if (have_name)
		expect_frame(f->pc, getpid(), addr_of(named) + 0x1010, "[anon:jit]+0x1010",
			     -ENOENT);
	vs = vsyscall_start();
	if (vs)
		expect_frame(f->pc, getpid(), vs + 4, "[vsyscall]+0x4", -ENOENT);

	/* truncated, always terminated; nothing written for len 0 */
	memset(buf, 'z', sizeof(buf));
	assert_int_equal(proc_cache__symbolize(f->pc, (uint32_t)getpid(), 0x10, buf, 4), -ENOENT);
	assert_string_equal(buf, "[un");
	assert_int_equal(buf[4], 'z');
	assert_int_equal(proc_cache__symbolize(f->pc, (uint32_t)getpid(), 0x10, buf, 0), -ENOENT);
	assert_int_equal(buf[0], '[');
	assert_int_equal(proc_cache__symbolize(f->pc, (uint32_t)getpid(),
					       addr_of((void *)test_marker_func), buf, 5),
			 0);
	assert_string_equal(buf, "test");

	/* a pid that does not exist */
	assert_int_equal(proc_cache__snapshot(f->pc, nopid), -ESRCH);
	expect_frame(f->pc, (pid_t)nopid, addr_of((void *)test_marker_func), "[unknown]", -ENOENT);
	assert_int_equal(proc_cache__size(f->pc), 1);
	assert_null(proc_cache__exe(f->pc, nopid));

	munmap(named, 8192);
	munmap(anon, 4096);
	fixture_free(f);
	proc_cache__free(NULL);
}

/* One maps line at a time, against fields written out here by hand. */
static void test_parse_line(void **state)
{
	struct procmaps_line pl;
	const char *l;

	(void)state;
	l = "7f36d5fe4000-7f36d600a000 r-xp 00001000 fe:00 332383   /usr/lib/ld linux.so.2\n";
	assert_int_equal(procmaps_parse_line(l, &pl), 0);
	assert_int_equal(pl.start, 0x7f36d5fe4000ull);
	assert_int_equal(pl.end, 0x7f36d600a000ull);
	assert_int_equal(pl.offset, 0x1000);
	assert_true(pl.exec);
	assert_false(pl.deleted);
	assert_int_equal(pl.path_len, strlen("/usr/lib/ld linux.so.2"));
	assert_memory_equal(pl.path, "/usr/lib/ld linux.so.2", pl.path_len);

	l = "1000-2000 rw-p 00000000 fe:00 12 /tmp/x (deleted)";
	assert_int_equal(procmaps_parse_line(l, &pl), 0);
	assert_false(pl.exec);
	assert_true(pl.deleted);
	assert_int_equal(pl.path_len, strlen("/tmp/x"));

	l = "1000-2000 r-xp 00000000 00:00 0 ";
	assert_int_equal(procmaps_parse_line(l, &pl), 0);
	assert_int_equal(pl.path_len, 0);
	assert_true(pl.path >= l && pl.path <= l + strlen(l));

	/* refused: a line that stops before its inode (found by fuzz_maps), an empty
	 * or inverted range, text that is no maps line */
	assert_int_equal(procmaps_parse_line("1000-2000 r--p 00000000 fe:IC", &pl), -EINVAL);
	assert_int_equal(procmaps_parse_line("2000-2000 r-xp 00000000 fe:00 1 /x", &pl), -EINVAL);
	assert_int_equal(procmaps_parse_line("3000-2000 r-xp 00000000 fe:00 1 /x", &pl), -EINVAL);
	assert_int_equal(procmaps_parse_line("hello", &pl), -EINVAL);
	assert_int_equal(procmaps_parse_line("", &pl), -EINVAL);
}

/* A copy of text whose NUL is the last byte before a page with no access: a read
 * past the end, even from libc's own code, is a SIGSEGV. Free with guard_free(). */
static char *guarded(const char *text, void **map)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = strlen(text) + 1;
	char *m = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	assert_true(m != MAP_FAILED && len <= (size_t)page);
	assert_int_equal(mprotect(m + page, (size_t)page, PROT_NONE), 0);
	memcpy(m + page - len, text, len);
	*map = m;
	return m + page - len;
}

static void guard_free(void *map)
{
	munmap(map, (size_t)sysconf(_SC_PAGESIZE) * 2);
}

/* Field 22 of /proc/PID/stat, by procmaps' parser and pyproc's: a comm with
 * spaces and ')', this process's own stat, and texts cut short, each placed
 * before an inaccessible page (guarded()): a read past its end crashes (found by
 * fuzz_procstat). */
static void test_parse_start_time(void **state)
{
	static const char *const cut[] = { "7)", "1 (a) ", "1 (a) S 1 2", "(" };
	char *self = test_read_file("/proc/self/stat"), *t;
	uint64_t v = 0;

	(void)state;
	t = strdup("4242 (py) thon) 3) S 1 4242 4242 0 -1 4194560 3162 0 0 0 12 4 0 0 20 0 1 0 "
		   "987654 23351296 2304");
	assert_int_equal(procmaps_parse_start_time(t, &v), 0);
	assert_int_equal(v, 987654);
	assert_int_equal(pyproc_parse_start_time(t), 987654);
	free(t);
	assert_non_null(self);
	assert_int_equal(procmaps_parse_start_time(self, &v), 0);
	assert_true(v > 0);
	assert_int_equal(pyproc_parse_start_time(self), v);
	free(self);
	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		void *map;

		t = guarded(cut[i], &map);
		assert_int_equal(procmaps_parse_start_time(t, &v),
				 strchr(t, ')') ? -EINVAL : -ESRCH);
		assert_int_equal(pyproc_parse_start_time(t), 0);
		guard_free(map);
	}
	t = strdup("");
	assert_int_equal(procmaps_parse_start_time(t, &v), -ESRCH); /* the process went away */
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_line),
		cmocka_unit_test(test_parse_start_time),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_child_after_exit),
		cmocka_unit_test(test_child_exiting),
		cmocka_unit_test(test_lazy_and_shared),
		cmocka_unit_test(test_child_used_is_kept),
		cmocka_unit_test(test_deleted_library),
		cmocka_unit_test(test_new_library),
		cmocka_unit_test(test_alive_idle),
		cmocka_unit_test(test_pid_reuse),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_unknown_and_special),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/* Tests of CPython discovery (pyproc) and offsets (pyoffsets) against the real
 * interpreters on the machine: every pyenv 3.9-3.13 build and Debian's python3.
 * A version that is absent is skipped with a printed reason. */
#include <glob.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/python/procmem.h"
#include "agent/python/pyoffsets.h"
#include "agent/python/pyproc.h"
#include "testutil.h"

/* Path of a CPython 3.<minor> (pyenv), or of Debian's python3 for minor 0. */
static bool find_python(unsigned minor, char *path, size_t len)
{
	const char *root = getenv("PYENV_ROOT");
	char pattern[PATH_MAX];
	glob_t g;
	bool found;

	if (minor == 0) {
		snprintf(path, len, "/usr/bin/python3");
		return access(path, X_OK) == 0;
	}
	snprintf(pattern, sizeof(pattern), "%s/versions/3.%u.*/bin/python3.%u",
		 root && *root ? root : "/root/.pyenv", minor, minor);
	found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc;
	if (found)
		snprintf(path, len, "%s", g.gl_pathv[0]);
	globfree(&g);
	return found;
}

/* Starts python printing its version hex and the address of PyCode_Type (from
 * Python itself: id(type(code)) is the type object's address), then waiting. */
static pid_t start_python(const char *python, const char *out)
{
	char *argv[] = { (char *)python, "-c",
			 "import sys, time, types; print(hex(sys.hexversion), id(types.CodeType), "
			 "flush=True); time.sleep(60)",
			 NULL };

	return test_spawn(argv, out, NULL);
}

static void check_version(unsigned minor)
{
	char python[PATH_MAX], dir[64], out[128];
	unsigned long hexversion = 0;
	unsigned long long code_type = 0;
	struct py_offsets table;
	struct pyproc *p = NULL;
	uint64_t deadline;
	char *text = NULL;
	pid_t pid;
	int err;

	if (!test_is_root() || !find_python(minor, python, sizeof(python))) {
		print_message("skipping CPython 3.%u: %s\n", minor,
			      test_is_root() ? "not installed" : "needs root");
		skip();
	}
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(out, sizeof(out), "%s/out", dir);
	pid = start_python(python, out);
	assert_true(test_wait_for_text(out, "0x", 30000));
	text = test_read_file(out);
	assert_int_equal(sscanf(text, "%lx %llu", &hexversion, &code_type), 2);

	/* The interpreter prints before it is fully idle; retry -EAGAIN briefly. */
	deadline = test_now_ms() + 10000;
	while ((err = pyproc__inspect(pid, &p)) == -EAGAIN && test_now_ms() < deadline)
		usleep(20000);
	assert_int_equal(err, 0);
	print_message("%s: CPython %s in %s\n", python, p->version, p->module);
	assert_int_equal(p->off.version, PY_VERSION_CODE(3, (hexversion >> 16) & 0xff));
	assert_int_equal(p->code_type, code_type);
	assert_int_equal(p->pid, pid);
	assert_true(p->start_time > 0);

	/* 3.13+: what the process says of itself equals the table. */
	assert_int_equal(py_offsets__from_table(p->off.version, &table), 0);
	table.walk.runtime = p->off.walk.runtime;
	table.walk.none_addr = p->off.walk.none_addr;
	assert_memory_equal(&table, &p->off, sizeof(table));

	free(p);
	kill(pid, SIGKILL);
	test_wait(pid, 10000);
	assert_int_equal(pyproc__inspect(pid, &p), -ESRCH);
	free(text);
	test_rm_rf(dir);
}

static void test_cpython_39(void **s)
{
	(void)s;
	check_version(9);
}
static void test_cpython_310(void **s)
{
	(void)s;
	check_version(10);
}
static void test_cpython_311(void **s)
{
	(void)s;
	check_version(11);
}
static void test_cpython_312(void **s)
{
	(void)s;
	check_version(12);
}
static void test_cpython_313(void **s)
{
	(void)s;
	check_version(13);
}
static void test_cpython_debian(void **s)
{
	(void)s;
	check_version(0);
}

static void test_not_python(void **state)
{
	struct pyproc *p = NULL;

	(void)state;
	assert_int_equal(pyproc__inspect(getpid(), &p), -ENOENT);
	assert_null(p);
}

/* A 3.13 _Py_DebugOffsets image built from the table's own numbers. */
static void make_debug_image(unsigned char *buf)
{
	static const struct {
		unsigned pos;
		uint64_t value;
	} fields[] = {
		{ 8, 0x030d00f0 }, { 24, 283320 }, { 40, 632 },	 { 48, 194968 }, { 64, 7264 },
		{ 72, 7344 },	   { 152, 304 },   { 168, 8 },	 { 184, 72 },	 { 192, 152 },
		{ 224, 80 },	   { 232, 8 },	   { 240, 0 },	 { 248, 56 },	 { 264, 70 },
		{ 272, 208 },	   { 280, 112 },   { 288, 120 }, { 296, 128 },	 { 304, 136 },
		{ 312, 68 },	   { 344, 200 },   { 352, 16 },	 { 360, 8 },	 { 368, 416 },
		{ 376, 24 },	   { 400, 32 },	   { 408, 24 },	 { 512, 40 },	 { 520, 16 },
		{ 528, 32 },	   { 536, 64 },	   { 544, 32 },	 { 552, 16 },	 { 560, 40 },
	};
	size_t i;

	memset(buf, 0, PY_DEBUG_OFFSETS_313_SIZE);
	memcpy(buf, "xdebugpy", 8);
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		memcpy(buf + fields[i].pos, &fields[i].value, 8);
}

static void test_debug_offsets_parse(void **state)
{
	unsigned char buf[PY_DEBUG_OFFSETS_313_SIZE];
	struct py_offsets parsed, table;
	uint64_t v;

	(void)state;
	make_debug_image(buf);
	assert_int_equal(py_offsets__from_debug(buf, sizeof(buf), &parsed), 0);
	assert_int_equal(py_offsets__from_table(PY_VERSION_CODE(3, 13), &table), 0);
	assert_memory_equal(&parsed, &table, sizeof(table));

	/* wrong cookie, short buffer */
	buf[0] = 'X';
	assert_int_equal(py_offsets__from_debug(buf, sizeof(buf), &parsed), -EINVAL);
	make_debug_image(buf);
	assert_int_equal(py_offsets__from_debug(buf, 100, &parsed), -EINVAL);
	/* an offset outside its struct */
	v = 999;
	memcpy(buf + 192, &v, 8); /* thread_id >= sizeof(PyThreadState) */
	assert_int_equal(py_offsets__from_debug(buf, sizeof(buf), &parsed), -EINVAL);
	/* 3.14's layout and free-threaded builds are refused, not misread */
	make_debug_image(buf);
	v = 0x030e00f0;
	memcpy(buf + 8, &v, 8);
	assert_int_equal(py_offsets__from_debug(buf, sizeof(buf), &parsed), -ENOTSUP);
	make_debug_image(buf);
	v = 1;
	memcpy(buf + 16, &v, 8);
	assert_int_equal(py_offsets__from_debug(buf, sizeof(buf), &parsed), -ENOTSUP);
}

static void test_table_versions(void **state)
{
	struct py_offsets o;
	unsigned minor;

	(void)state;
	for (minor = 9; minor <= 13; minor++) {
		assert_int_equal(py_offsets__from_table(PY_VERSION_CODE(3, minor), &o), 0);
		assert_int_equal(o.walk.version, PY_VERSION_CODE(3, minor));
		assert_int_equal(o.linetable_kind, minor == 9	 ? PY_LINETABLE_LNOTAB
						   : minor == 10 ? PY_LINETABLE_310
								 : PY_LINETABLE_LOCATIONS);
	}
	assert_int_equal(py_offsets__from_table(PY_VERSION_CODE(3, 8), &o), -ENOTSUP);
	assert_int_equal(py_offsets__from_table(PY_VERSION_CODE(3, 14), &o), -ENOTSUP);
	assert_int_equal(py_offsets__from_table(PY_VERSION_CODE(2, 7), &o), -ENOTSUP);
}

static void test_procmem_errors(void **state)
{
	uint64_t v = 0, here = 0x1122334455667788ull;

	(void)state;
	assert_int_equal(procmem_read_u64(getpid(), (uintptr_t)&here, &v), 0);
	assert_int_equal(v, here);
	assert_int_equal(procmem_read_u64(getpid(), 8, &v), -EFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_versions), cmocka_unit_test(test_debug_offsets_parse),
		cmocka_unit_test(test_procmem_errors), cmocka_unit_test(test_not_python),
		cmocka_unit_test(test_cpython_39),     cmocka_unit_test(test_cpython_310),
		cmocka_unit_test(test_cpython_311),    cmocka_unit_test(test_cpython_312),
		cmocka_unit_test(test_cpython_313),    cmocka_unit_test(test_cpython_debian),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Tests of CPython discovery (pyproc) and offsets (pyoffsets) against the real
 * interpreters on the machine: every pyenv 3.9-3.13 build and Debian's python3.
 * The offset table is compared with two references from outside it: the offsetof()
 * of each field as the interpreter's own headers define it (tests/ext/pyoffsets_ext.c,
 * compiled here per interpreter and imported into it), and, for 3.13, the
 * _Py_DebugOffsets the running process carries. A version that is absent is skipped
 * with a printed reason. */
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
		test_skip("CPython 3.%u: %s", minor,
			  test_is_root() ? "not installed" : "needs root");
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

/* Runs argv (argv[0] a path) with stdout and stderr to files, for up to
 * timeout_ms, as a registered child (test_spawn: its own process group, killed
 * with the test); returns the wait status, or -1. */
static int run(char *const argv[], const char *out, const char *err, unsigned timeout_ms)
{
	return test_wait(test_spawn(argv, out, err), timeout_ms);
}

/* The fields of struct py_offsets that are offsets or sizes, under the names
 * tests/ext/pyoffsets_ext.c reports them by. */
#define FIELD(m)                                                                                   \
	{                                                                                          \
#m, offsetof(struct py_offsets, m), sizeof(((struct py_offsets *)0)->m)            \
	}
#define WALK(m)                                                                                    \
	{                                                                                          \
#m, offsetof(struct py_offsets, walk.m), sizeof(((struct py_offsets *)0)->walk.m)  \
	}
static const struct {
	const char *name;
	size_t pos, size;
} table_fields[] = {
	WALK(runtime_interp_head),   WALK(interp_next),	     WALK(interp_threads_head),
	WALK(tstate_next),	     WALK(tstate_thread_id), WALK(tstate_top),
	WALK(cframe_current),	     WALK(frame_code),	     WALK(frame_previous),
	WALK(frame_lasti),	     WALK(frame_entry),	     WALK(frame_self),
	WALK(code_adaptive),	     FIELD(code_filename),   FIELD(code_name),
	FIELD(code_qualname),	     FIELD(code_linetable),  FIELD(code_firstlineno),
	FIELD(code_varnames),	     FIELD(ob_type),	     FIELD(var_size),
	FIELD(bytes_data),	     FIELD(tuple_items),     FIELD(type_name),
	FIELD(unicode_length),	     FIELD(unicode_state),   FIELD(unicode_ascii_data),
	FIELD(unicode_compact_data),
};
#define NFIELDS (sizeof(table_fields) / sizeof(table_fields[0]))

static uint64_t table_value(const struct py_offsets *o, size_t i)
{
	uint32_t v32 = 0;
	uint16_t v16 = 0;

	if (table_fields[i].size == sizeof(v16)) {
		memcpy(&v16, (const char *)o + table_fields[i].pos, sizeof(v16));
		return v16;
	}
	assert_int_equal(table_fields[i].size, sizeof(v32));
	memcpy(&v32, (const char *)o + table_fields[i].pos, sizeof(v32));
	return v32;
}

/* What the headers' module printed: "name value" lines. */
struct reported {
	char names[64][48];
	unsigned long long values[64];
	size_t n;
};

static bool reported_get(const struct reported *r, const char *name, unsigned long long *v)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->names[i], name)) {
			*v = r->values[i];
			return true;
		}
	return false;
}

static const char ext_driver[] = "import sys, types\n"
				 "sys.path.insert(0, sys.argv[1])\n"
				 "import _smolder_offsets\n"
				 "print('hexversion', sys.hexversion)\n"
				 "print('code_type_basicsize', types.CodeType.__basicsize__)\n"
				 "for k, v in sorted(_smolder_offsets.offsets().items()):\n"
				 "    print(k, v)\n";

/* The table for 3.<minor> (0: Debian's python3) against offsetof() in that
 * interpreter's own headers: compile tests/ext/pyoffsets_ext.c with them, import it
 * into the interpreter, compare every field. A field the headers do not have must be
 * 0 in the table (its "none"). */
static void check_headers(unsigned minor)
{
	char python[PATH_MAX], dir[64], out[128], err[128], so[160], inc[2][PATH_MAX];
	char probe[PATH_MAX + 64], line[256], *text;
	struct reported r = { .n = 0 };
	unsigned long long v, basicsize = 0, code_basicsize = 0, hexversion = 0, headers = 0;
	struct py_offsets table;
	size_t i, compared = 0;
	FILE *f;
	int st;

	if (!find_python(minor, python, sizeof(python))) {
		test_skip("CPython 3.%u: not installed", minor);
	}
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);

	/* where this interpreter keeps its headers, from the interpreter */
	{
		char *argv[] = { python, "-c",
				 "import sysconfig; print(sysconfig.get_path('include')); "
				 "print(sysconfig.get_path('platinclude'))",
				 NULL };

		st = run(argv, out, err, 30000);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		text = test_read_file(out);
		assert_non_null(text);
		assert_int_equal(sscanf(text, "%4095s %4095s", inc[0], inc[1]), 2);
		free(text);
	}
	snprintf(probe, sizeof(probe), "%s/internal/pycore_interp.h", inc[0]);
	if (access(probe, R_OK) != 0)
		fail_msg("%s has no internal headers (%s): they are this check's reference; "
			 "install python3-dev (make deps) or rebuild the pyenv version",
			 python, probe);

	/* compile the module against those headers alone */
	snprintf(so, sizeof(so), "%s/_smolder_offsets.so", dir);
	{
		char i0[PATH_MAX + 2], i1[PATH_MAX + 2];
		char *argv[] = { "/usr/bin/cc",
				 "-shared",
				 "-fPIC",
				 "-O0",
				 "-Wall",
				 "-DPy_BUILD_CORE_MODULE",
				 i0,
				 i1,
				 "-o",
				 so,
				 "tests/ext/pyoffsets_ext.c",
				 NULL };

		snprintf(i0, sizeof(i0), "-I%s", inc[0]);
		snprintf(i1, sizeof(i1), "-I%s", inc[1]);
		st = run(argv, out, err, 120000);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			text = test_read_file(err);
			fail_msg("cc against %s failed:\n%s", inc[0], text ? text : "");
		}
	}

	/* import it into the interpreter whose headers these are */
	{
		char *argv[] = { python, "-c", (char *)ext_driver, dir, NULL };

		st = run(argv, out, err, 30000);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			text = test_read_file(err);
			fail_msg("%s could not import the offsets module:\n%s", python,
				 text ? text : "");
		}
	}
	f = fopen(out, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) && r.n < 64)
		if (sscanf(line, "%47s %llu", r.names[r.n], &r.values[r.n]) == 2)
			r.n++;
	fclose(f);

	/* seen before comparing: both versions, both code sizes, and 24 or more fields
	 * (3.9/3.10 have 24 of them, 3.11 26) */
	assert_true(reported_get(&r, "hexversion", &hexversion));
	assert_true(reported_get(&r, "headers_version", &headers));
	assert_true(reported_get(&r, "code_type_basicsize", &basicsize));
	assert_true(reported_get(&r, "code_basicsize", &code_basicsize));
	assert_true(r.n >= 4 + 24);
	print_message("%s: CPython %llx, %zu fields from %s\n", python, hexversion, r.n - 4,
		      inc[0]);
	if (minor)
		assert_int_equal((hexversion >> 16) & 0xff, minor);
	minor = (hexversion >> 16) & 0xff;
	/* these headers describe this interpreter: the same release, and its code type
	 * has their size */
	assert_int_equal(headers, hexversion);
	assert_int_equal(code_basicsize, basicsize);

	assert_int_equal(py_offsets__from_table(PY_VERSION_CODE(3, minor), &table), 0);
	for (i = 0; i < NFIELDS; i++) {
		uint64_t want = table_value(&table, i);

		if (!reported_get(&r, table_fields[i].name, &v)) {
			if (want != 0)
				fail_msg("3.%u: the table has %s = %llu; the headers have no such "
					 "field",
					 minor, table_fields[i].name, (unsigned long long)want);
			continue;
		}
		if (v != want)
			fail_msg("3.%u: %s is %llu in the headers, %llu in the table", minor,
				 table_fields[i].name, v, (unsigned long long)want);
		compared++;
	}
	/* every field the module reported was compared (none unknown to this test) */
	assert_int_equal(compared, r.n - 4);
	/* the walk's kinds follow from which fields exist */
	assert_int_equal(table.walk.top_kind,
			 reported_get(&r, "cframe_current", &v) ? PY_TOP_CFRAME : PY_TOP_DIRECT);
	assert_int_equal(table.walk.lasti_kind == PY_LASTI_POINTER,
			 reported_get(&r, "code_adaptive", &v));
	assert_int_equal(table.walk.entry_kind == PY_ENTRY_NONE,
			 !reported_get(&r, "frame_entry", &v));
	test_rm_rf(dir);
}

static void test_headers_39(void **s)
{
	(void)s;
	check_headers(9);
}
static void test_headers_310(void **s)
{
	(void)s;
	check_headers(10);
}
static void test_headers_311(void **s)
{
	(void)s;
	check_headers(11);
}
static void test_headers_312(void **s)
{
	(void)s;
	check_headers(12);
}
static void test_headers_313(void **s)
{
	(void)s;
	check_headers(13);
}
static void test_headers_debian(void **s)
{
	(void)s;
	check_headers(0);
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
		cmocka_unit_test(test_headers_39),     cmocka_unit_test(test_headers_310),
		cmocka_unit_test(test_headers_311),    cmocka_unit_test(test_headers_312),
		cmocka_unit_test(test_headers_313),    cmocka_unit_test(test_headers_debian),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

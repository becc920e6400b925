/* Tests of agent/symbols/ksyms: synthetic kallsyms files written to a temporary directory
 * (unsorted lines, module suffixes, data symbols, aliases, over-long lines, all-zero
 * addresses) and, as root, the real /proc/kallsyms checked against a separate scan
 * of the file for well-known functions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/ksyms.h"
#include "testutil.h"

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/smolder-ksyms-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to tmpdir/name and returns the path (static buffer). */
static const char *write_file(const char *name, const char *text)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void expect_sym(const struct ksyms *k, uint64_t addr, const char *name, uint64_t off)
{
	uint64_t got = ~0ull;
	const char *s = ksyms__lookup(k, addr, &got);

	assert_non_null(s);
	assert_string_equal(s, name);
	assert_int_equal(got, off);
}

static void test_synthetic(void **state)
{
	const char *path = write_file("kallsyms", "ffffffff81000200 W weak_c\n"
						  "ffffffff81000100 T func_b\n"
						  "ffffffffc0001000 t mod_func\t[mymod]\n"
						  "ffffffff81002000 D some_data\n"
						  "ffffffff81000000 T _stext\n"
						  "ffffffff81000050 t local_a\n"
						  "ffffffffc0000f00 T mod_init\t[mymod]\n"
						  "ffffffff81000300 r rodata_x\n"
						  "ffffffff81000080 w weak_local\n"
						  "0000000000000000 A fixed_percpu_data\n"
						  "this line is not kallsyms\n"
						  "ffffffff81000400 b bss_y\n");
	struct ksyms *k = NULL;

	(void)state;
	assert_int_equal(ksyms__load(path, &k), 0);
	assert_non_null(k);
	/* _stext local_a weak_local func_b weak_c mod_init mod_func */
	assert_int_equal(ksyms__count(k), 7);

	assert_null(ksyms__lookup(k, 0xffffffff80ffffffull, NULL));
	expect_sym(k, 0xffffffff81000000ull, "_stext", 0);
	expect_sym(k, 0xffffffff81000060ull, "local_a", 0x10);
	expect_sym(k, 0xffffffff81000080ull, "weak_local", 0);
	expect_sym(k, 0xffffffff81000120ull, "func_b", 0x20);
	/* data symbols are not kept: their addresses fall to the text symbol below */
	expect_sym(k, 0xffffffff81000300ull, "weak_c", 0x100);
	expect_sym(k, 0xffffffff81002000ull, "weak_c", 0x1e00);
	/* module symbols lose the "\t[mymod]" suffix */
	expect_sym(k, 0xffffffffc0000f04ull, "mod_init", 4);
	expect_sym(k, 0xffffffffc0001010ull, "mod_func", 0x10);
	/* offset pointer is optional */
	assert_string_equal(ksyms__lookup(k, 0xffffffff81000101ull, NULL), "func_b");
	ksyms__free(k);
}

/* Several names at one address keep one: non-weak, global, fewer underscores. */
static void test_aliases(void **state)
{
	const char *path = write_file("aliases", "ffffffff81000000 W weak_alias\n"
						 "ffffffff81000000 t local_alias\n"
						 "ffffffff81000000 T __pi__text\n"
						 "ffffffff81000000 T _text\n"
						 "ffffffff81000000 T _stext\n"
						 "ffffffff81000010 T __entry\n"
						 "ffffffff81000010 t entry\n");
	struct ksyms *k = NULL;

	(void)state;
	assert_int_equal(ksyms__load(path, &k), 0);
	assert_int_equal(ksyms__count(k), 2);
	expect_sym(k, 0xffffffff81000004ull, "_stext", 4);
	expect_sym(k, 0xffffffff81000010ull, "__entry", 0);
	ksyms__free(k);
}

static void test_all_zero_is_eperm(void **state)
{
	const char *path = write_file("restricted", "0000000000000000 T _stext\n"
						    "0000000000000000 t local_a\n"
						    "0000000000000000 D some_data\n");
	struct ksyms *k = (struct ksyms *)0x1;

	(void)state;
	assert_int_equal(ksyms__load(path, &k), -EPERM);
	assert_ptr_equal(k, (struct ksyms *)0x1); /* untouched on failure */
}

static void test_missing_file(void **state)
{
	char path[128];
	struct ksyms *k = NULL;

	(void)state;
	snprintf(path, sizeof(path), "%s/does-not-exist", tmpdir);
	assert_int_equal(ksyms__load(path, &k), -ENOENT);
	assert_null(k);
}

/* An over-long line is skipped whole: its tail must not parse as a symbol, and the
 * next line must. */
static void test_long_line(void **state)
{
	size_t n = 5000, len;
	char *text = malloc(n + 200), *p;
	struct ksyms *k = NULL;
	const char *path;

	(void)state;
	assert_non_null(text);
	p = text;
	p += sprintf(p, "ffffffff81000000 T first\n");
	p += sprintf(p, "ffffffff81000100 T ");
	memset(p, 'x', n);
	p += n;
	/* what a reader that splits lines blindly would see as a symbol */
	p += sprintf(p, " ffffffff81000200 T tail_of_long\n");
	p += sprintf(p, "ffffffff81000300 T after_long\n");
	len = (size_t)(p - text);
	assert_true(len < n + 200);
	path = write_file("long", text);
	free(text);

	assert_int_equal(ksyms__load(path, &k), 0);
	assert_int_equal(ksyms__count(k), 2);
	expect_sym(k, 0xffffffff81000200ull, "first", 0x200);
	expect_sym(k, 0xffffffff81000300ull, "after_long", 0);
	ksyms__free(k);
}

static void test_empty_file(void **state)
{
	const char *path = write_file("empty", "");
	struct ksyms *k = NULL;

	(void)state;
	assert_int_equal(ksyms__load(path, &k), 0);
	assert_int_equal(ksyms__count(k), 0);
	assert_null(ksyms__lookup(k, 0xffffffff81000000ull, NULL));
	ksyms__free(k);
	ksyms__free(NULL);
}

/* Finds name among the text symbols of /proc/kallsyms by a plain scan. */
static int scan_kallsyms(const char *name, uint64_t *addr)
{
	char line[1024], type, sym[512];
	unsigned long long a;
	FILE *f = fopen("/proc/kallsyms", "r");
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %511s", &a, &type, sym) != 3)
			continue;
		if (strchr("tTwW", type) && !strcmp(sym, name)) {
			*addr = a;
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

/* Does any text symbol of /proc/kallsyms at addr have this name? */
static int kallsyms_has(uint64_t addr, const char *name)
{
	char line[1024], type, sym[512];
	unsigned long long a;
	FILE *f = fopen("/proc/kallsyms", "r");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %511s", &a, &type, sym) == 3 && a == addr &&
		    strchr("tTwW", type) && !strcmp(sym, name))
			found = 1;
	fclose(f);
	return found;
}

static void test_real_kallsyms(void **state)
{
	static const char *const wanted[] = { "schedule", "vfs_read", "do_nanosleep",
					      "ksys_write" };
	struct ksyms *k = NULL;
	const char *name;
	unsigned checked = 0;
	uint64_t addr, off;
	size_t i;
	int err;

	(void)state;
	if (geteuid() != 0)
		test_skip("reading kernel addresses from /proc/kallsyms needs root");
	err = ksyms__load("/proc/kallsyms", &k);
	if (err == -EPERM)
		test_skip("/proc/kallsyms refused: %s", strerror(-err));
	assert_int_equal(err, 0);
	assert_true(ksyms__count(k) > 1000);
	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		if (!scan_kallsyms(wanted[i], &addr))
			continue;
		name = ksyms__lookup(k, addr, &off);
		assert_non_null(name);
		/* the name itself, or an alias the kernel lists at the same address */
		assert_true(kallsyms_has(addr, name));
		assert_int_equal(off, 0);
		name = ksyms__lookup(k, addr + 1, &off);
		assert_true(kallsyms_has(addr, name));
		assert_int_equal(off, 1);
		checked++;
	}
	assert_true(checked > 0);
	ksyms__free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synthetic),	  cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_all_zero_is_eperm), cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_long_line),	  cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_real_kallsyms),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

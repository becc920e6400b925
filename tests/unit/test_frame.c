/* The frame grammar (common/frame.h): every kind parses from its text and prints
 * back to the same bytes; text that only resembles a kind stays native. The
 * expectations are the README's grammar written out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/frame.h"

static void check(const char *text, bool first, enum frame_kind kind, const char *name,
		  const char *file, uint32_t line)
{
	char buf[256];
	struct frame f;

	frame_parse(text, strlen(text), first, &f);
	if (f.kind != (uint32_t)kind)
		fail_msg("'%s': kind %u, want %d", text, f.kind, kind);
	assert_int_equal(f.name_len, strlen(name));
	assert_memory_equal(f.name, name, f.name_len);
	assert_int_equal(f.file_len, strlen(file));
	assert_memory_equal(f.file, file, f.file_len);
	assert_int_equal(f.line, line);
	/* and back: the same bytes, and the length snprintf-like */
	assert_int_equal(frame_format(&f, buf, sizeof(buf)), strlen(text));
	assert_string_equal(buf, text);
}

static void test_kinds(void **state)
{
	(void)state;
	check("python3", true, FRAME_PROCESS, "python3", "", 0);
	check("x_[k]", true, FRAME_PROCESS, "x_[k]", "", 0); /* first is always the process */
	check("main", false, FRAME_NATIVE, "main", "", 0);
	check("libc.so.6+0x1234", false, FRAME_NATIVE, "libc.so.6+0x1234", "", 0);
	check("[unknown]", false, FRAME_NATIVE, "[unknown]", "", 0);
	check("do_syscall_64_[k]", false, FRAME_KERNEL, "do_syscall_64", "", 0);
	check("_[k]", false, FRAME_KERNEL, "", "", 0);
	check("f (a.py:3)", false, FRAME_PYTHON, "f", "a.py", 3);
	check("<lambda> (/a b/c.py:3)", false, FRAME_PYTHON, "<lambda>", "/a b/c.py", 3);
	/* split at the last " (": ambiguous text reads one way, and prints back */
	check("C.m.<locals>.g (x) (/a (b)/c.py:40)", false, FRAME_PYTHON, "C.m.<locals>.g (x) (/a",
	      "b)/c.py", 40);
	check("f (C:\\x.py:4294967294)", false, FRAME_PYTHON, "f", "C:\\x.py", 4294967294u);
	check("mod (m.py:0)", false, FRAME_PYTHON, "mod", "m.py", 0);
	check("f (a.py:1)_[k]", false, FRAME_KERNEL, "f (a.py:1)", "", 0);
	check("JS:*hot /srv/app.js:2:14_[j]", false, FRAME_JIT, "JS:*hot /srv/app.js:2:14", "", 0);
	check("_[j]", false, FRAME_JIT, "", "", 0);
	check("x_[j]", true, FRAME_PROCESS, "x_[j]", "", 0);
	check("f_[k]_[j]", false, FRAME_JIT, "f_[k]", "", 0); /* the last suffix tells */
	check("f_[j]_[k]", false, FRAME_KERNEL, "f_[j]", "", 0);
	check("f (a.py:1)_[j]", false, FRAME_JIT, "f (a.py:1)", "", 0);
}

static void test_lookalikes_are_native(void **state)
{
	static const char *const native[] = {
		"a (b)",
		"a (b:)",
		"a (b:x1)",
		"a (b:012)",
		"a (b:4294967296)",
		"a(b:1)",
		"operator() (int)",
		" (a.py:3)",
		"f (:3)",
		"",
		"f (a.py:-1)",
		"f (a.py:+1)",
		"f (a.py:4294967295)", /* FRAME_NO_LINE is no line number */
		"f (a.py:)",
		"f (a.py:012)",
		"f (int)", /* no line: the file must look like one */
		"f(void (*)(int))",
		"f (a (b).py)",
		"f (<x)",
		"f ()",
		"std::vector<int>::push_back(int const&)",
		"f_[J]",
		"f[j]",
		"f_[j] ",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(native) / sizeof(native[0]); i++)
		check(native[i], false, FRAME_NATIVE, native[i], "", 0);
}

/* Function granularity: a Python frame without a line prints "QUALNAME (FILE)" and
 * reads back so, files with ':' and names with " (" included. */
static void test_no_line(void **state)
{
	struct frame f = frame_make(FRAME_PYTHON, "handle_request", "/srv/app.py", FRAME_NO_LINE);
	char buf[64];

	(void)state;
	check("f (a.py)", false, FRAME_PYTHON, "f", "a.py", FRAME_NO_LINE);
	check("f (a:b.py)", false, FRAME_PYTHON, "f", "a:b.py", FRAME_NO_LINE);
	check("f (C:\\x.py)", false, FRAME_PYTHON, "f", "C:\\x.py", FRAME_NO_LINE);
	check("<module> (<string>)", false, FRAME_PYTHON, "<module>", "<string>", FRAME_NO_LINE);
	check("<module> (<frozen importlib._bootstrap>)", false, FRAME_PYTHON, "<module>",
	      "<frozen importlib._bootstrap>", FRAME_NO_LINE);
	check("C.m.<locals>.g (x) (/srv/a.py)", false, FRAME_PYTHON, "C.m.<locals>.g (x)",
	      "/srv/a.py", FRAME_NO_LINE);
	check("f (/a b/c.py:x)", false, FRAME_PYTHON, "f", "/a b/c.py:x", FRAME_NO_LINE);
	check("f (a.py)_[k]", false, FRAME_KERNEL, "f (a.py)", "", 0);
	assert_int_equal(frame_format(&f, buf, sizeof(buf)),
			 strlen("handle_request (/srv/app.py)"));
	assert_string_equal(buf, "handle_request (/srv/app.py)");
	/* a file that ends like a line cannot be told from one: documented */
	f = frame_make(FRAME_PYTHON, "f", "a:12", FRAME_NO_LINE);
	frame_format(&f, buf, sizeof(buf));
	check(buf, false, FRAME_PYTHON, "f", "a", 12);
}

static void test_placeholder(void **state)
{
	static const char *const yes[] = { "[unknown]", "[python]", "[python: truncated]",
					   "[no unwind table]", "[]" };
	static const char *const no[] = { "unknown", "[unknown", "unknown]", "[", "x[y]" };
	struct frame f;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		f = frame_make(FRAME_NATIVE, yes[i], NULL, 0);
		assert_true(frame_is_placeholder(&f));
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		f = frame_make(FRAME_NATIVE, no[i], NULL, 0);
		assert_false(frame_is_placeholder(&f));
	}
	f = frame_make(FRAME_KERNEL, "[unknown]", NULL, 0);
	assert_false(frame_is_placeholder(&f));
	f = frame_make(FRAME_PROCESS, "[unknown]", NULL, 0);
	assert_false(frame_is_placeholder(&f));
}

static void test_format_truncates(void **state)
{
	struct frame f = frame_make(FRAME_PYTHON, "handler", "/srv/app.py", 1234);
	char buf[8];

	(void)state;
	assert_int_equal(frame_format(&f, buf, sizeof(buf)), strlen("handler (/srv/app.py:1234)"));
	assert_string_equal(buf, "handler");
	assert_int_equal(frame_format(&f, NULL, 0), strlen("handler (/srv/app.py:1234)"));
	f = frame_make(FRAME_KERNEL, "schedule", NULL, 0);
	assert_int_equal(frame_format(&f, buf, sizeof(buf)), strlen("schedule_[k]"));
	assert_string_equal(buf, "schedul");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_lookalikes_are_native),
		cmocka_unit_test(test_no_line),
		cmocka_unit_test(test_placeholder),
		cmocka_unit_test(test_format_truncates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

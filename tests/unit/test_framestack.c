/* Unit tests of the agent's stack of frames (agent/framestack.h): kinds kept as
 * pushed, names sanitized and copied, the fixed capacity, and the folded line
 * printed from it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/framestack.h"
#include "common/folded.h"
#include "testutil.h"

static struct frame_stack st; /* 36 KiB: off the test's stack */
static struct folded_stack text;

static void assert_frame(const struct frame *f, enum frame_kind kind, const char *name,
			 const char *file, uint32_t line)
{
	assert_int_equal(f->kind, kind);
	assert_int_equal(f->name_len, strlen(name));
	assert_memory_equal(f->name, name, f->name_len);
	assert_int_equal(f->file_len, strlen(file));
	assert_memory_equal(f->file, file, f->file_len);
	assert_int_equal(f->line, line);
}

/* A native name that reads as Python, kernel or JIT text stays native. */
static void test_kinds_kept(void **state)
{
	struct frame py = frame_make(FRAME_PYTHON, "run", "/app/main.py", 7);
	struct frame k = frame_make(FRAME_KERNEL, "do_syscall_64", NULL, 0);
	char name[64];

	(void)state;
	frame_stack__reset(&st);
	frame_stack__push_native(&st, "app");
	frame_stack__push_native(&st, "handler (app.py:12)");
	frame_stack__push_native(&st, "poll_[k]");
	frame_stack__push(&st, &py);
	strcpy(name, "reused");
	py = frame_make(FRAME_PYTHON, name, "x.py", FRAME_NO_LINE);
	frame_stack__push(&st, &py);
	strcpy(name, "changed"); /* the stack holds its own copy */
	frame_stack__push(&st, &k);
	assert_int_equal(st.nframes, 6);
	assert_false(st.truncated);
	assert_frame(&st.frames[0], FRAME_PROCESS, "app", "", 0);
	assert_frame(&st.frames[1], FRAME_NATIVE, "handler (app.py:12)", "", 0);
	assert_frame(&st.frames[2], FRAME_NATIVE, "poll_[k]", "", 0);
	assert_frame(&st.frames[3], FRAME_PYTHON, "run", "/app/main.py", 7);
	assert_frame(&st.frames[4], FRAME_PYTHON, "reused", "x.py", FRAME_NO_LINE);
	assert_frame(&st.frames[5], FRAME_KERNEL, "do_syscall_64", "", 0);
}

/* ';' and control characters never reach a name; a later "process" is native. */
static void test_sanitized(void **state)
{
	struct frame py = frame_make(FRAME_PYTHON, "f;g", "/a\nb.py", 3);
	struct frame proc = frame_make(FRAME_PROCESS, "p2", NULL, 0);
	char longname[FRAME_MAX_NAME_LEN + 100];

	(void)state;
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	frame_stack__reset(&st);
	frame_stack__push_native(&st, "a;b\tc");
	frame_stack__push(&st, &py);
	frame_stack__push(&st, &proc);
	frame_stack__push_native(&st, longname);
	assert_int_equal(st.nframes, 4);
	assert_frame(&st.frames[0], FRAME_PROCESS, "a:b?c", "", 0);
	assert_frame(&st.frames[1], FRAME_PYTHON, "f:g", "/a?b.py", 3);
	assert_frame(&st.frames[2], FRAME_NATIVE, "p2", "", 0);
	assert_int_equal(st.frames[3].name_len, FRAME_MAX_NAME_LEN);
}

/* Past its capacity (frames or bytes) a stack keeps its root end whole. */
static void test_truncated(void **state)
{
	char name[1000];
	size_t i, kept;

	(void)state;
	frame_stack__reset(&st);
	for (i = 0; i < FRAME_STACK_MAX_FRAMES + 10; i++)
		frame_stack__push_native(&st, "f");
	assert_int_equal(st.nframes, FRAME_STACK_MAX_FRAMES);
	assert_true(st.truncated);

	memset(name, 'y', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	frame_stack__reset(&st);
	for (i = 0; i < 40; i++)
		frame_stack__push_native(&st, name);
	kept = st.nframes;
	assert_true(st.truncated);
	assert_int_equal(kept, FRAME_STACK_BYTES / sizeof(name));
	frame_stack__push_native(&st, "z"); /* fits, but comes after a dropped frame */
	assert_int_equal(st.nframes, kept);
}

/* The folded line: Python lines kept or left out; other names printed as they are. */
static void test_fold(void **state)
{
	struct frame py = frame_make(FRAME_PYTHON, "run", "main.py", 7);
	struct frame k = frame_make(FRAME_KERNEL, "do_syscall_64", NULL, 0);

	(void)state;
	frame_stack__reset(&st);
	frame_stack__push_native(&st, "app");
	frame_stack__push_native(&st, "handler (app.py:12)");
	frame_stack__push(&st, &py);
	frame_stack__push(&st, &k);
	frame_stack__fold(&st, true, &text);
	assert_string_equal(text.buf, "app;handler (app.py:12);run (main.py:7);do_syscall_64_[k]");
	assert_false(text.truncated);
	frame_stack__fold(&st, false, &text);
	assert_string_equal(text.buf, "app;handler (app.py:12);run (main.py);do_syscall_64_[k]");
	/* the frames are unchanged by a fold */
	assert_int_equal(st.frames[2].line, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_kept),
		cmocka_unit_test(test_sanitized),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_fold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

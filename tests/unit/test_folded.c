/* Unit tests of the folded-stack builder, aggregate, writer and reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/folded.h"
#include "common/frame.h"
#include "testutil.h"

static void test_push_joins_and_sanitizes(void **state)
{
	struct folded_stack st;
	struct frame kernel = frame_make(FRAME_KERNEL, "do_syscall_64", NULL, 0);
	struct frame py = frame_make(FRAME_PYTHON, "f;g", "/a\nb.py", 7);

	(void)state;
	folded_stack__reset(&st);
	folded_stack__push_native(&st, "comm");
	folded_stack__push_native(&st, "a;b");
	folded_stack__push_native(&st, "line\nbreak\ttab");
	folded_stack__push(&st, &kernel);
	folded_stack__push(&st, &py);
	assert_string_equal(st.buf, "comm;a:b;line?break?tab;do_syscall_64_[k];f:g (/a?b.py:7)");
	assert_int_equal(st.len, strlen(st.buf));
	assert_false(st.truncated);
}

static void test_push_truncates_without_overflow(void **state)
{
	struct folded_stack st;
	char frame[1000];
	int i;

	(void)state;
	memset(frame, 'x', sizeof(frame) - 1);
	frame[sizeof(frame) - 1] = '\0';
	folded_stack__reset(&st);
	for (i = 0; i < 100; i++)
		folded_stack__push_native(&st, frame);
	assert_true(st.truncated);
	assert_true(st.len < sizeof(st.buf));
	assert_int_equal(strlen(st.buf), st.len);
	/* only whole frames were kept */
	assert_int_equal(st.len % (sizeof(frame)), sizeof(frame) - 1);
}

static void test_aggregate_and_write_sorted(void **state)
{
	struct folded *f;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;

	(void)state;
	assert_int_equal(folded__new(&f), 0);
	assert_int_equal(folded__add(f, "p;main;b", 2), 0);
	assert_int_equal(folded__add(f, "p;main;a", 5), 0);
	assert_int_equal(folded__add(f, "p;main;b", 3), 0);
	assert_int_equal(folded__size(f), 2);
	assert_int_equal(folded__total(f), 10);
	assert_int_equal(folded__count(f, "p;main;b"), 5);
	assert_int_equal(folded__count(f, "p;main"), 0);

	mem = open_memstream(&buf, &len);
	assert_int_equal(folded__write(f, mem), 0);
	fclose(mem);
	assert_string_equal(buf, "p;main;a 5\np;main;b 5\n");
	free(buf);
	folded__free(f);
}

static void test_round_trip_through_file(void **state)
{
	char dir[64], path[128];
	struct folded *a, *b;
	size_t bad = 0;
	FILE *in;

	(void)state;
	assert_non_null(test_mkdtemp(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/out.folded", dir);
	assert_int_equal(folded__new(&a), 0);
	assert_int_equal(folded__new(&b), 0);
	assert_int_equal(folded__add(a, "python;Worker.run (/srv/w.py:42);zlib_compress", 7), 0);
	assert_int_equal(folded__add(a, "k;schedule_[k]", 1), 0);
	assert_int_equal(folded__write_file(a, path), 0);

	in = fopen(path, "r");
	assert_non_null(in);
	assert_int_equal(folded__read(b, in, &bad), 0);
	fclose(in);
	assert_int_equal(folded__size(b), 2);
	assert_int_equal(folded__count(b, "python;Worker.run (/srv/w.py:42);zlib_compress"), 7);
	assert_int_equal(folded__count(b, "k;schedule_[k]"), 1);

	/* merge doubles the counts */
	assert_int_equal(folded__merge(b, a), 0);
	assert_int_equal(folded__total(b), 16);
	folded__free(a);
	folded__free(b);
	test_rm_rf(dir);
}

static void test_read_rejects_bad_lines(void **state)
{
	const char *bad_inputs[] = {
		"a;b 1\nno-count-here\n",
		"a;b 1\na;b x\n",
		"a;b 1\n 5\n",
		"a;b 1\na;b 99999999999999999999999\n",
	};
	size_t i, bad;

	(void)state;
	for (i = 0; i < sizeof(bad_inputs) / sizeof(bad_inputs[0]); i++) {
		FILE *in = fmemopen((void *)bad_inputs[i], strlen(bad_inputs[i]), "r");
		struct folded *f;

		assert_int_equal(folded__new(&f), 0);
		bad = 0;
		assert_int_equal(folded__read(f, in, &bad), -EINVAL);
		assert_int_equal(bad, 2);
		fclose(in);
		folded__free(f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_joins_and_sanitizes),
		cmocka_unit_test(test_push_truncates_without_overflow),
		cmocka_unit_test(test_aggregate_and_write_sorted),
		cmocka_unit_test(test_round_trip_through_file),
		cmocka_unit_test(test_read_rejects_bad_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

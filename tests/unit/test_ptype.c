/* Unit tests for common/ptype.c: the table's names are unique and found again,
 * the agent's two types keep the units their stored data was written in, and
 * only snapshot types (memory and goroutines in use) are gauges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/ptype.h"

static void test_names_unique_and_found(void **state)
{
	(void)state;
	assert_true(ptype__count() > 2);
	for (size_t i = 0; i < ptype__count(); i++) {
		const struct ptype *t = ptype__at(i);

		assert_non_null(t);
		assert_ptr_equal(ptype__find(t->name), t);
		assert_non_null(t->title);
		for (size_t j = i + 1; j < ptype__count(); j++)
			assert_string_not_equal(t->name, ptype__at(j)->name);
	}
	assert_null(ptype__at(ptype__count()));
	assert_null(ptype__find(NULL));
	assert_null(ptype__find(""));
	assert_null(ptype__find("CPU"));
	assert_null(ptype__find("cpu "));
}

static void test_agent_types(void **state)
{
	(void)state;
	/* stored data of these two predates the table: their units cannot change */
	assert_ptr_equal(ptype__at(0), ptype__find("cpu"));
	assert_int_equal(ptype__find("cpu")->unit, PTYPE_UNIT_SAMPLES);
	assert_int_equal(ptype__find("offcpu")->unit, PTYPE_UNIT_NANOSECONDS);
	assert_string_equal(ptype__unit_name(ptype__find("offcpu")->unit), "nanoseconds");
}

static void test_gauges(void **state)
{
	static const char *const gauges[] = { "inuse_space", "inuse_objects", "goroutines" };
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++)
		assert_true(ptype__is_gauge(ptype__find(gauges[i])));
	for (size_t i = 0; i < ptype__count(); i++)
		n += ptype__is_gauge(ptype__at(i));
	assert_int_equal(n, sizeof(gauges) / sizeof(gauges[0]));
	assert_false(ptype__is_gauge(NULL));
	assert_string_equal(ptype__unit_name(ptype__find("inuse_space")->unit), "bytes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_unique_and_found),
		cmocka_unit_test(test_agent_types),
		cmocka_unit_test(test_gauges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

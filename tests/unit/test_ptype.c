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
	assert_true(ptype__count() <= PTYPE_MAX);
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

static void expect(enum ptype_unit u, double v, enum ptype_style st, const char *want)
{
	char buf[64];

	assert_string_equal(ptype__format(u, v, st, buf, sizeof(buf)), want);
}

/* One rule for every answer: time and memory scaled to three digits, counts whole
 * with separators in text and bare in a table cell. */
static void test_format(void **state)
{
	char small[6];

	(void)state;
	expect(PTYPE_UNIT_BYTES, 200.0 * 1024 * 1024, PTYPE_TEXT, "200 MiB");
	expect(PTYPE_UNIT_BYTES, 200.0 * 1024 * 1024, PTYPE_CELL, "200MiB");
	expect(PTYPE_UNIT_BYTES, 512, PTYPE_TEXT, "512 B");
	expect(PTYPE_UNIT_BYTES, 1536, PTYPE_TEXT, "1.50 KiB");
	expect(PTYPE_UNIT_BYTES, 1023.6 * 1024, PTYPE_TEXT, "1.00 MiB");
	expect(PTYPE_UNIT_BYTES, 3.0 * 1024 * 1024 * 1024, PTYPE_TEXT, "3.00 GiB");
	expect(PTYPE_UNIT_NANOSECONDS, 850, PTYPE_CELL, "850ns");
	expect(PTYPE_UNIT_NANOSECONDS, 850000, PTYPE_CELL, "850us");
	expect(PTYPE_UNIT_NANOSECONDS, 850000, PTYPE_TEXT, "850 \u00b5s");
	expect(PTYPE_UNIT_NANOSECONDS, 12.34e6, PTYPE_TEXT, "12.3 ms");
	expect(PTYPE_UNIT_NANOSECONDS, 4.2e9, PTYPE_CELL, "4.20s");
	expect(PTYPE_UNIT_NANOSECONDS, 1234e9, PTYPE_CELL, "1234s");
	expect(PTYPE_UNIT_SAMPLES, 12345, PTYPE_TEXT, "12,345 samples");
	expect(PTYPE_UNIT_SAMPLES, 12345, PTYPE_CELL, "12345");
	expect(PTYPE_UNIT_OBJECTS, 2.5, PTYPE_TEXT, "2.50 objects");
	expect(PTYPE_UNIT_COUNT, 1000000, PTYPE_TEXT, "1,000,000");
	expect(PTYPE_UNIT_COUNT, -1, PTYPE_TEXT, "0");
	/* truncated, never overrun */
	assert_string_equal(ptype__format(PTYPE_UNIT_BYTES, 1e15, PTYPE_TEXT, small, sizeof(small)),
			    "909 T");
}

static void test_list(void **state)
{
	char buf[512], tiny[8];

	(void)state;
	ptype__list(buf, sizeof(buf));
	assert_true(strncmp(buf, "cpu, offcpu, ", 13) == 0);
	assert_non_null(strstr(buf, "inuse_space"));
	assert_string_equal(ptype__list(tiny, sizeof(tiny)), "cpu, of");
	assert_string_equal(ptype__agg_name(PTYPE_AGG_AVERAGE), "average");
	assert_string_equal(ptype__agg_name(ptype__find("alloc_space")->agg), "sum");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_unique_and_found),
		cmocka_unit_test(test_agent_types),
		cmocka_unit_test(test_gauges),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

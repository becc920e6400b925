/* Tests of common/prom, the Prometheus text writer both /metrics endpoints use:
 * a label value's backslash, double quote and newline are escaped (\\, \", \n)
 * and a help text's backslash and newline, so no value can end its sample's
 * line or its label early; a family's HELP and TYPE lines are written once
 * however many times it is started in a row, and again for the next family; a
 * histogram's buckets are cumulative and end with +Inf, then _sum and _count;
 * a failed write is reported by prom__end(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/prom.h"
#include "testutil.h"

/* What f wrote, as a string the caller frees. */
static char *written(FILE *f, char **buf)
{
	assert_int_equal(fclose(f), 0);
	return *buf;
}

static void test_label_values_escaped(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct prom p;

	(void)state;
	assert_non_null(f);
	prom__init(&p, f);
	prom__family(&p, "x_total", PROM_COUNTER, "Help with a \\ and a\nnewline.");
	prom__u64(&p, "path", "a\\b\"c\nd", 7);
	prom__i64(&p, "tier", "plain", -3);
	assert_int_equal(prom__end(&p), 0);
	assert_string_equal(written(f, &buf), "# HELP x_total Help with a \\\\ and a\\nnewline.\n"
					      "# TYPE x_total counter\n"
					      "x_total{path=\"a\\\\b\\\"c\\nd\"} 7\n"
					      "x_total{tier=\"plain\"} -3\n");
	free(buf);
}

static void test_help_and_type_once_per_family(void **state)
{
	char *buf = NULL, *s;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct prom p;

	(void)state;
	assert_non_null(f);
	prom__init(&p, f);
	prom__family(&p, "a_total", PROM_COUNTER, "A.");
	prom__u64(&p, "k", "1", 1);
	prom__family(&p, "a_total", PROM_COUNTER, "A.");
	prom__u64(&p, "k", "2", 2);
	prom__gauge(&p, "b", "B.", 5);
	prom__family(&p, "c_seconds", PROM_GAUGE, "C.");
	prom__double(&p, NULL, NULL, 3, 1.5);
	assert_int_equal(prom__end(&p), 0);
	s = written(f, &buf);
	assert_string_equal(s, "# HELP a_total A.\n# TYPE a_total counter\n"
			       "a_total{k=\"1\"} 1\na_total{k=\"2\"} 2\n"
			       "# HELP b B.\n# TYPE b gauge\nb 5\n"
			       "# HELP c_seconds C.\n# TYPE c_seconds gauge\nc_seconds 1.500\n");
	free(buf);
}

static void test_histogram(void **state)
{
	static const double bounds[2] = { 0.5, 2.5 };
	static const uint64_t counts[3] = { 1, 0, 4 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct prom p;

	(void)state;
	assert_non_null(f);
	prom__init(&p, f);
	prom__family(&p, "h_seconds", PROM_HISTOGRAM, "H.");
	prom__histogram(&p, bounds, counts, 2, 12.25);
	assert_int_equal(prom__end(&p), 0);
	assert_string_equal(written(f, &buf), "# HELP h_seconds H.\n# TYPE h_seconds histogram\n"
					      "h_seconds_bucket{le=\"0.5\"} 1\n"
					      "h_seconds_bucket{le=\"2.5\"} 1\n"
					      "h_seconds_bucket{le=\"+Inf\"} 5\n"
					      "h_seconds_sum 12.250000\n"
					      "h_seconds_count 5\n");
	free(buf);
}

static ssize_t refuse_write(void *cookie, const char *data, size_t n)
{
	(void)cookie;
	(void)data;
	(void)n;
	return -1;
}

static void test_write_error_reported(void **state)
{
	FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = refuse_write });
	struct prom p;

	(void)state;
	assert_non_null(f);
	setvbuf(f, NULL, _IONBF, 0); /* every write reaches the cookie */
	prom__init(&p, f);
	prom__counter(&p, "x_total", "X.", 1);
	assert_int_equal(prom__end(&p), -EIO);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_values_escaped),
		cmocka_unit_test(test_help_and_type_once_per_family),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_write_error_reported),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

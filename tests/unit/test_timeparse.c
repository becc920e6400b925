/* Unit tests of query time parsing: RFC 3339 against timegm(3), unix seconds,
 * relative times, durations, and everything that must be refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <cmocka.h>

#include "query/timeparse.h"

static int64_t civil(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = { .tm_year = y - 1900,
			 .tm_mon = mo - 1,
			 .tm_mday = d,
			 .tm_hour = h,
			 .tm_min = mi,
			 .tm_sec = s };

	return (int64_t)timegm(&tm);
}

static void test_rfc3339(void **state)
{
	int64_t t = 0;

	(void)state;
	assert_int_equal(timeparse("2026-11-29T02:14:00Z", 0, &t), 0);
	assert_int_equal(t, civil(2026, 11, 29, 2, 14, 0));
	assert_int_equal(timeparse("2026-11-29T03:14:00.999+01:00", 0, &t), 0);
	assert_int_equal(t, civil(2026, 11, 29, 2, 14, 0));
	assert_int_equal(timeparse("2026-11-28T21:44:00-04:30", 0, &t), 0);
	assert_int_equal(t, civil(2026, 11, 29, 2, 14, 0));
	assert_int_equal(timeparse("2024-02-29T00:00:00Z", 0, &t), 0);
	assert_int_equal(t, civil(2024, 2, 29, 0, 0, 0));
	assert_int_equal(timeparse("1969-12-31T23:59:59Z", 0, &t), 0);
	assert_int_equal(t, -1);
	/* every day of a few years, against timegm */
	for (int y = 1999; y <= 2001; y++)
		for (int m = 1; m <= 12; m++) {
			char buf[48];

			snprintf(buf, sizeof(buf), "%04d-%02d-15T12:34:56Z", y, m);
			assert_int_equal(timeparse(buf, 0, &t), 0);
			assert_int_equal(t, civil(y, m, 15, 12, 34, 56));
		}
}

static void test_unix_and_relative(void **state)
{
	int64_t t = 0, now = 1764382440;

	(void)state;
	assert_int_equal(timeparse("1764382440", now, &t), 0);
	assert_int_equal(t, 1764382440);
	assert_int_equal(timeparse("now", now, &t), 0);
	assert_int_equal(t, now);
	assert_int_equal(timeparse("-15m", now, &t), 0);
	assert_int_equal(t, now - 900);
	assert_int_equal(timeparse("-2h", now, &t), 0);
	assert_int_equal(t, now - 7200);
	assert_int_equal(timeparse("-1d", now, &t), 0);
	assert_int_equal(t, now - 86400);
	assert_int_equal(timeparse("-30s", now, &t), 0);
	assert_int_equal(t, now - 30);
	assert_int_equal(timeparse("-45", now, &t), 0); /* plain seconds */
	assert_int_equal(t, now - 45);
	assert_int_equal(timeparse_duration("14d", &t), 0);
	assert_int_equal(t, 14 * 86400);
	assert_int_equal(timeparse_duration("90", &t), 0);
	assert_int_equal(t, 90);
}

static void test_refusals(void **state)
{
	static const char *const bad[] = {
		"",
		"yesterday",
		"-",
		"-15x",
		"--1m",
		"15m",
		"1.5",
		"12abc",
		"-0m",
		"2026-13-01T00:00:00Z",
		"2026-02-30T00:00:00Z",
		"2023-02-29T00:00:00Z",
		"2026-11-29T24:00:00Z",
		"2026-11-29T02:60:00Z",
		"2026-11-29T02:14:00",
		"2026-11-29T02:14:00+0100",
		"2026-11-29T02:14:00Zjunk",
		"2026-11-29",
		"99999999999999999999",
		"-99999999999999999999d",
		"2026-11-29T02:14:00.Z",
	};
	int64_t t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (timeparse(bad[i], 1764382440, &t) != -EINVAL)
			fail_msg("'%s' was accepted", bad[i]);
	assert_int_equal(timeparse_duration("0m", &t), -EINVAL);
	assert_int_equal(timeparse_duration("m", &t), -EINVAL);
	assert_int_equal(timeparse_duration("5w", &t), -EINVAL);
	assert_int_equal(timeparse_duration("99999999999999d", &t), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc3339),
		cmocka_unit_test(test_unix_and_relative),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests of query time parsing: RFC 3339 against timegm(3), unix seconds,
 * relative times, compound durations, local times (with and without a time of
 * day) round-tripped through strftime(3) in zones with daylight saving (the gap
 * refused, the fold read as its earlier instant), and everything that must be
 * refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
	assert_int_equal(timeparse_duration("14d", &t), 0);
	assert_int_equal(t, 14 * 86400);
}

/* A bare number in a duration could mean seconds or minutes: refused, in
 * relative times too; only the zero offset ("now-0", "-0") needs no unit. */
static void test_bare_numbers(void **state)
{
	const int64_t now = 1764382440;
	int64_t t = 7;

	(void)state;
	assert_int_equal(timeparse("-45", now, &t), -EINVAL);
	assert_int_equal(timeparse("now-5", now, &t), -EINVAL);
	assert_int_equal(timeparse("now+5", now, &t), -EINVAL);
	assert_int_equal(timeparse("-1h30", now, &t), -EINVAL);
	assert_int_equal(timeparse_duration("90", &t), -EINVAL);
	assert_int_equal(timeparse_duration("5", &t), -EINVAL);
	assert_int_equal(timeparse_duration("0", &t), -EINVAL);
	assert_int_equal(t, 7);
	assert_int_equal(timeparse("-0", now, &t), 0);
	assert_int_equal(t, now);
	assert_int_equal(timeparse("1764382000", now, &t), 0); /* a time, not a duration */
	assert_int_equal(t, 1764382000);
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
		"now-",
		"now-0x",
		"nowish",
		"now+-5m",
		"-1m1h",
		"-1h1h",
		"-1h30",
		"-5y",
		"+5m",
		"2026-11-29T",
		"2026-11-29 3:14",
		"2026-11-29T02:14:",
		"2026-11-29T02:14:00+01:",
		"2026-11-29T02:14:00+1",
		"2026-11-29T02:14:00 Z",
		"2026-11-29x",
		"2026-11-29Z",
		"2026-13-01T00:00:00Z",
		"2026-02-30T00:00:00Z",
		"2023-02-29T00:00:00Z",
		"2026-11-29T24:00:00Z",
		"2026-11-29T02:60:00Z",
		"2026-11-29T02:14:00Zjunk",
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
	assert_int_equal(timeparse_duration("5y", &t), -EINVAL);
	assert_int_equal(timeparse_duration("0h0m", &t), -EINVAL);
	assert_int_equal(timeparse_duration("30m1h", &t), -EINVAL);
	assert_int_equal(timeparse_duration("1h 30m", &t), -EINVAL);
	assert_int_equal(timeparse_duration("99999999999999d", &t), -EINVAL);
}

/* Compound durations and the now-relative forms. */
static void test_compound(void **state)
{
	int64_t t = 0, now = 1764382440;

	(void)state;
	assert_int_equal(timeparse("-1h30m", now, &t), 0);
	assert_int_equal(t, now - 5400);
	assert_int_equal(timeparse("-1w", now, &t), 0);
	assert_int_equal(t, now - 7 * 86400);
	assert_int_equal(timeparse("-2d12h", now, &t), 0);
	assert_int_equal(t, now - 2 * 86400 - 12 * 3600);
	assert_int_equal(timeparse("-1w2d3h4m5s", now, &t), 0);
	assert_int_equal(t, now - (9 * 86400 + 3 * 3600 + 4 * 60 + 5));
	assert_int_equal(timeparse("now-5m", now, &t), 0);
	assert_int_equal(t, now - 300);
	assert_int_equal(timeparse("now+0", now, &t), 0);
	assert_int_equal(t, now);
	/* a zero offset is now in either form (-0m was refused, now-0 accepted) */
	t = 0;
	assert_int_equal(timeparse("-0m", now, &t), 0);
	assert_int_equal(t, now);
	t = 0;
	assert_int_equal(timeparse("-0s", now, &t), 0);
	assert_int_equal(t, now);
	t = 0;
	assert_int_equal(timeparse("now-0", now, &t), 0);
	assert_int_equal(t, now);
	assert_int_equal(timeparse("now+1h", now, &t), 0);
	assert_int_equal(t, now + 3600);
	assert_int_equal(timeparse("now-90s", now, &t), 0);
	assert_int_equal(t, now - 90);
	assert_int_equal(timeparse_duration("1h30m", &t), 0);
	assert_int_equal(t, 5400);
	assert_int_equal(timeparse_duration("1w", &t), 0);
	assert_int_equal(t, 7 * 86400);
	assert_int_equal(timeparse_duration("90s", &t), 0);
	assert_int_equal(t, 90);
	assert_int_equal(timeparse_duration("2d12h", &t), 0);
	assert_int_equal(t, 2 * 86400 + 12 * 3600);
	assert_int_equal(timeparse_duration("1h0m", &t), 0);
	assert_int_equal(t, 3600);
}

static void set_tz(const char *tz)
{
	setenv("TZ", tz, 1);
	tzset();
}

/* Formats t with fmt in the current TZ (local) and parses it back. */
static void round_trip(int64_t t, const char *fmt, int64_t want)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char buf[64];
	int64_t got = 0;

	assert_non_null(localtime_r(&tt, &tm));
	assert_true(strftime(buf, sizeof(buf), fmt, &tm) > 0);
	if (timeparse(buf, 0, &got) != 0)
		fail_msg("'%s' (from %lld) refused", buf, (long long)t);
	if (got != want)
		fail_msg("'%s' read as %lld, want %lld", buf, (long long)got, (long long)want);
}

/* Every form formatted from known instants (UTC and local) and parsed back. */
static void test_round_trips(void **state)
{
	static const char *const zones[] = { "UTC0", "Europe/Berlin", "America/New_York",
					     "Asia/Kolkata" };
	static const int64_t instants[] = {
		1764545087, /* 2025-11-30T23:24:47Z */
		1709164800, /* 2024-02-29T00:00:00Z: a leap day */
		1719792000, /* 2024-07-01T00:00:00Z: summer time in the north */
		0,
	};
	size_t z, i;

	(void)state;
	for (z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
		set_tz(zones[z]);
		for (i = 0; i < sizeof(instants) / sizeof(instants[0]); i++) {
			int64_t t = instants[i];
			time_t tt = (time_t)t;
			struct tm tm;
			int64_t midnight;

			assert_non_null(localtime_r(&tt, &tm));
			/* the local clock read as UTC */
			round_trip(t, "%Y-%m-%dT%H:%M:%SZ", t + tm.tm_gmtoff);
			round_trip(t, "%Y-%m-%dT%H:%M:%S", t);
			round_trip(t, "%Y-%m-%d %H:%M:%S", t);
			round_trip(t, "%Y-%m-%d %H:%M:%S.75", t);
			round_trip(t, "%Y-%m-%dT%H:%M:%S%z", t);
			round_trip(t, "%Y-%m-%d %H:%M", t - tm.tm_sec);
			midnight = t - tm.tm_hour * 3600 - tm.tm_min * 60 - tm.tm_sec;
			round_trip(t, "%Y-%m-%d", midnight);
		}
	}
	set_tz("UTC0");
}

static void test_zone_offsets(void **state)
{
	int64_t t = 0;

	(void)state;
	set_tz("America/New_York"); /* a zone in the text wins over TZ */
	assert_int_equal(timeparse("2026-11-29T02:14:00+0100", 0, &t), 0);
	assert_int_equal(t, civil(2026, 11, 29, 1, 14, 0));
	assert_int_equal(timeparse("2026-11-29 02:14:00-05:30", 0, &t), 0);
	assert_int_equal(t, civil(2026, 11, 29, 7, 44, 0));
	assert_int_equal(timeparse("2026-11-29T02:14Z", 0, &t), 0);
	assert_int_equal(t, civil(2026, 11, 29, 2, 14, 0));
	assert_int_equal(timeparse("2026-11-29T02:14:59.999999Z", 0, &t), 0);
	assert_int_equal(t, civil(2026, 11, 29, 2, 14, 59));
	assert_int_equal(timeparse("2026-11-29T02:14:00", 0, &t), 0); /* EST: UTC-5 */
	assert_int_equal(t, civil(2026, 11, 29, 7, 14, 0));
	assert_int_equal(timeparse("2024-02-29", 0, &t), 0);
	assert_int_equal(t, civil(2024, 2, 29, 5, 0, 0));
	set_tz("UTC0");
}

/* Daylight saving: the hour skipped is refused (-ERANGE), the hour repeated is
 * its earlier instant, the hours around both read as usual. */
static void test_dst(void **state)
{
	int64_t t = 0;

	(void)state;
	set_tz("Europe/Berlin");
	/* 2026-03-29: 02:00 CET becomes 03:00 CEST */
	assert_int_equal(timeparse("2026-03-29 02:30:00", 0, &t), -ERANGE);
	assert_int_equal(timeparse("2026-03-29T02:00", 0, &t), -ERANGE);
	assert_int_equal(timeparse("2026-03-29 01:59:59", 0, &t), 0);
	assert_int_equal(t, civil(2026, 3, 29, 0, 59, 59));
	assert_int_equal(timeparse("2026-03-29 03:00:00", 0, &t), 0);
	assert_int_equal(t, civil(2026, 3, 29, 1, 0, 0));
	/* 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 happens twice */
	assert_int_equal(timeparse("2026-10-25 02:30:00", 0, &t), 0);
	assert_int_equal(t, civil(2026, 10, 25, 0, 30, 0)); /* CEST, the earlier */
	assert_int_equal(timeparse("2026-10-25 03:00:00", 0, &t), 0);
	assert_int_equal(t, civil(2026, 10, 25, 2, 0, 0));
	assert_int_equal(timeparse("2026-10-25 01:59:59", 0, &t), 0);
	assert_int_equal(t, civil(2026, 10, 24, 23, 59, 59));

	set_tz("America/New_York");
	/* 2026-03-08: 02:00 EST becomes 03:00 EDT; 2026-11-01: 02:00 EDT becomes 01:00 EST */
	assert_int_equal(timeparse("2026-03-08 02:15", 0, &t), -ERANGE);
	assert_int_equal(timeparse("2026-11-01 01:30", 0, &t), 0);
	assert_int_equal(t, civil(2026, 11, 1, 5, 30, 0)); /* EDT, the earlier */
	assert_int_equal(timeparse("2026-11-01", 0, &t), 0);
	assert_int_equal(t, civil(2026, 11, 1, 4, 0, 0));
	/* with an offset, no gap applies */
	assert_int_equal(timeparse("2026-03-08 02:15-05:00", 0, &t), 0);
	assert_int_equal(t, civil(2026, 3, 8, 7, 15, 0));
	set_tz("UTC0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compound),     cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_zone_offsets), cmocka_unit_test(test_dst),
		cmocka_unit_test(test_rfc3339),	     cmocka_unit_test(test_unix_and_relative),
		cmocka_unit_test(test_refusals),     cmocka_unit_test(test_bare_numbers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

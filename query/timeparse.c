/* Time and duration parsing for queries; see timeparse.h. */
#include "query/timeparse.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SECONDS (INT64_C(1) << 40) /* ~35 000 years: far past any sane range */

/* Reads a compound duration ("1h30m", "90s", "2d12h") up to the end of s into
 * *out. Every number has its unit: "5" alone could mean seconds or minutes, so it
 * is refused. zero_ok allows a zero total, and then a bare "0" (nothing to
 * misread). */
static int duration(const char *s, bool zero_ok, int64_t *out)
{
	static const struct {
		char c;
		int64_t secs;
	} units[] = { { 'w', 7 * 86400 }, { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };
	size_t next = 0, u; /* the units left: largest first, each once */
	int64_t total = 0;
	const char *p = s;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	while (*p) {
		int64_t v = 0, unit = 1;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			v = v * 10 + (*p - '0');
			if (v > MAX_SECONDS)
				return -EINVAL;
		}
		if (*p == '\0' && p == s + strspn(s, "0123456789")) {
			if (!zero_ok || v != 0)
				return -EINVAL; /* a bare number: which unit? */
		} else {
			for (u = next; u < sizeof(units) / sizeof(units[0]) && units[u].c != *p;
			     u++)
				;
			if (u == sizeof(units) / sizeof(units[0]))
				return -EINVAL; /* no unit, an unknown one, or one out of order */
			unit = units[u].secs;
			next = u + 1;
			p++;
		}
		if (v > (MAX_SECONDS - total) / unit)
			return -EINVAL;
		total += v * unit;
	}
	if (total == 0 && !zero_ok)
		return -EINVAL;
	*out = total;
	return 0;
}

int timeparse_duration(const char *s, int64_t *out)
{
	return duration(s, false, out);
}

/* Reads exactly n digits. */
static bool digits(const char **p, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return true;
}

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static bool is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* A local civil time into unix seconds: mktime() once per daylight-saving
 * state, keeping the candidates that read back as the same civil time. None: a
 * gap (-ERANGE); two: a fold, the earlier wins. */
static int local_time(int y, int mo, int d, int h, int mi, int sec, int64_t *out)
{
	bool found = false;
	int64_t best = 0;
	int isdst;

	for (isdst = 0; isdst <= 1; isdst++) {
		struct tm tm = { .tm_year = y - 1900,
				 .tm_mon = mo - 1,
				 .tm_mday = d,
				 .tm_hour = h,
				 .tm_min = mi,
				 .tm_sec = sec,
				 .tm_isdst = isdst },
			  back;
		time_t t = mktime(&tm);

		/* (time_t)-1 is also a real second: the read-back tells */
		if (!localtime_r(&t, &back) || back.tm_year != y - 1900 || back.tm_mon != mo - 1 ||
		    back.tm_mday != d || back.tm_hour != h || back.tm_min != mi ||
		    back.tm_sec != sec)
			continue;
		if (!found || (int64_t)t < best)
			best = (int64_t)t;
		found = true;
	}
	if (!found)
		return -ERANGE;
	*out = best;
	return 0;
}

/* YYYY-MM-DD[(T| )HH:MM[:SS[.frac]][Z|+HH:MM|+HHMM]]; no zone: local time. */
static int civil_time(const char *s, int64_t *out)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h = 0, mi = 0, sec = 0, oh = 0, om = 0, sign = 0;
	bool zone = false;
	const char *p = s;

	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
	    !digits(&p, 2, &d))
		return -EINVAL;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
			return -EINVAL;
		if (*p == ':') {
			p++;
			if (!digits(&p, 2, &sec))
				return -EINVAL;
			if (*p == '.') { /* fractional seconds: at least one digit, truncated */
				p++;
				if (!isdigit((unsigned char)*p))
					return -EINVAL;
				while (isdigit((unsigned char)*p))
					p++;
			}
		}
		if (*p == 'Z' || *p == 'z') {
			p++;
			zone = true;
		} else if (*p == '+' || *p == '-') {
			sign = *p++ == '-' ? -1 : 1;
			if (!digits(&p, 2, &oh) || (*p == ':' && !*++p) || !digits(&p, 2, &om) ||
			    oh > 23 || om > 59)
				return -EINVAL;
			zone = true;
		}
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 60 ||
	    d > mdays[mo - 1] + (mo == 2 && is_leap(y)))
		return -EINVAL;
	if (sec == 60)
		sec = 59;
	if (!zone)
		return local_time(y, mo, d, h, mi, sec, out);
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
	       sign * (oh * 3600 + om * 60);
	return 0;
}

int timeparse(const char *s, int64_t now, int64_t *out)
{
	int64_t d, t;
	long long v;
	char *end;
	int err;

	if (!s || !*s)
		return -EINVAL;
	if (strncmp(s, "now", 3) == 0) {
		if (s[3] == '\0') {
			*out = now;
			return 0;
		}
		if ((s[3] != '-' && s[3] != '+') || duration(s + 4, true, &d))
			return -EINVAL;
		*out = s[3] == '-' ? now - d : now + d;
		return 0;
	}
	if (s[0] == '-') { /* -0s is now, as now-0 is */
		if (duration(s + 1, true, &d))
			return -EINVAL;
		*out = now - d;
		return 0;
	}
	if (strlen(s) >= 10 && s[4] == '-') {
		err = civil_time(s, &t);
		if (err)
			return err;
		if (t > MAX_SECONDS || t < -MAX_SECONDS)
			return -EINVAL;
		*out = t;
		return 0;
	}
	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || end == s || v < 0 || v > MAX_SECONDS)
		return -EINVAL;
	*out = v;
	return 0;
}

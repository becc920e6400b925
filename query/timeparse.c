/* Time and duration parsing for queries; see timeparse.h. */
#include "query/timeparse.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SECONDS (INT64_C(1) << 40) /* ~35 000 years: far past any sane range */

int timeparse_duration(const char *s, int64_t *out)
{
	int64_t unit = 1;
	long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || v <= 0)
		return -EINVAL;
	switch (*end) {
	case '\0':
	case 's':
		break;
	case 'm':
		unit = 60;
		break;
	case 'h':
		unit = 3600;
		break;
	case 'd':
		unit = 86400;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1])
		return -EINVAL;
	if (v > MAX_SECONDS / unit)
		return -EINVAL;
	*out = v * unit;
	return 0;
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

static int rfc3339(const char *s, int64_t *out)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	const char *p = s;

	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
	    !digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
		return -EINVAL;
	p++;
	if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' ||
	    !digits(&p, 2, &sec))
		return -EINVAL;
	if (*p == '.') { /* fractional seconds: at least one digit, truncated */
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 60 ||
	    d > mdays[mo - 1] + (mo == 2 && is_leap(y)))
		return -EINVAL;
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + (sec == 60 ? 59 : sec) -
	       sign * (oh * 3600 + om * 60);
	return 0;
}

int timeparse(const char *s, int64_t now, int64_t *out)
{
	int64_t d;
	long long v;
	char *end;

	if (!s || !*s)
		return -EINVAL;
	if (strcmp(s, "now") == 0) {
		*out = now;
		return 0;
	}
	if (s[0] == '-') {
		if (timeparse_duration(s + 1, &d))
			return -EINVAL;
		*out = now - d;
		return 0;
	}
	if (strlen(s) >= 19 && s[4] == '-')
		return rfc3339(s, out);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || end == s || v < 0 || v > MAX_SECONDS)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The from and until times of a Pyroscope push, read in any of the units the
 * SDKs send, and the window they make (its second and its length, held to
 * PUSHREQ_MAX_WINDOW_SECONDS). One of the push's text pieces
 * (collector/pushreq_*.c). */
#include "collector/pushreq.h"

#include <errno.h>
#include <string.h>

#include "common/reason.h"

int pushreq_time(const char *s, int64_t now_ns, int64_t *out_ns)
{
	uint64_t v = 0, mult = 1;
	size_t i, n;

	if (!s || !*s || !strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	n = strlen(s);
	if (n > 19)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v < UINT64_C(100000000000))
		mult = 1000000000u; /* seconds */
	else if (v < UINT64_C(100000000000000))
		mult = 1000000u; /* milliseconds */
	else if (v < UINT64_C(100000000000000000))
		mult = 1000u;		    /* microseconds */
	if (v > (uint64_t)INT64_MAX / mult) /* past 2262 */
		return -EINVAL;
	v *= mult;
	*out_ns = (int64_t)v;
	return 0;
}

int pushreq_window(int64_t from_ns, int64_t until_ns, int64_t *start, uint32_t *seconds, char *why,
		   size_t whylen)
{
	int64_t s, len;

	if (from_ns < 0)
		return reason_fail(why, whylen, -EINVAL, "from before 1970");
	if (until_ns < from_ns)
		return reason_fail(why, whylen, -EINVAL, "until is before from");
	s = from_ns / 1000000000;
	len = (until_ns - s * 1000000000 + 999999999) / 1000000000;
	if (len > PUSHREQ_MAX_WINDOW_SECONDS)
		return reason_fail(why, whylen, -EINVAL,
				   "from..until covers %lld s, over the cap of %u s",
				   (long long)len, PUSHREQ_MAX_WINDOW_SECONDS);
	*start = s;
	*seconds = len < 1 ? 1 : (uint32_t)len;
	return 0;
}

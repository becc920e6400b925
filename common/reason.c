/* One-line refusal reasons; see reason.h. */
#include "common/reason.h"

#include <stdarg.h>
#include <stdio.h>

int reason_fail(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* One-line reasons for refusals: libraries that reject input say why in a caller's
 * buffer (the collector sends it back as the 400's body, the CLI prints it), and
 * return the error in the same breath:
 *
 *	return reason_fail(why, len, -EINVAL, "sample %u: stack %u out of range", i, s);
 */
#ifndef SMOLDER_REASON_H
#define SMOLDER_REASON_H

#include <stddef.h>

/* Writes the formatted reason into why (when why and len are non-zero; truncated,
 * always NUL-terminated) and returns err. */
int reason_fail(char *why, size_t len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif

/* Times and durations as people type them in queries: RFC 3339
 * ("2026-11-29T02:14:00Z", "2026-11-29T03:14:00.5+01:00"), unix seconds
 * ("1764382440"), "now", or relative to now ("-15m", "-2h", "-1d", "-30s").
 * A library: no I/O. */
#ifndef SMOLDER_TIMEPARSE_H
#define SMOLDER_TIMEPARSE_H

#include <stdint.h>

/* Parses s into unix seconds (fractions truncated), now being the current time.
 * Returns 0 or -EINVAL (anything else, out-of-range fields included). */
int timeparse(const char *s, int64_t now, int64_t *out);

/* Parses a positive duration: "90", "90s", "15m", "2h", "14d". 0 or -EINVAL. */
int timeparse_duration(const char *s, int64_t *out);

#endif

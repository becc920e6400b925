/* Times and durations as people type them in queries. A library: no I/O.
 *
 * Times (timeparse):
 *   RFC 3339 with a zone        2026-11-29T02:14:00Z, 2026-11-29T03:14:00.5+01:00
 *                               (also +0100; a space may replace the T)
 *   date and time, no zone      2026-11-29T03:14:00, 2026-11-29 03:14:00.25,
 *                               2026-11-29 03:14: the process's local time (TZ)
 *   a date                      2026-11-29: midnight, local time
 *   unix seconds                1764382440
 *   now, and relative to it     now, now-5m, now+0, -15m, -1h30m, -1w, -90s
 *                               (a zero offset is now: now-0, -0s, -0m)
 * Fractions of a second are truncated; a leap second (:60) reads as :59.
 * Local times go through mktime(3) with the zone rules of TZ (the system's zone
 * when unset). A local time that does not exist (the hour skipped when clocks go
 * forward) is refused with -ERANGE: nothing is guessed; a local time that exists
 * twice (the hour repeated when clocks go back) is the earlier of the two.
 *
 * Durations (timeparse_duration, and the part after '-' of a relative time, where
 * it may be 0): a positive number with units w (7 days), d, h, m, s, largest first,
 * each at most once: 90s, 15m, 1h30m, 2d12h, 1w. A bare number ("5": seconds? minutes?)
 * is refused, but for the zero offset "now-0". */
#ifndef SMOLDER_TIMEPARSE_H
#define SMOLDER_TIMEPARSE_H

#include <stdint.h>

/* The forms above in a few words, for error messages that must name them. */
#define TIMEPARSE_FORMS                                                                            \
	"2026-11-30T23:44:47Z, 2026-11-30 23:44:47 (local), 2026-11-30, unix seconds, now, "       \
	"now-5m, -1h30m"
#define TIMEPARSE_DURATION_FORMS "90s, 15m, 1h30m, 2d12h, 1w"

/* Parses s into unix seconds, now being the current time. Returns 0, -ERANGE (a
 * local time that does not exist: a daylight-saving gap) or -EINVAL (anything
 * else, out-of-range fields and times past +-2^40 s included). */
int timeparse(const char *s, int64_t now, int64_t *out);

/* Parses a positive duration (see above). 0 or -EINVAL. */
int timeparse_duration(const char *s, int64_t *out);

#endif

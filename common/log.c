/* Level-gated logging to stderr; see log.h. */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>

enum log_level log_current_level = LOG_INFO;

static const char *const level_names[] = {
	[LOG_ERROR] = "error: ",
	[LOG_WARN] = "warning: ",
	[LOG_INFO] = "",
	[LOG_DEBUG] = "debug: ",
};

void log_set_level(enum log_level level)
{
	log_current_level = level;
}

void log_write(enum log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One fprintf per line keeps lines from different threads whole. */
	fprintf(stderr, "%s%s\n", level_names[level], line);
}

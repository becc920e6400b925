/* Level-gated logging for smolder's binaries (never used by store/ or codecs).
 *
 * log_warn("agent: failed to open %s: %s", path, strerror(-err));
 *
 * The macros test the level before evaluating their arguments, so a disabled
 * log_debug() costs one comparison. Messages go to stderr, one line each,
 * prefixed with the level when it is not "info".
 */
#ifndef SMOLDER_LOG_H
#define SMOLDER_LOG_H

enum log_level {
	LOG_ERROR = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3,
};

extern enum log_level log_current_level;

void log_set_level(enum log_level level);
void log_write(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_at(level, ...)                                                                         \
	do {                                                                                       \
		if ((level) <= log_current_level)                                                  \
			log_write((level), __VA_ARGS__);                                           \
	} while (0)

#define log_error(...) log_at(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_at(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_at(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_DEBUG, __VA_ARGS__)

#endif

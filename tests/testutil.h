/* Helpers shared by the cmocka tests: build paths, child processes, temporary
 * directories, bounded waits on real conditions, and folded-file parsing.
 *
 * Tests find the build directory through $SMOLDER_BUILD (set by tests/run.sh),
 * defaulting to "build". Everything here is static so each test binary is one
 * translation unit.
 */
#ifndef SMOLDER_TESTUTIL_H
#define SMOLDER_TESTUTIL_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static inline const char *test_build_dir(void)
{
	const char *b = getenv("SMOLDER_BUILD");
	return b && *b ? b : "build";
}

/* Writes "<build>/<rel>" into buf and returns buf. */
static inline char *test_build_path(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", test_build_dir(), rel);
	return buf;
}

static inline uint64_t test_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Creates a fresh directory under /tmp; the path is written to buf. */
static inline char *test_mkdtemp(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/smolder-test-XXXXXX");
	return mkdtemp(buf);
}

static inline void test_rm_rf(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
}

/* Starts argv[0] with stdout to out_path and stderr to err_path (NULL: inherit).
 * Returns the pid, or -1. */
static inline pid_t test_spawn(char *const argv[], const char *out_path, const char *err_path)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int rc;

	posix_spawn_file_actions_init(&fa);
	if (out_path)
		posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC,
						 0644);
	if (err_path)
		posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC,
						 0644);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return rc ? -1 : pid;
}

/* Waits for pid to exit for up to timeout_ms; returns its wait status, or -1 after
 * killing it with SIGKILL when it did not exit in time. */
static inline int test_wait(pid_t pid, unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;
	int status;

	while (test_now_ms() < deadline) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		if (r < 0)
			return -1;
		usleep(10000); /* polling interval of a bounded wait, not synchronization */
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* Reads a whole file into a NUL-terminated malloc'd buffer; NULL on error. */
static inline char *test_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = (cap ? cap * 2 : 8192));
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	fclose(f);
	if (!buf)
		buf = calloc(1, 1);
	else
		buf[len] = '\0';
	return buf;
}

/* Polls until the file at path contains needle, for up to timeout_ms. */
static inline bool test_wait_for_text(const char *path, const char *needle, unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;

	while (test_now_ms() < deadline) {
		char *text = test_read_file(path);
		bool found = text && strstr(text, needle);

		free(text);
		if (found)
			return true;
		usleep(20000);
	}
	return false;
}

/* CPU time (utime+stime, in clock ticks) a process has used; -1 when it is gone. */
static inline long long test_proc_cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long utime, stime;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return -1;
	/* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
		   &stime) != 2)
		return -1;
	return (long long)(utime + stime);
}

/* Waits until pid has used at least `ticks` more CPU ticks than `from`. */
static inline bool test_wait_cpu(pid_t pid, long long from, long long ticks, unsigned timeout_ms)
{
	uint64_t deadline = test_now_ms() + timeout_ms;

	while (test_now_ms() < deadline) {
		long long now = test_proc_cpu_ticks(pid);
		if (now < 0)
			return false;
		if (now - from >= ticks)
			return true;
		usleep(10000);
	}
	return false;
}

static inline bool test_is_root(void)
{
	return geteuid() == 0;
}

#endif

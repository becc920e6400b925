/* Clocks for the HTTP ingest benches: wall time, and a process's CPU time read
 * from /proc/PID/stat (a collector's, a sender's). Header-only, static: each
 * bench is one file. */
#ifndef SMOLDER_BENCH_PROC_H
#define SMOLDER_BENCH_PROC_H

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline double bench_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of pid, in seconds; 0 when pid is 0 or unreadable. */
static inline double bench_proc_cpu(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold spaces */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

#endif

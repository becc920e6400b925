/* A workload of short-lived processes, for the agent under process churn (a build
 * host, a CI runner).
 *
 *   churn RATE SECONDS [BURN_EVERY [BURN_MS]]
 *
 * Starts RATE processes per second (1 to 2000) for SECONDS (1 to 3600): each one a
 * fork and an exec of this same binary, so it maps ld.so and libc afresh like any
 * new program. Most children exit at once; every BURN_EVERY-th one (default 10, 0:
 * none) names itself "churnkid" and burns CPU in churn_burn() for BURN_MS
 * milliseconds (default 30, 1 to 1000) before it exits. churn_burn() is a noinline
 * function of the executable: a profiler that keeps the names of sampled
 * short-lived processes shows "churnkid;...;main;burn_child;churn_burn". At the end
 * the parent reaps every child and prints "started N burners B" to stdout.
 */
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) void churn_burn(uint64_t until)
{
	unsigned i;

	while (now_ns() < until)
		for (i = 0; i < 20000; i++)
			sink += (uint64_t)i * 2654435761u;
}

__attribute__((noinline)) void burn_child(unsigned ms)
{
	prctl(PR_SET_NAME, "churnkid", 0, 0, 0);
	churn_burn(now_ns() + (uint64_t)ms * 1000000ull);
}

static unsigned arg(const char *s, unsigned lo, unsigned hi, const char *what)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*end || v < lo || v > hi) {
		fprintf(stderr, "churn: %s must be %u to %u\n", what, lo, hi);
		exit(2);
	}
	return (unsigned)v;
}

static unsigned reap(bool block)
{
	unsigned n = 0;

	while (waitpid(-1, NULL, block ? 0 : WNOHANG) > 0)
		n++;
	return n;
}

int main(int argc, char **argv)
{
	unsigned rate, secs, every = 10, burn_ms = 30, started = 0, burners = 0;
	char self[PATH_MAX], ms[16];
	uint64_t start, next, period;
	ssize_t n;

	if (argc == 3 && strcmp(argv[1], "--child") == 0) {
		burn_child(arg(argv[2], 0, 1000, "BURN_MS"));
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--exit") == 0)
		return 0;
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: churn RATE SECONDS [BURN_EVERY [BURN_MS]]\n");
		return 2;
	}
	rate = arg(argv[1], 1, 2000, "RATE");
	secs = arg(argv[2], 1, 3600, "SECONDS");
	if (argc > 3)
		every = arg(argv[3], 0, 1000000, "BURN_EVERY");
	if (argc > 4)
		burn_ms = arg(argv[4], 1, 1000, "BURN_MS");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		perror("churn: readlink /proc/self/exe");
		return 1;
	}
	self[n] = '\0';
	snprintf(ms, sizeof(ms), "%u", burn_ms);

	period = 1000000000ull / rate;
	start = next = now_ns();
	while (next < start + (uint64_t)secs * 1000000000ull) {
		bool burn = every && started % every == every - 1;
		pid_t pid;

		while (now_ns() < next) {
			uint64_t left = next - now_ns();
			struct timespec ts = { 0, (long)(left < 1000000000ull ? left : 999999999) };

			if (left < 1000000000ull)
				nanosleep(&ts, NULL);
		}
		pid = fork();
		if (pid < 0) {
			perror("churn: fork");
			reap(true);
			return 1;
		}
		if (pid == 0) {
			char *cargv[] = { self, burn ? "--child" : "--exit", burn ? ms : NULL,
					  NULL };

			execv(self, cargv);
			_exit(127);
		}
		started++;
		burners += burn;
		reap(false);
		next += period;
	}
	reap(true);
	printf("started %u burners %u\n", started, burners);
	return 0;
}

/* A no-frame-pointer workload whose hot code is in libc, so that unwinding it needs
 * libc's own CFI (tests/integration/test_agent_unwind.c):
 *
 *   unwind_libc        loop until SIGTERM/SIGINT, then print the truth
 *   unwind_libc MS     loop until MS ms of CPU are used, then exit 0
 *
 * One thread loops main -> libc_run -> each of
 *   sort_branch -> qsort (libc: qsort_r, msort_with_tmp, ...) -> cmp_ints   6 ms, 60 %
 *   copy_branch -> memcpy (libc's __memmove_*, a leaf without a frame)     4 ms, 40 %
 * (each time scaled by a pseudo-random 0.75 to 1.25, burn.h's burn_jitter),
 * measuring each branch's inclusive thread CPU time; on SIGTERM/SIGINT it prints
 * "sort_branch NS", "copy_branch NS" and "total NS" to stdout. Built like unwind.c
 * (-O2 -fomit-frame-pointer, no inlining, no sibling calls), and it is also the
 * image unwind.c execs into (test_exec_no_wrong_frames), so none of its function
 * names is one of unwind.c's.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burn.h"

#define NSORT (1u << 12)  /* ints per qsort */
#define NCOPY (64u << 10) /* bytes per memcpy: within the L2 cache */

static volatile sig_atomic_t stop;
static volatile uint64_t sink;
static int sortbuf[NSORT];
static char src[NCOPY], dst[NCOPY];
/* Called through a volatile pointer: gcc would otherwise see that dst is never
 * read and drop the copy (it did). */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

struct tally {
	uint64_t sort, copy, total;
};

/* A little arithmetic per comparison, so that most of the branch's samples have
 * this callback (under libc's sort) as their leaf. */
__attribute__((noipa)) static int cmp_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	unsigned i;

	for (i = 0; i < 16; i++)
		sink += (uint64_t)x * i;
	return (x > y) - (x < y);
}

__attribute__((noipa)) static void sort_branch(uint64_t ns)
{
	uint64_t start = burn_thread_ns();
	unsigned i, seed = 12345;

	do {
		for (i = 0; i < NSORT; i++)
			sortbuf[i] = (int)(seed = seed * 1103515245u + 12345u);
		qsort(sortbuf, NSORT, sizeof(sortbuf[0]), cmp_ints);
	} while (burn_thread_ns() - start < ns);
}

__attribute__((noipa)) static void copy_branch(uint64_t ns)
{
	uint64_t start = burn_thread_ns();
	unsigned i;

	do {
		for (i = 0; i < 16; i++) {
			src[i] = (char)i;
			copy_fn(dst, src, sizeof(dst));
			sink += (unsigned char)dst[i];
		}
	} while (burn_thread_ns() - start < ns);
}

__attribute__((noipa)) static void libc_run(struct tally *t, uint64_t limit_ns)
{
	uint64_t start = burn_thread_ns(), t0;
	uint32_t seed = 1;

	while (!stop && (!limit_ns || burn_thread_ns() - start < limit_ns)) {
		t0 = burn_thread_ns();
		sort_branch(burn_jitter(6000000, &seed));
		t->sort += burn_thread_ns() - t0;
		t0 = burn_thread_ns();
		copy_branch(burn_jitter(4000000, &seed));
		t->copy += burn_thread_ns() - t0;
	}
	t->total = burn_thread_ns() - start;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct tally t = { 0 };

	if (argc > 2)
		return 2;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	libc_run(&t, argc > 1 ? strtoull(argv[1], NULL, 10) * 1000000ull : 0);
	if (argc == 1)
		printf("sort_branch %llu\ncopy_branch %llu\ntotal %llu\n",
		       (unsigned long long)t.sort, (unsigned long long)t.copy,
		       (unsigned long long)t.total);
	return 0;
}

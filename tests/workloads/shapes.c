/* A workload of known shape for the sampling tests.
 *
 *   shapes [THREADS]
 *
 * Each thread loops main -> run_loop -> burn_a | burn_b | burn_c, burning 5, 3 and
 * 2 ms of its own CPU time per round (CLOCK_THREAD_CPUTIME_ID), i.e. 50/30/20 % of
 * the thread's time. It measures what each function really consumed, and on
 * SIGTERM/SIGINT prints, per function, the nanoseconds spent in it and the total
 * ("burn_a 1234\n...total 5678\n") to stdout, then exits. Built with frame pointers
 * and without inlining (see the Makefile), so the stacks the profiler sees are
 * exactly these functions.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 16

static volatile sig_atomic_t stop;
static volatile uint64_t sink;

struct tally {
	uint64_t a, b, c, total;
};

static struct tally tallies[MAX_THREADS];

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Spins until the thread has used `ns` more CPU time; returns the time used. */
static uint64_t spin(uint64_t ns)
{
	uint64_t start = thread_ns(), now;
	unsigned i;

	do {
		for (i = 0; i < 2000; i++)
			sink += i * 2654435761u;
		now = thread_ns();
	} while (now - start < ns);
	return now - start;
}

__attribute__((noinline)) uint64_t burn_a(void)
{
	return spin(5000000);
}

__attribute__((noinline)) uint64_t burn_b(void)
{
	return spin(3000000);
}

__attribute__((noinline)) uint64_t burn_c(void)
{
	return spin(2000000);
}

__attribute__((noinline)) void run_loop(struct tally *t)
{
	uint64_t start = thread_ns();

	while (!stop) {
		t->a += burn_a();
		t->b += burn_b();
		t->c += burn_c();
	}
	t->total = thread_ns() - start;
}

static void *thread_main(void *arg)
{
	run_loop(arg);
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 1, i;
	pthread_t threads[MAX_THREADS];
	struct sigaction sa = { .sa_handler = on_signal };
	struct tally sum = { 0 };

	if (nthreads < 1 || nthreads > MAX_THREADS)
		return 2;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	for (i = 1; i < nthreads; i++)
		pthread_create(&threads[i], NULL, thread_main, &tallies[i]);
	run_loop(&tallies[0]);
	for (i = 1; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	for (i = 0; i < nthreads; i++) {
		sum.a += tallies[i].a;
		sum.b += tallies[i].b;
		sum.c += tallies[i].c;
		sum.total += tallies[i].total;
	}
	printf("burn_a %llu\nburn_b %llu\nburn_c %llu\ntotal %llu\n", (unsigned long long)sum.a,
	       (unsigned long long)sum.b, (unsigned long long)sum.c, (unsigned long long)sum.total);
	return 0;
}

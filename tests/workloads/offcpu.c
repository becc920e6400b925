/* A workload of known off-CPU shape for the off-CPU profile's tests and benchmark.
 *
 *   offcpu shapes          three threads block, each in its own function, until
 *                          SIGTERM/SIGINT; then prints per function the
 *                          nanoseconds it measured around its blocking calls
 *                          ("wait_sleep NS", "wait_pipe NS", "wait_mutex NS") and
 *                          their sum ("total NS"), and exits:
 *                            sleeper: run_sleep -> wait_sleep -> nanosleep 5 ms,
 *                              all the time;
 *                            reader: run_pipe -> wait_pipe -> read() of a pipe a
 *                              feeder thread writes every 5 ms, then 2 ms in
 *                              reader_rest (nanosleep): ~3 ms of 5 in wait_pipe;
 *                            waiter: run_mutex -> wait_mutex ->
 *                              pthread_mutex_lock of a mutex a holder thread
 *                              takes when the waiter is ready and keeps 2 ms
 *                              after telling it so, then 4 ms in waiter_rest:
 *                              ~2 ms of 6 in wait_mutex.
 *                          So about 100 : 60 : 33 of the threads' time, i.e.
 *                          52 / 31 / 17 % of the three functions' blocked time.
 *   offcpu sleeps N MS     prints "ready", waits for SIGUSR1, then sleeps N times
 *                          MS ms in run_sleeps -> sleep_known (nanosleep), prints
 *                          "slept NS" (measured) and exits.
 *   offcpu storm SEC PAIRS PAIRS pairs of threads (at most 256) ping-pong a byte
 *                          over two pipes each for SEC seconds (a context-switch
 *                          storm: every round trip is two blocking reads), prints
 *                          the round trips of all pairs ("round_trips N"), exits.
 *
 * Built with frame pointers and without inlining (see the Makefile), so the stacks
 * the profiler sees are exactly these functions.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static uint64_t spent_sleep, spent_pipe, spent_mutex; /* each written by one thread */
static int feed[2], handoff[2], done_pipe[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

__attribute__((noinline)) uint64_t wait_sleep(void)
{
	uint64_t t = now_ns();

	sleep_ms(5);
	return now_ns() - t;
}

__attribute__((noinline)) void run_sleep(void)
{
	while (!stop)
		spent_sleep += wait_sleep();
}

__attribute__((noinline)) uint64_t wait_pipe(void)
{
	uint64_t t = now_ns();
	char c;

	if (read(feed[0], &c, 1) != 1)
		stop = 1;
	return now_ns() - t;
}

__attribute__((noinline)) void reader_rest(void)
{
	sleep_ms(2);
}

__attribute__((noinline)) void run_pipe(void)
{
	while (!stop) {
		spent_pipe += wait_pipe();
		reader_rest();
	}
}

static void *feeder(void *arg)
{
	(void)arg;
	while (!stop) {
		sleep_ms(5);
		if (write(feed[1], "x", 1) != 1)
			break;
	}
	return NULL;
}

__attribute__((noinline)) uint64_t wait_mutex(void)
{
	uint64_t t = now_ns();

	pthread_mutex_lock(&lock);
	t = now_ns() - t;
	pthread_mutex_unlock(&lock);
	return t;
}

__attribute__((noinline)) void waiter_rest(void)
{
	sleep_ms(4);
}

/* Each round: the waiter says it is ready (done_pipe), the holder takes the lock
 * and says so (handoff), so the waiter always finds it taken and blocks until the
 * holder lets go 2 ms later. */
__attribute__((noinline)) void run_mutex(void)
{
	char c;

	while (!stop) {
		if (write(done_pipe[1], "x", 1) != 1 || read(handoff[0], &c, 1) != 1)
			break;
		spent_mutex += wait_mutex();
		waiter_rest();
	}
}

static void *holder(void *arg)
{
	char c;

	(void)arg;
	while (!stop) {
		if (read(done_pipe[0], &c, 1) != 1)
			break;
		pthread_mutex_lock(&lock);
		if (write(handoff[1], "x", 1) != 1)
			break;
		sleep_ms(2);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void *thread_sleep(void *arg)
{
	(void)arg;
	run_sleep();
	return NULL;
}

static void *thread_pipe(void *arg)
{
	(void)arg;
	run_pipe();
	return NULL;
}

static void *thread_mutex(void *arg)
{
	(void)arg;
	run_mutex();
	return NULL;
}

static int shapes(void)
{
	void *(*fns[])(void *) = { thread_sleep, thread_pipe, thread_mutex, feeder, holder };
	pthread_t t[5];
	sigset_t set;
	int i, sig;

	if (pipe(feed) || pipe(handoff) || pipe(done_pipe))
		return 1;
	/* Threads never take the signal: sigwait() in main does. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < 5; i++)
		if (pthread_create(&t[i], NULL, fns[i], NULL))
			return 1;
	sigwait(&set, &sig);
	stop = 1;
	/* Threads blocked in read() of a pipe whose writer stopped: unblock them. */
	if (write(feed[1], "x", 1) != 1 || write(handoff[1], "x", 1) != 1 ||
	    write(done_pipe[1], "x", 1) != 1)
		return 1;
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("wait_sleep %llu\nwait_pipe %llu\nwait_mutex %llu\ntotal %llu\n",
	       (unsigned long long)spent_sleep, (unsigned long long)spent_pipe,
	       (unsigned long long)spent_mutex,
	       (unsigned long long)(spent_sleep + spent_pipe + spent_mutex));
	fflush(stdout);
	_exit(0); /* the helpers may still be blocked */
}

__attribute__((noinline)) uint64_t sleep_known(unsigned ms)
{
	uint64_t t = now_ns();

	sleep_ms(ms);
	return now_ns() - t;
}

__attribute__((noinline)) uint64_t run_sleeps(unsigned n, unsigned ms)
{
	uint64_t total = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		total += sleep_known(ms);
	return total;
}

static int sleeps(unsigned n, unsigned ms)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	printf("slept %llu\n", (unsigned long long)run_sleeps(n, ms));
	return 0;
}

#define MAX_PAIRS 256

struct pair {
	int ping[2], pong[2];
	uint64_t end, round_trips;
	pthread_t pinger, ponger;
};

static void *pong_thread(void *arg)
{
	struct pair *p = arg;
	char c;

	while (read(p->ping[0], &c, 1) == 1 && c)
		if (write(p->pong[1], &c, 1) != 1)
			break;
	return NULL;
}

static void *ping_thread(void *arg)
{
	struct pair *p = arg;
	char c = 1;

	while (now_ns() < p->end) {
		if (write(p->ping[1], &c, 1) != 1 || read(p->pong[0], &c, 1) != 1)
			break;
		p->round_trips++;
	}
	c = 0;
	if (write(p->ping[1], &c, 1) != 1)
		return NULL;
	return NULL;
}

static int storm(unsigned seconds, unsigned npairs)
{
	static struct pair pairs[MAX_PAIRS];
	uint64_t end = now_ns() + (uint64_t)seconds * 1000000000ull, n = 0;
	unsigned i;

	if (!npairs || npairs > MAX_PAIRS)
		return 2;
	for (i = 0; i < npairs; i++) {
		pairs[i].end = end;
		if (pipe(pairs[i].ping) || pipe(pairs[i].pong) ||
		    pthread_create(&pairs[i].ponger, NULL, pong_thread, &pairs[i]) ||
		    pthread_create(&pairs[i].pinger, NULL, ping_thread, &pairs[i]))
			return 1;
	}
	for (i = 0; i < npairs; i++) {
		pthread_join(pairs[i].pinger, NULL);
		pthread_join(pairs[i].ponger, NULL);
		n += pairs[i].round_trips;
	}
	printf("round_trips %llu\n", (unsigned long long)n);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (argc == 2 && strcmp(argv[1], "shapes") == 0)
		return shapes();
	if (argc == 4 && strcmp(argv[1], "sleeps") == 0)
		return sleeps((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "storm") == 0)
		return storm((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
	fprintf(stderr, "usage: offcpu shapes | sleeps N MS | storm SEC PAIRS\n");
	return 2;
}

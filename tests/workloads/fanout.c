/* A workload of many distinct stacks, for the tests of full stack maps.
 *
 *   fanout BITS
 *
 * One thread walks every path of a binary call tree BITS levels deep (1 to 20), over
 * and over: at level i, step() calls left() or right() as bit i of the path number
 * says, both call step() one level down, and at the bottom leaf() burns a few
 * microseconds. Built with frame pointers and without inlining or sibling calls
 * (see the Makefile), so each of the 2^BITS paths is a user stack of its own and a
 * profiler sees up to 2^BITS distinct stacks, each about as often as the others.
 * On SIGTERM/SIGINT it prints "paths N" (distinct paths walked) and "rounds R"
 * (complete walks of all of them) to stdout, then exits.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile sig_atomic_t stop;
static volatile uint64_t sink;
static unsigned bits;

__attribute__((noinline)) void leaf(unsigned path)
{
	unsigned i;

	for (i = 0; i < 4000; i++)
		sink += (uint64_t)(i ^ path) * 2654435761u;
}

__attribute__((noinline)) void step(unsigned level, unsigned path);

__attribute__((noinline)) void left(unsigned level, unsigned path)
{
	step(level + 1, path);
}

__attribute__((noinline)) void right(unsigned level, unsigned path)
{
	step(level + 1, path);
}

__attribute__((noinline)) void step(unsigned level, unsigned path)
{
	if (level == bits)
		leaf(path);
	else if (path >> level & 1)
		right(level, path);
	else
		left(level, path);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned long long rounds = 0, walked = 0;
	unsigned path, npaths;

	bits = argc > 1 ? (unsigned)atoi(argv[1]) : 12;
	if (bits < 1 || bits > 20)
		return 2;
	npaths = 1u << bits;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	while (!stop) {
		for (path = 0; path < npaths && !stop; path++)
			step(0, path);
		walked = rounds ? npaths : path;
		rounds += path == npaths;
	}
	printf("paths %llu\nrounds %llu\n", walked, rounds);
	return 0;
}

/* A JIT of known shape for the perf map tests: generates a tiny busy loop (machine
 * code written by hand, with a frame pointer prologue so the caller stays on the
 * stack) in an anonymous executable mapping and names it in its own perf map.
 *
 *   jitmap GO_FILE SECONDS GAP MODE [NAME]
 *
 * Waits for GO_FILE to exist (the test creates it once the agent samples), then:
 * phase_one() calls the code for SECONDS; nothing for GAP seconds (so every
 * window holding phase one's samples ends before the map changes); the code is
 * written anew in the same range, a new line for that range appended to the map,
 * and phase_two() calls it for SECONDS. MODE:
 *   replace  names the code "jit_phase_one", then "jit_phase_two" (both phases)
 *   name     names it NAME, phase one only
 *   none     writes no map line (the test may put its own file there), phase one only
 * Prints "code 0x<start> <size>" at start and "done" at the end, then waits (60 s at
 * most) for GO_FILE to be removed, so the test can end the agent while the process
 * still lives, removes its map and exits.
 * x86-64 only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "jitcode.h"

#define NOINLINE __attribute__((noinline))

static char map_path[64];
static void *region;
static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void name_code(const char *name)
{
	FILE *f = fopen(map_path, "a");

	if (!f) {
		perror(map_path);
		exit(1);
	}
	fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)region, sizeof(jitcode_loop), name);
	fclose(f);
}

static NOINLINE void run(double seconds)
{
	jitcode_fn fn = (jitcode_fn)region;
	double end = now() + seconds;

	while (now() < end)
		sink += fn(100000);
}

static NOINLINE void phase_one(double seconds)
{
	run(seconds);
}

static NOINLINE void phase_two(double seconds)
{
	run(seconds);
}

int main(int argc, char **argv)
{
	double seconds, gap, deadline;
	const char *mode;

	if (argc < 5) {
		fprintf(stderr, "usage: jitmap GO_FILE SECONDS GAP replace|name|none [NAME]\n");
		return 2;
	}
	seconds = atof(argv[2]);
	gap = atof(argv[3]);
	mode = argv[4];
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	region = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	jitcode_write(region);
	if (strcmp(mode, "replace") == 0)
		name_code("jit_phase_one");
	else if (strcmp(mode, "name") == 0 && argc > 5)
		name_code(argv[5]);
	printf("code 0x%lx %zu\n", (unsigned long)(uintptr_t)region, sizeof(jitcode_loop));
	fflush(stdout);
	for (deadline = now() + 60; access(argv[1], F_OK); usleep(10000))
		if (now() > deadline)
			return 1;
	phase_one(seconds);
	if (strcmp(mode, "replace") == 0) {
		usleep((useconds_t)(gap * 1e6));
		jitcode_write(region);
		name_code("jit_phase_two");
		phase_two(seconds);
	}
	printf("done\n");
	fflush(stdout);
	for (deadline = now() + 60; !access(argv[1], F_OK) && now() < deadline; usleep(10000))
		;
	if (strcmp(mode, "none") != 0)
		unlink(map_path);
	return 0;
}

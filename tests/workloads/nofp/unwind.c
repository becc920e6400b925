/* A workload of known shape without frame pointers anywhere, for the tests of
 * native unwinding from CFI (tests/integration/test_agent_unwind.c).
 *
 *   unwind              loop until SIGTERM/SIGINT, then print the truth
 *   unwind once MS      loop until MS ms of CPU are used, then exit 0
 *   unwind exec MS BIN  loop for MS ms of CPU, then fork a child that execs
 *                       "BIN MS", wait for it, and exec "BIN MS" in place
 *   unwind late MS LIB  loop for MS ms of CPU, then dlopen LIB (a copy of
 *                       libunw.so) and burn MS ms more in main -> run_late ->
 *                       its lib_c -> lib_spin: code mapped long after start
 *   unwind jitlate MS LIB  run MS ms of CPU in anonymous executable memory
 *                       (jitcode.h; main -> run_jit -> the code), then as
 *                       "late" for 3 x MS ms: the JIT code makes the agent
 *                       re-read unchanged mappings just before the dlopen.
 *                       x86-64 only (exit 3 elsewhere).
 *
 * One thread loops main -> run_shapes -> each of
 *   burn_a -> deep x 21 (a recursion 20 levels deep) -> a_spin      5 ms, 50 %
 *   burn_b -> lib_c (libunw.so) -> lib_spin                          3 ms, 30 %
 *   cpp_entry -> cpp::d<unsigned> (C++, unwcpp.cpp)                  2 ms, 20 %
 * (each time scaled by a pseudo-random 0.75 to 1.25, burn.h's burn_jitter)
 * and measures the thread CPU time each branch really used (around the call, so
 * it is the branch's inclusive time). On SIGTERM/SIGINT it prints "burn_a NS",
 * "burn_b NS", "cpp_entry NS" and "total NS" lines to stdout and exits 0.
 *
 * Built -O2 -fomit-frame-pointer -fno-inline -fno-optimize-sibling-calls, with
 * the .so and the C++ object the same (Makefile, "no-frame-pointer workloads"):
 * only CFI (.eh_frame) can unwind it, and every function of the chain keeps its
 * frame. A sample's stack is therefore exactly _start -> __libc_start_main ->
 * __libc_start_call_main -> main -> run_shapes -> one of the chains above.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../jitcode.h"
#include "burn.h"

#define DEPTH 20 /* deep() calls below burn_a's first deep() */

uint64_t lib_c(uint64_t ns);	 /* libunw.so */
uint64_t cpp_entry(uint64_t ns); /* unwcpp.cpp */

static volatile sig_atomic_t stop;
static volatile uint64_t sink;

struct tally {
	uint64_t a, b, c, total;
};

__attribute__((noipa)) static uint64_t a_spin(uint64_t ns)
{
	uint64_t start = burn_thread_ns(), now;
	unsigned i;

	do {
		for (i = 0; i < BURN_CHUNK; i++)
			sink += i * 2654435761u;
		now = burn_thread_ns();
	} while (now - start < ns);
	return now - start;
}

/* The addition after the call keeps each level a real frame. */
__attribute__((noipa)) static uint64_t deep(int n, uint64_t ns)
{
	if (n == 0)
		return a_spin(ns);
	return deep(n - 1, ns) + (sink & 0);
}

__attribute__((noipa)) static uint64_t burn_a(uint64_t ns)
{
	return deep(DEPTH, ns) + (sink & 0);
}

__attribute__((noipa)) static uint64_t burn_b(uint64_t ns)
{
	return lib_c(ns) + (sink & 0);
}

/* Burns limit_ns of CPU in the lib_c of a library loaded only now. */
__attribute__((noipa)) static int run_late(const char *lib, uint64_t limit_ns)
{
	uint64_t (*late_c)(uint64_t);
	uint64_t used = 0;
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return -1;
	*(void **)&late_c = dlsym(h, "lib_c");
	if (!late_c)
		return -1;
	while (!stop && used < limit_ns)
		used += late_c(3000000);
	return (int)(sink & 0);
}

/* Burns limit_ns of CPU in code no file backs (jitcode.h). */
__attribute__((noipa)) static int run_jit(uint64_t limit_ns)
{
	uint64_t start = burn_thread_ns();
	void *region;
	jitcode_fn fn;

	if (!JITCODE_AVAILABLE)
		return 3;
	region = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED)
		return 1;
	jitcode_write(region);
	fn = (jitcode_fn)region;
	while (!stop && burn_thread_ns() - start < limit_ns)
		sink += fn(100000);
	return 0;
}

/* Runs rounds until stop is set or limit_ns of CPU is used (0: no limit). */
__attribute__((noipa)) static void run_shapes(struct tally *t, uint64_t limit_ns)
{
	uint64_t start = burn_thread_ns(), t0;
	uint32_t seed = 1;

	while (!stop && (!limit_ns || burn_thread_ns() - start < limit_ns)) {
		t0 = burn_thread_ns();
		burn_a(burn_jitter(5000000, &seed));
		t->a += burn_thread_ns() - t0;
		t0 = burn_thread_ns();
		burn_b(burn_jitter(3000000, &seed));
		t->b += burn_thread_ns() - t0;
		t0 = burn_thread_ns();
		cpp_entry(burn_jitter(2000000, &seed));
		t->c += burn_thread_ns() - t0;
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
	uint64_t limit_ns = 0;
	pid_t child;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (argc > 2 && (strcmp(argv[1], "once") == 0 || strcmp(argv[1], "exec") == 0 ||
			 strcmp(argv[1], "late") == 0 || strcmp(argv[1], "jitlate") == 0))
		limit_ns = strtoull(argv[2], NULL, 10) * 1000000ull;
	else if (argc > 1)
		return 2;
	if ((strcmp(argc > 1 ? argv[1] : "", "exec") == 0 ||
	     strcmp(argc > 1 ? argv[1] : "", "late") == 0 ||
	     strcmp(argc > 1 ? argv[1] : "", "jitlate") == 0) &&
	    argc != 4)
		return 2;
	if (argc > 1 && strcmp(argv[1], "jitlate") == 0) {
		int err = run_jit(limit_ns);

		return err ? err : run_late(argv[3], 3 * limit_ns) ? 1 : 0;
	}
	run_shapes(&t, limit_ns);
	if (argc > 1 && strcmp(argv[1], "late") == 0)
		return run_late(argv[3], limit_ns) ? 1 : 0;
	if (argc > 1 && strcmp(argv[1], "exec") == 0) {
		char *next[] = { argv[3], argv[2], NULL };
		int status;

		child = fork();
		if (child < 0)
			return 1;
		if (child == 0) {
			execv(next[0], next);
			_exit(127);
		}
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return 1;
		execv(next[0], next);
		return 127;
	}
	if (argc == 1)
		printf("burn_a %llu\nburn_b %llu\ncpp_entry %llu\ntotal %llu\n",
		       (unsigned long long)t.a, (unsigned long long)t.b, (unsigned long long)t.c,
		       (unsigned long long)t.total);
	return 0;
}

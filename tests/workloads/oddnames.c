/* A workload whose native functions are named like other kinds' frame text
 * (common/frame.h), for the test that the agent keeps a frame's kind on its way to
 * the store.
 *
 *   oddnames
 *
 * One thread loops main -> run_loop -> each of four functions in turn, each
 * burning 2 ms of the thread's CPU time in spin(). Their symbol names (asm labels:
 * the assembler takes a quoted name) read as a Python frame with a line, a Python
 * frame at function granularity, a kernel frame and a JIT frame:
 *
 *   "handler (app.py:12)"  "view (app.py)"  "poll_[k]"  "stub_[j]"
 *
 * Runs until SIGTERM or SIGINT. Built with frame pointers and without inlining
 * (see the Makefile), so these are the frames the profiler sees.
 */
#include <signal.h>
#include <stdint.h>
#include <time.h>

static volatile sig_atomic_t stop;
static volatile uint64_t sink;

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Spins until the thread has used `ns` more CPU time. */
__attribute__((noinline)) static void spin(uint64_t ns)
{
	uint64_t start = thread_ns();
	unsigned i;

	do {
		for (i = 0; i < 2000; i++)
			sink += i * 2654435761u;
	} while (thread_ns() - start < ns);
}

void py_line(void) __asm__("\"handler (app.py:12)\"");
void py_function(void) __asm__("\"view (app.py)\"");
void kernel_like(void) __asm__("\"poll_[k]\"");
void jit_like(void) __asm__("\"stub_[j]\"");

__attribute__((noinline)) void py_line(void)
{
	spin(2000000);
}

__attribute__((noinline)) void py_function(void)
{
	spin(2000000);
}

__attribute__((noinline)) void kernel_like(void)
{
	spin(2000000);
}

__attribute__((noinline)) void jit_like(void)
{
	spin(2000000);
}

__attribute__((noinline)) static void run_loop(void)
{
	while (!stop) {
		py_line();
		py_function();
		kernel_like();
		jit_like();
	}
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	run_loop();
	return 0;
}

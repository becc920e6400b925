/* The shared library of the no-frame-pointer workload (unwind.c): lib_c burns the
 * CPU time it is asked for in lib_spin, so the branch run_shapes -> burn_b -> lib_c
 * -> lib_spin crosses from the executable into this .so. Built -O2
 * -fomit-frame-pointer like the executable (see the Makefile).
 */
#include <stdint.h>

#include "burn.h"

uint64_t lib_c(uint64_t ns);

static volatile uint64_t lib_sink;

__attribute__((noipa)) static uint64_t lib_spin(uint64_t ns)
{
	uint64_t start = burn_thread_ns(), now;
	unsigned i;

	do {
		for (i = 0; i < BURN_CHUNK; i++)
			lib_sink += i * 2654435761u;
		now = burn_thread_ns();
	} while (now - start < ns);
	return now - start;
}

/* Returns the CPU time it used. */
__attribute__((noipa)) uint64_t lib_c(uint64_t ns)
{
	return lib_spin(ns) + 0 * lib_sink;
}

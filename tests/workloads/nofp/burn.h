/* What the no-frame-pointer workloads (unwind.c, unwind_libc.c, libunw.c, unwcpp.cpp)
 * share: the thread's CPU clock and a spin loop that burns a given amount of it.
 * Each module includes its own static copy, so the spin frame a sample lands in is
 * always the module's own (the stacks stay exactly the chain the workload knows).
 */
#ifndef SMOLDER_WORKLOAD_BURN_H
#define SMOLDER_WORKLOAD_BURN_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline uint64_t burn_thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The pure-arithmetic part between two clock reads: ~100 µs, so that samples in
 * the vDSO's clock_gettime and the syscall it falls back to for a thread clock are
 * about 0.2 % of the spin's, not 1 %. */
#define BURN_CHUNK 100000u

/* ns scaled by a pseudo-random factor in [0.75, 1.25): rounds of varying length,
 * so that a sampler at a fixed frequency cannot stay in phase with them (a
 * 10 ms round under perf's 99 Hz, both counted in thread CPU time, showed one
 * branch at half its share). The shares stay those of the base durations. */
static inline uint64_t burn_jitter(uint64_t ns, uint32_t *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return ns * (768u + ((*seed >> 16) & 511u)) / 1024u;
}

#ifdef __cplusplus
}
#endif

#endif
